"""The eval report (search/eval/report.py): text from the golden set — ids, questions, tag
values — stays inside its table cell, in Markdown and on the terminal."""

import pytest

from busca.search.eval.golden import Golden, Question
from busca.search.eval.metrics import Outcome, default_metrics
from busca.search.eval.report import render_markdown, render_text, write_markdown
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


def test_the_header_says_when_relevance_was_judged_per_document():
    """--per-doc (r@1 0.590 against 0.372 on the handbook) showed only in --json."""
    per_doc = summarize(EV.golden, EV.outcomes, default_metrics(), info={"per_doc": True})
    windows = summarize(EV.golden, EV.outcomes, default_metrics(), info={"per_doc": False})
    said = "relevance judged per document (--per-doc)"
    for render in (render_text, render_markdown):
        header = render(per_doc).split("\n\n")[0 if render is render_text else 1]
        assert said in header, header
        assert said not in render(windows) and said not in render(EV)
    assert any(line.startswith(f"- {said}: each document ranked at its best window")
               for line in render_markdown(per_doc).splitlines())


def test_a_report_is_never_written_into_a_folder_that_does_not_exist(tmp_path):
    """--report /nonexistent/r.md made the folder; busca misses --golden refuses."""
    with pytest.raises(FileNotFoundError) as e:
        write_markdown(EV, tmp_path / "nope" / "r.md")
    assert e.value.strerror == f"the folder {tmp_path / 'nope'} does not exist"
    assert list(tmp_path.iterdir()) == []
    written = write_markdown(EV, tmp_path / "r.md")
    assert written.read_text(encoding="utf-8") == render_markdown(EV)


def test_charts_are_never_drawn_into_a_folder_made_in_one_that_does_not_exist(tmp_path):
    pytest.importorskip("matplotlib")
    from busca.search.eval.plots import write_plots

    with pytest.raises(FileNotFoundError, match="the folder .*nope does not exist"):
        write_plots(EV, tmp_path / "nope" / "charts")
    assert list(tmp_path.iterdir()) == []
    assert [p.name for p in write_plots(EV, tmp_path / "charts")] == ["recall_at_k.png"]


def _full_disk(monkeypatch, part: str) -> None:
    """Writing a file whose name holds `part` truncates it and fails, as on a full disk
    (the one failure a test cannot make for real)."""
    import errno
    from pathlib import Path

    real = Path.write_text

    def write_text(self, text, *args, **kwargs):
        if part in self.name:
            real(self, "", *args, **kwargs)
            raise OSError(errno.ENOSPC, "No space left on device", str(self))
        return real(self, text, *args, **kwargs)

    monkeypatch.setattr(Path, "write_text", write_text)


def test_a_report_that_cannot_be_written_leaves_the_previous_one_whole(tmp_path, monkeypatch):
    """--report over last week's report truncated it first: a full disk lost both."""
    path = write_markdown(EV, tmp_path / "r.md")
    before = path.read_text(encoding="utf-8")
    _full_disk(monkeypatch, "r.md")
    with pytest.raises(OSError):
        write_markdown(EV, path)
    assert path.read_text(encoding="utf-8") == before
    assert [p.name for p in tmp_path.iterdir()] == ["r.md"]


def test_markdown_shows_html_and_link_syntax_in_questions_as_text():
    """A question is free text (`busca misses --golden` drafts a golden set from what
    visitors of busca serve typed): in a shared report rendered by a Markdown tool it was a
    live <script> tag, <img onerror=…> or [link](javascript:…). Escaped with backslashes,
    it renders as the text it was; a `|` still stays in its cell."""
    import re

    nasty = ("<script>alert(1)</script> <img src=x onerror=alert(1)>"
             " [clique](javascript:alert(1)) ![i](http://x/i.png) C:\\<b> ação 🎉 | fim")
    questions = (Question("a<b>", nasty, trecho="x", url="javascript:alert(1)"),
                 Question("m2", "cão", trecho="x"))
    ev = summarize(Golden("g.json", "json", questions),
                   {"antes": [o("a<b>", 1), o("m2", 4)], "depois": [o("a<b>", 4), o("m2", 1)]},
                   default_metrics())
    md = render_markdown(ev)
    escaped = (r"\<script>alert(1)\</script> \<img src=x onerror=alert(1)>"
               r" \[clique\](javascript:alert(1)) !\[i\](http://x/i.png) C:\\\<b> ação 🎉")
    assert f"| a\\<b> | {escaped} \\| fim | 1 | 4 |" in md.splitlines()
    assert f"- broken: a\\<b>: {escaped} | fim" in md.splitlines()
    live = re.compile(r"(?<!\\)(?:\\\\)*[<\[]")  # a < or [ after no escaping backslash
    assert not [line for line in md.splitlines() if "ação" in line and live.search(line)]
    assert nasty.replace("\n", " ") in render_text(ev)  # the terminal shows it as typed


def test_terminal_columns_line_up_by_what_the_terminal_shows():
    """Padding counted characters: an id typed with combining accents (a Mac's "ação") and a
    question with a wide character (🔗, 日本) pushed every column after them out of line."""
    import unicodedata
    questions = (Question(unicodedata.normalize("NFD", "ação-1"), "Qual o prazo?", trecho="x"),
                 Question("q2", "O link 🔗 diz 日本?", trecho="x"),
                 Question("q3", "Tem juros?", trecho="x"))
    ev = summarize(Golden("g.json", "json", questions),
                   {"bm25": [o("ação-1", 1), o("q2", 2), o("q3", 3)]}, default_metrics())
    lines = render_text(ev).splitlines()
    start = lines.index("== First relevant rank per question")
    rows = lines[start + 1:start + 5]

    def shown(text):  # the columns a terminal gives `text`
        return sum(0 if unicodedata.combining(c) else
                   2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)

    columns = {shown(row[:row.rindex(" ") + 1]) for row in rows}  # where the last cell starts
    assert len(columns) == 1, rows
