"""The eval report (search/eval/report.py): text from the golden set — ids, questions, tag
values — stays inside its table cell, in Markdown and on the terminal."""

from busca.search.eval.golden import Golden, Question
from busca.search.eval.metrics import Outcome, default_metrics
from busca.search.eval.report import render_markdown, render_text
from busca.search.eval.summary import summarize


def o(qid, rank):
    return Outcome(qid, (rank,), (1.0,), (1.0,), 0.5, 0.5)


QUESTIONS = (
    Question("m|1", "gato | preto\nnova  linha", trecho="x", tags={"tipo": "a|b"}),
    Question("m2", "cão\r\n\tcarteiro", trecho="x", tags={"tipo": "c\nd"}),
)
EV = summarize(Golden("g.json", "json", QUESTIONS),
               {"antes": [o("m|1", 1), o("m2", 4)], "depois": [o("m|1", 2), o("m2", 1)]},
               default_metrics())


def _cells(row: str) -> list[str]:
    """A Markdown table row split on its unescaped pipes, as GitHub does."""
    return [c.strip() for c in row.replace(r"\|", "\0").split("|")[1:-1]]


def test_markdown_cells_escape_pipes_and_hold_one_line():
    lines = render_markdown(EV).splitlines()
    rows = [line for line in lines if line.startswith("|")]
    widths = {len(_cells(row)) for row in rows if "question" in row or "m2" in row
              or "m\\|1" in row}
    assert widths == {4}  # id, question, antes, depois: no cell leaks into the next
    assert r"| m\|1 | gato \| preto nova linha | 1 | 2 |" in lines
    assert "| m2 | cão carteiro | 4 | 1 |" in lines
    assert any(line.startswith(r"| a\|b | 1 | antes |") for line in lines)
    assert any(line.startswith("| c d | 1 | antes |") for line in lines)
    assert "- fixed: m2: cão carteiro" in lines  # m2: rank 4 -> 1, a list item, one line


def test_terminal_table_prints_each_question_on_one_line():
    lines = render_text(EV).splitlines()
    start = lines.index("== First relevant rank per question")
    table = lines[start + 1:start + 4]
    assert table[0].split() == ["id", "question", "antes", "depois"]
    assert table[1].split() == ["m|1", "gato", "|", "preto", "nova", "linha", "1", "2"]
    assert table[2].split() == ["m2", "cão", "carteiro", "4", "1"]
    assert any(line.split()[:3] == ["c", "d", "1"] for line in lines)  # tag value "c\nd"
    assert not any(line.startswith("d ") for line in lines)
    assert "  fixed: m2: cão carteiro" in lines
