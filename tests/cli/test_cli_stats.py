"""busca stats: no empty values, hybrid's fusion as it applies, the document count without an
index (issue 10, item 13)."""

from __future__ import annotations

import json

from conftest import write_jsonl
from dense_fakes import DOCS

ROWS = [{"url": url, "title": title, "text": text} for url, title, text in DOCS]


def lines_by_method(stdout: str) -> dict[str, str]:
    return {line.split()[0]: line for line in stdout.splitlines()}


def test_stats_shows_no_empty_value_and_hybrid_as_it_fuses(run, tmp_path, fake):
    assert run("add", str(write_jsonl(tmp_path / "docs.jsonl", ROWS))).exit_code == 0
    built = run("index", "-q", "--analyzer", "simple", "--dense", "fake")
    assert built.exit_code == 0, built.output
    result = run("stats")
    assert result.exit_code == 0
    lines = lines_by_method(result.stdout)
    assert "analyzer simple," in lines["bm25"]
    assert "analyzer_version" not in lines["bm25"]  # simple has no stemmer version
    # "fake" has no measured dense share: 0.5 (docs/dense.md, "Fusion across models")
    assert lines["hybrid"].endswith("(fusion minmax, window 100, weights bm25=0.5,dense=0.5)")
    assert "None" not in result.stdout and "{}" not in result.stdout
    assert ", ," not in result.stdout and " ," not in result.stdout
    assert "max_length" not in lines["dense"]  # None for the fake encoder: left out


def test_stats_shows_a_stored_floor(run, home, tmp_path):
    from busca.index import open_home
    assert run("add", str(write_jsonl(tmp_path / "docs.jsonl", ROWS))).exit_code == 0
    assert run("index", "-q").exit_code == 0
    with open_home(home) as store:
        store.set_floors({"bm25": 0.41})
    lines = lines_by_method(run("stats").stdout)
    assert lines["bm25"].endswith("floor 0.41)") and "floor" not in lines["tfidf"]


def test_stats_without_an_index_shows_the_document_count(run, tmp_path):
    assert run("add", str(write_jsonl(tmp_path / "docs.jsonl", ROWS))).exit_code == 0
    result = run("stats")
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[0].split() == ["documents", "4"]
    assert 'no index yet: run "busca index"' in result.stdout
    assert json.loads(run("stats", "--json").stdout) == {"documents": 4, "index": None}


def test_stats_of_a_home_without_documents_names_crawl_or_add(run, tmp_path):
    """A home holding no document (one a crawl of a site that listed none, or `busca log
    off`, made) said 'no index yet: run "busca index"', which then failed with "nothing
    to index"."""
    assert run("log", "off").exit_code == 0
    result = run("stats")
    assert result.exit_code == 0 and result.stdout.splitlines()[0].split() == ["documents", "0"]
    assert "busca index" not in result.stdout
    assert 'no documents yet: run "busca crawl URL" or "busca add FILE"' in result.stdout


def test_stats_json_counts_the_documents_stored_since_the_build(run, home, tmp_path):
    """`busca stats --json`, GET /api/stats (the engine) and Corpus.stats() carry what the
    text form says on stderr: the documents added or changed, and removed, since the build."""
    import busca
    from busca.serve.engine import Engine

    assert run("add", str(write_jsonl(tmp_path / "docs.jsonl", ROWS))).exit_code == 0
    assert run("index", "-q", "--methods", "bm25").exit_code == 0
    assert json.loads(run("stats", "--json").stdout)["pending"] == {"changed": 0, "removed": 0}
    new = [{"url": "https://novo.example/a", "title": "Novo", "text": "Um documento novo."},
           {**ROWS[0], "text": ROWS[0]["text"] + " Mudou."}]
    assert run("add", str(write_jsonl(tmp_path / "more.jsonl", new))).exit_code == 0
    with busca.open(home) as corpus:
        corpus.home.delete(ROWS[1]["url"])
        python = corpus.stats()
    text = run("stats")
    assert "2 document(s) added or changed, 1 removed since this index" in text.stderr
    printed = json.loads(run("stats", "--json").stdout)
    assert printed["pending"] == {"changed": 2, "removed": 1}
    assert python == printed == Engine(home, warm=False).stats()


def test_a_document_of_blanks_alone_is_not_pending_forever(run, tmp_path):
    """A text of blanks alone has no word to chunk: it is stored as the empty text, so
    `pending` does not count it after every build (it did, on both stores)."""
    blank = {"url": "https://vazio.example/", "title": "Vazio", "text": "  \n\t "}
    assert run("add", str(write_jsonl(tmp_path / "docs.jsonl", [*ROWS, blank]))).exit_code == 0
    assert run("index", "-q", "--methods", "bm25").exit_code == 0
    assert json.loads(run("stats", "--json").stdout)["pending"] == {"changed": 0, "removed": 0}
