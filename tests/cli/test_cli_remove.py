"""`busca remove`: one named document out of the store (a file by its path, a URL in any
spelling), pending in `busca stats` until `busca index` drops its chunks."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from conftest import write_jsonl
from test_fixtures_server import article

from busca.crawler.store import DOC_STATE
from busca.fixtures.server import FixtureSite
from busca.index.home.documents import Store

DOCS = [{"url": "https://site.example/notícias/ação-retirada", "title": "Retirada",
         "text": "O ornitorrinco bota ovos e amamenta os filhotes."},
        {"url": "https://site.example/blog/prazo", "title": "Prazo",
         "text": "O prazo de reembolso do curso é de sete dias."},
        {"url": "https://site.example/blog/bolsas", "title": "Bolsas",
         "text": "As bolsas de pesquisa pagam os alunos de engenharia."},
        {"url": "doc-7", "title": "Sete", "text": "A equidna também bota ovos."}]


def _home(run, tmp_path, monkeypatch):
    """A home with DOCS and two files of notas/ (added by relative path), indexed."""
    (tmp_path / "notas").mkdir()
    (tmp_path / "notas" / "rascunho.md").write_text(
        "# Rascunho\n\nDados pessoais do ornitorrinco: telefone e endereço.", encoding="utf-8")
    (tmp_path / "notas" / "ovos.txt").write_text("Quem bota ovos? O ornitorrinco.",
                                                 encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    assert run("add", "notas", str(write_jsonl(tmp_path / "docs.jsonl", DOCS))).exit_code == 0
    assert run("index", "-q", "--methods", "bm25").exit_code == 0


def _urls(run, question: str) -> list[str]:
    result = run("search", question, "--json", "-k", "10", "--method", "bm25")
    assert result.exit_code == 0, result.output
    return [json.loads(line)["url"] for line in result.stdout.splitlines()]


def test_a_removed_file_and_url_are_pending_then_gone_from_the_index(run, home, tmp_path,
                                                                       monkeypatch):
    _home(run, tmp_path, monkeypatch)
    draft = (tmp_path / "notas" / "rascunho.md").resolve().as_uri()
    assert draft in _urls(run, "ornitorrinco") and DOCS[0]["url"] in _urls(run, "ornitorrinco")
    # the file by the path it was added with, the URL in another spelling (escaped, lower case)
    result = run("remove", "notas/rascunho.md",
                 "https://site.example/not%c3%adcias/a%c3%a7%c3%a3o-retirada")
    assert result.exit_code == 0, result.output
    assert result.stdout == (f"2 removed; 4 documents in {home} (run busca index to drop"
                             " them from the index)\n")
    with Store(home) as store:
        assert {draft, DOCS[0]["url"]}.isdisjoint(store.hashes()) and store.count() == 4
    stats = json.loads(run("stats", "--json").stdout)
    assert stats["pending"] == {"changed": 0, "removed": 2} and stats["documents"] == 6
    # until then a search leaves them out, says so on stderr, and ranks the rest
    pending = run("search", "ornitorrinco", "--json", "-k", "10", "--method", "bm25")
    assert pending.exit_code == 0, pending.output
    assert [json.loads(line)["url"] for line in pending.stdout.splitlines()] == [
        (tmp_path / "notas" / "ovos.txt").resolve().as_uri()]
    assert pending.stderr == ("note: left out 2 documents removed or changed since the index"
                              " was built (run busca index to search the documents as they"
                              " are now)\n")
    gone = run("search", "amamenta filhotes", "--method", "bm25")  # only the removed URL's words
    assert gone.exit_code == 3 and gone.stdout == "" and "run busca index" in gone.stderr
    assert "amamenta" not in gone.output and "Traceback" not in gone.output
    assert run("index", "-q").exit_code == 0
    found = _urls(run, "ornitorrinco ovos")
    assert found and draft not in found and DOCS[0]["url"] not in found
    stats = json.loads(run("stats", "--json").stdout)
    assert stats["pending"] == {"changed": 0, "removed": 0} and stats["documents"] == 4


def test_no_stored_id_is_a_one_line_error_naming_them(run, home, tmp_path, monkeypatch):
    _home(run, tmp_path, monkeypatch)
    result = run("remove", "https://site.example/nunca", "notas/sumiu.md")
    assert result.exit_code == 1 and result.stdout == ""
    error = result.stderr.strip()
    assert len(error.splitlines()) == 1 and "Traceback" not in result.output
    assert "'https://site.example/nunca', 'notas/sumiu.md'" in error
    assert "busca search --json" in error and "--prefix" in error
    with Store(home) as store:
        assert store.count() == 6


def test_an_id_not_stored_beside_one_that_is_is_a_note(run, home, tmp_path, monkeypatch):
    _home(run, tmp_path, monkeypatch)
    result = run("remove", "doc-7", "doc-8", "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == {"deleted": 1, "removed": ["doc-7"],
                                         "missing": ["doc-8"], "documents": 5}
    assert "note: no document stored under 'doc-8'" in result.stderr


def test_prefix_removes_a_site_section_and_a_folder(run, home, tmp_path, monkeypatch):
    _home(run, tmp_path, monkeypatch)
    section = run("remove", "--prefix", "https://site.example/blog/", "--json")
    assert section.exit_code == 0, section.output
    assert sorted(json.loads(section.stdout)["removed"]) == [DOCS[2]["url"], DOCS[1]["url"]]
    folder = run("remove", "--prefix", "notas", "--json")  # the folder, as it was added
    assert json.loads(folder.stdout)["deleted"] == 2
    with Store(home) as store:
        assert sorted(store.hashes()) == sorted([DOCS[0]["url"], "doc-7"])
    # a prefix in another spelling of the URL
    spelled = run("remove", "--prefix", "https://site.example/not%C3%ADcias/")
    assert spelled.exit_code == 0 and spelled.stdout.startswith("1 removed; 1 document")


def test_a_prefix_that_names_everything_is_refused(run, home, tmp_path, monkeypatch):
    _home(run, tmp_path, monkeypatch)
    for prefix, said in (("", "non-empty"), ("https://", "names every document"),
                         ("file:///", "names every document"), ("/", "root folder")):
        result = run("remove", "--prefix", prefix)
        assert result.exit_code == 1 and said in result.stderr, (prefix, result.output)
    with Store(home) as store:
        assert store.count() == 6


def test_a_removed_page_loses_its_crawl_state_and_the_next_crawl_fetches_it(run, home):
    """The crawl state kept for a removed URL must not outlive it (a crawl telling the page
    unchanged from it); the site still lists it, so the next crawl stores it again."""
    with FixtureSite([article(1, slug="ação-retirada"), article(2)]) as site:
        assert run("crawl", site.url, "--rate", "500").exit_code == 0
        removed = site.url + "ação-retirada/"  # stored as …/a%C3%A7%C3%A3o-retirada/
        with Store(home) as store:
            stored = next(u for u in store.hashes() if "retirada" in u)
            assert stored != removed and store.get_meta(DOC_STATE + stored) is not None
        assert run("remove", removed).exit_code == 0
        with Store(home) as store:
            assert store.get(stored) is None and store.get_meta(DOC_STATE + stored) is None
        again = run("crawl", site.url, "--rate", "500", "--json")
    report = json.loads(again.stdout)
    assert (report["added"], report["unchanged"]) == (1, 1)


def test_removing_a_large_section_shows_progress_on_stderr(run, home, tmp_path):
    """Found at 50,000 documents: `busca remove --prefix` of a section of 8,333 took 5.4 s
    without a word on stderr. Every 1,000 documents removed is a progress report (of the
    total), the summary stays alone on stdout."""
    from busca.corpus.documents import PROGRESS_EVERY

    n = PROGRESS_EVERY + 3
    write_jsonl(tmp_path / "many.jsonl", [
        {"url": f"https://site.example/ajuda/ação-{i}", "title": "Ajuda", "text": f"texto {i}"}
        for i in range(n)] + DOCS)
    assert run("add", str(tmp_path / "many.jsonl")).exit_code == 0
    result = run("remove", "--prefix", "https://site.example/ajuda/")
    assert result.exit_code == 0, result.output
    assert "removing documents" in result.stderr
    assert result.stdout.startswith(f"{n} removed; {len(DOCS)} documents in")
    with Store(home) as store:
        assert store.count() == len(DOCS)


def test_one_removed_document_is_worded_as_one(run, home, tmp_path, monkeypatch):
    """`busca remove` of one document says "it", and `busca stats` does not count the removal
    as "0 document(s) added or changed" to "include"."""
    _home(run, tmp_path, monkeypatch)
    result = run("remove", DOCS[3]["url"])
    assert result.stdout == (f"1 removed; 5 documents in {home} (run busca index to drop"
                             " it from the index)\n")
    stats = run("stats")
    assert stats.exit_code == 0
    assert stats.stderr == ('1 document(s) removed since this index — run "busca index" to'
                            " update it\n")


def test_one_document_left_is_worded_as_one(run, tmp_path):
    """add and remove said "1 documents in HOME"."""
    one = tmp_path / "one.jsonl"
    one.write_text('{"url": "https://a.example/1", "text": "um texto"}\n'
                   '{"url": "https://a.example/2", "text": "outro texto"}\n', encoding="utf-8")
    assert "; 2 documents in " in run("add", str(one)).stdout
    assert "1 removed; 1 document in " in run("remove", "https://a.example/1").stdout


# SIGTERM lands in `busca remove --prefix` after its second document is deleted
_TERMINATED = """
import os, signal, sys
signal.signal(signal.SIGINT, signal.default_int_handler)  # a run started in the background inherits SIGINT ignored
from busca.index.home.documents import Store
delete, deleted = Store.delete, []
def deleting(self, url):
    found = delete(self, url)
    deleted.append(url)
    if len(deleted) == 2:
        os.kill(os.getpid(), signal.SIG{signal})
    return found
Store.delete = deleting
from busca.cli import main
sys.argv = ["busca", "--home", sys.argv[1], "remove", "--prefix", "https://site.example/a/"]
main()
"""


@pytest.mark.parametrize("signal", ["INT", "TERM"])
def test_an_interrupted_remove_says_what_is_gone_and_the_rerun_ends_it(run, home, signal):
    """Ctrl-C in `busca remove --prefix` said "what was stored before stays" though the
    documents deleted so far were gone, and SIGTERM (`timeout`, a service manager) ended it
    silently with 143; both are one line naming the rerun, exit 130."""
    docs = [{"url": f"https://site.example/a/{i}", "title": f"T{i}", "text": f"texto {i}"}
            for i in range(5)] + [{"url": "https://site.example/b/0", "title": "B",
                                   "text": "fica"}]
    assert run("add", str(write_jsonl(home.parent / "docs.jsonl", docs))).exit_code == 0
    done = subprocess.run([sys.executable, "-c", _TERMINATED.replace("{signal}", signal),
                           str(home)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 130, done.stderr
    assert done.stderr.strip().splitlines()[-1] == (
        "Error: interrupted; the documents removed so far stay removed, run the same command"
        " again to remove the rest")
    with Store(home) as store:
        assert store.count() == 4  # two of a/ gone, none half-removed
    assert run("remove", "--prefix", "https://site.example/a/").exit_code == 0
    with Store(home) as store:
        assert list(store.hashes()) == ["https://site.example/b/0"]
