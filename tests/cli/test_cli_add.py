"""`busca add`: one document per file whatever path names it; BEIR corpora as distributed."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from busca.crawler.store import Document
from busca.index.home.documents import Store

BEIR_TINY = Path(__file__).parents[1] / "data" / "beir-tiny"


def test_the_same_file_by_relative_and_absolute_path_is_one_document(run, home, tmp_path,
                                                                       monkeypatch):
    (tmp_path / "docs").mkdir()
    note = tmp_path / "docs" / "nota.md"
    note.write_text("# Nota\n\nPrazo de reembolso.", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    assert "1 added" in run("add", "docs/nota.md").stdout
    again = run("add", str(note))
    assert again.exit_code == 0 and "0 added, 0 updated, 1 unchanged; 1 document" in again.stdout
    with Store(home) as store:
        assert [d.url for d in store.documents()] == [note.resolve().as_uri()]


def test_a_home_with_the_old_path_ids_gets_the_file_once(run, home, tmp_path, monkeypatch):
    note = tmp_path / "nota.md"
    note.write_text("# Nota\n\nPrazo de reembolso.", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    with Store(home) as store:  # what older versions stored: the path as typed
        store.put(Document("nota.md", "Nota", "# Nota\n\nPrazo de reembolso.", "file"))
        store.put(Document(str(note), "Nota", "# Nota\n\nPrazo de reembolso.", "file"))
        store.put(Document("https://site.example/nota.md", "Nota web", "outra", "wordpress"))
    result = run("add", "nota.md")
    assert result.exit_code == 0 and "2 documents" in result.stdout
    with Store(home) as store:
        assert sorted(d.url for d in store.documents()) == [
            note.resolve().as_uri(), "https://site.example/nota.md"]


def test_a_beir_corpus_as_distributed_is_added_indexed_and_evaluated(run, home, tmp_path):
    folder = tmp_path / "beir"
    shutil.copytree(BEIR_TINY, folder)
    lines = (folder / "corpus.jsonl").read_text(encoding="utf-8").splitlines()
    plain = [{k: v for k, v in json.loads(line).items() if k != "url"} for line in lines]
    (folder / "corpus.jsonl").write_text(
        "".join(json.dumps(d, ensure_ascii=False) + "\n" for d in plain), encoding="utf-8")
    assert "url" not in (folder / "corpus.jsonl").read_text(encoding="utf-8")
    added = run("add", str(folder / "corpus.jsonl"))
    assert added.exit_code == 0, added.output
    assert "6 added" in added.stdout
    with Store(home) as store:
        assert sorted(d.url for d in store.documents()) == sorted(d["_id"] for d in plain)
    assert run("index", "--quiet", "--methods", "bm25", "--analyzer", "pt").exit_code == 0
    result = run("eval", str(folder), "--methods", "bm25", "--json", "-q")
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)["summary"]["bm25"]
    assert summary["ndcg@10"]["mean"] == pytest.approx(0.8)  # hand-worked in its README.md


def test_a_line_with_neither_url_nor_id_is_named(run, tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"title": "t", "text": "x"}\n{"_id": 7, "text": "sete"}\n'
                   '{"_id": "d8", "url": "", "text": "oito"}\n{"_id": true, "text": "não"}\n',
                   encoding="utf-8")
    result = run("add", str(bad))
    assert result.exit_code == 1 and "2 added" in result.stdout
    assert f"skipped {bad}:4:" in result.stderr
    assert f'skipped {bad}:1: needs a string "text" and a "url" (or a BEIR "_id")' in result.stderr



def test_a_document_given_twice_in_one_add_is_noted(run, tmp_path):
    """Found in review: a url twice in one .jsonl was counted "1 added, 1 updated" with no
    word that the first text was dropped."""
    docs = tmp_path / "docs.jsonl"
    docs.write_text('{"url": "https://a/1", "title": "A", "text": "primeiro"}\n'
                    '{"url": "https://a/2", "title": "B", "text": "outro"}\n'
                    '{"url": "https://a/1", "title": "A", "text": "segundo"}\n', encoding="utf-8")
    result = run("add", str(docs))
    assert result.exit_code == 0 and "2 documents" in result.stdout
    assert "note: https://a/1 comes more than once in the input; the last one is kept" \
        in result.stderr
    assert "https://a/2" not in result.stderr


def test_a_number_of_thousands_of_digits_is_one_line_and_the_rest_is_added(run, home,
                                                                            tmp_path):
    """Python refuses ints of over 4,300 digits with a plain ValueError, which the JSON
    message's handler read as a JSONDecodeError (a traceback)."""
    source = tmp_path / "big.jsonl"
    source.write_text('{"url": "https://a.example/1", "text": "um", "n": ' + "1" * 5000 + "}\n"
                      '{"url": "https://a.example/2", "text": "dois"}\n', encoding="utf-8")
    result = run("add", str(source))
    assert result.exit_code == 1 and "Traceback" not in result.output  # one line skipped
    assert "big.jsonl:1: a value busca cannot read" in result.stderr and "1 added" in result.stdout
    with Store(home) as store:
        assert [d.url for d in store.documents()] == ["https://a.example/2"]


def test_add_json_prints_the_library_s_counts_and_keeps_notes_on_stderr(run, tmp_path):
    """`busca add` had no --json (crawl and stats have it): a program parsed the summary
    line. Its JSON is Added.to_json(), as Corpus.add_files gives it; a skipped input still
    exits 1 with its message on stderr."""
    import busca

    docs = tmp_path / "docs.jsonl"
    docs.write_text('{"url": "https://a/1", "title": "Ação", "text": "primeiro"}\n'
                    '{"url": "https://a/1", "title": "Ação", "text": "segundo"}\n'
                    '{"title": "sem url"}\n'
                    '{"url": "https://a/2", "title": "B", "text": "outro"}\n', encoding="utf-8")
    result = run("add", str(docs), "--json")
    assert result.exit_code == 1 and "Traceback" not in result.output
    with busca.open(tmp_path / "other") as corpus:
        expected = corpus.add_files([docs], notify=lambda what, value: None).to_json()
    assert json.loads(result.stdout) == expected and expected["skipped"] == 1
    assert "comes more than once" in result.stderr and "skipped" in result.stderr


def test_add_json_names_each_input_skipped_or_left_out_and_why(run, tmp_path):
    """`busca add --json` said `"skipped": 2` and nothing of which inputs or why (only
    stderr did), nor the files of a folder left out (a 404 page, a listing, an empty note):
    a CI job could not tell a typo from a broken export. Each is named with its reason."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "boa.md").write_text("# Ação\n\nO prazo é de sete dias.", encoding="utf-8")
    (site / "404.html").write_text("<html><body><h1>Página não encontrada</h1>"
                                   "<p>Nada aqui.</p></body></html>", encoding="utf-8")
    (site / "tags.html").write_text("<html><body>" + "".join(
        f"<article><h2>{t}</h2><p>Um resumo de {t}.</p></article>" for t in "ABC")
        + "</body></html>", encoding="utf-8")
    (site / "vazio.md").write_text("", encoding="utf-8")
    (site / "utf16.txt").write_bytes("Olá".encode("utf-16"))
    missing = tmp_path / "não-existe.md"
    result = run("add", str(site), str(missing), "--json")
    assert result.exit_code == 1 and "Traceback" not in result.output
    out = json.loads(result.stdout)
    assert (out["added"], out["skipped"], out["documents"]) == (1, 2, 1)
    skipped = {Path(s["input"]).name: s["reason"] for s in out["skipped_inputs"]}
    assert set(skipped) == {"utf16.txt", "não-existe.md"} and len(out["skipped_inputs"]) == 2
    assert "UTF-16" in skipped["utf16.txt"] and "No such file" in skipped["não-existe.md"]
    left_out = {Path(s["input"]).name: s["reason"] for s in out["left_out"]}
    assert set(left_out) == {"404.html", "tags.html", "vazio.md"}
    assert "not found" in left_out["404.html"] and "listing" in left_out["tags.html"]
    assert left_out["vazio.md"] == "no text found in it"


def test_a_first_add_that_stores_nothing_leaves_no_home(run, home, tmp_path):
    """Every input skipped on a new home: exit 1, and no empty home left behind for later
    commands to take for a real one (busca stats then says the folder does not exist)."""
    (tmp_path / "vazio.md").write_text("", encoding="utf-8")
    result = run("add", str(tmp_path / "vazio.md"), str(tmp_path / "não-existe.txt"))
    assert result.exit_code == 1 and "2 input(s) skipped" in result.stderr
    assert not home.exists()
    assert "the folder does not exist" in run("stats").stderr


def test_adding_a_folder_again_removes_the_documents_of_its_files_that_are_gone(run, home,
                                                                               tmp_path):
    """A renamed or deleted note stayed in the home for ever (no command removed it) and
    kept being cited. Adding its folder again removes it, as a crawl removes what the site
    no longer lists; a file elsewhere, or one that still exists, is kept."""
    docs, other = tmp_path / "notas com espaço", tmp_path / "outra.md"
    (docs / "sub").mkdir(parents=True)
    (docs / "ação.md").write_text("# Ação\n\nO reembolso leva sete dias.", encoding="utf-8")
    (docs / "sub" / "b.txt").write_text("Boletos compensam em três dias.", encoding="utf-8")
    other.write_text("Outra nota, fora da pasta.", encoding="utf-8")
    first = run("add", str(docs), str(other), "--json")
    assert json.loads(first.stdout)["added"] == 3 and json.loads(first.stdout)["deleted"] == 0
    (docs / "ação.md").rename(docs / "reembolso.md")
    (docs / "sub" / "b.txt").unlink()
    again = run("add", str(docs))
    assert again.exit_code == 0, again.output
    assert "1 added, 0 updated, 0 unchanged, 2 deleted; 2 documents" in again.stdout
    with Store(home) as store:
        assert sorted(d.url for d in store.documents()) == sorted(
            [(docs / "reembolso.md").as_uri(), other.as_uri()])


def test_an_empty_folder_removes_nothing(run, home, tmp_path):
    """An unmounted share is an empty folder: its documents are not removed."""
    docs = tmp_path / "share"
    docs.mkdir()
    (docs / "a.md").write_text("# A\n\ntexto", encoding="utf-8")
    assert run("add", str(docs)).exit_code == 0
    (docs / "a.md").unlink()
    result = run("add", str(docs))
    assert result.exit_code == 1 and "no .jsonl, .txt, .md" in result.stderr
    with Store(home) as store:
        assert store.count() == 1


def test_a_long_add_shows_progress_on_stderr_and_a_short_one_none(run, home, tmp_path):
    """Found at 50,000 documents: `busca add` stored them for 14 s without a word on stderr
    (busca index of the same home says what it does). Every 1,000 documents read is a
    progress report; a small add stays silent and stdout keeps only the summary."""
    from busca.corpus.documents import PROGRESS_EVERY

    many = [{"url": f"https://empresa.example/notícias/ação-{i}/", "title": f"Ação {i}",
             "text": f"Informação número {i}."} for i in range(PROGRESS_EVERY + 5)]
    source = tmp_path / "many.jsonl"
    source.write_text("".join(json.dumps(d, ensure_ascii=False) + "\n" for d in many),
                      encoding="utf-8")
    result = run("add", str(source))
    assert result.exit_code == 0, result.output
    assert "storing documents" in result.stderr
    assert result.stdout == f"{len(many)} added, 0 updated, 0 unchanged; {len(many)} documents" \
        f" in {home}\n"
    few = tmp_path / "few.jsonl"
    few.write_text(json.dumps(many[0], ensure_ascii=False) + "\n", encoding="utf-8")
    quiet = run("add", str(few))
    assert quiet.exit_code == 0 and quiet.stderr == ""


def test_a_big_file_is_named_on_stderr_before_it_is_read(run, home, tmp_path, monkeypatch):
    """A 36 MB HTML manual was 20 s of silence (one document: no progress every 1,000): a
    file of BIG_FILE bytes or more is named with its size before it is read; a small one is
    not, and stdout keeps only the summary."""
    from busca.corpus import documents

    monkeypatch.setattr(documents, "BIG_FILE", 2_000)  # (4 MB: a test of seconds)
    big, small = tmp_path / "manual.html", tmp_path / "nota.md"
    big.write_text("<h1>Manual</h1>" + "<p>Informação sobre o prazo.</p>" * 200,
                   encoding="utf-8")
    small.write_text("# Nota\n\nTexto curto.\n", encoding="utf-8")
    result = run("add", str(big), str(small))
    assert result.exit_code == 0, result.output
    assert result.stderr.splitlines()[0].startswith("reading manual.html (0.0 MB)"), result.stderr
    assert "nota.md" not in result.stderr
    assert result.stdout.startswith("2 added")


def test_slow_documents_show_progress_every_few_seconds(run, home, tmp_path, monkeypatch):
    """A folder of hundreds of PDFs (half a second each) was minutes of silence: progress
    came every 1,000 documents. Now also every PROGRESS_SECONDS while documents are stored
    (0 here: every document), never on stdout."""
    from busca.corpus import documents

    monkeypatch.setattr(documents, "PROGRESS_SECONDS", 0.0)
    folder = tmp_path / "notas"
    folder.mkdir()
    for n in range(3):
        (folder / f"nota-{n}.md").write_text(f"# Nota {n}\n\nTexto {n}.\n", encoding="utf-8")
    result = run("add", str(folder))
    assert result.exit_code == 0, result.output
    assert "storing documents" in result.stderr, result.stderr  # (a terminal sees the count)
    assert result.stdout.startswith("3 added")


def test_a_jsonl_line_loses_the_invisible_characters_a_page_loses(run, home, tmp_path):
    """`busca add export.jsonl` kept a CMS's hyphenation hints and zero-width characters
    ("infor\\u00admação"), which a crawled page and a .txt file lose: a search for "informação"
    found nothing, and the snippet carried them. Its heading offsets still point at them."""
    text = ("Nossa po\u00adlí\u00adtica.\n\u200bPrazos de infor\u00admação\n"
            "A infor\u00admação pes\u200csoal é apagada em trinta dias.")
    line = {"url": "https://cms.example/p/1", "title": "Privaci\u00addade", "text": text,
            "meta": {"headings": [[text.index("\u200bPrazos"), 2, "Prazos", "prazos"]]}}
    export = tmp_path / "export.jsonl"
    other = {"url": "https://cms.example/p/2", "title": "Frete", "text": "O frete é grátis."}
    export.write_text(json.dumps(line) + "\n" + json.dumps(other) + "\n",  # \u escapes
                      encoding="utf-8")
    assert run("add", str(export)).exit_code == 0
    assert run("index", "-q", "--methods", "tfidf,bm25").exit_code == 0
    found = run("search", "informação", "--json", "--no-log")
    hits = [json.loads(x) for x in found.stdout.splitlines()]
    assert found.exit_code == 0 and [h["url"] for h in hits] == [line["url"]], found.output
    assert hits[0]["title"] == "Privacidade" and "\u00ad" not in hits[0]["text"]
    with Store(home) as store:
        doc = store.get(line["url"])
    offset = doc.meta["headings"][0][0]
    assert doc.text[offset:].startswith("Prazos de informação\n")
    assert run("add", str(export)).stdout.startswith("0 added, 0 updated, 2 unchanged")


def test_a_note_emptied_of_its_text_leaves_the_store_when_its_folder_is_added_again(
        run, home, tmp_path, caplog):
    """A note whose text was cut (a page blanked, one left with its front matter alone) was
    "left out" with a warning on the next `busca add notas/`, but its old text stayed in the
    store and kept being found and cited. Left out, its document goes, as a deleted file's."""
    docs = tmp_path / "notas"
    docs.mkdir()
    (docs / "senha.md").write_text("# Senha\n\nA senha do cofre é 4321.", encoding="utf-8")
    (docs / "outra.md").write_text("# Outra\n\nTexto que fica.", encoding="utf-8")
    assert run("add", str(docs)).exit_code == 0
    (docs / "senha.md").write_text("---\ntitle: Senha\n---\n", encoding="utf-8")
    with caplog.at_level("WARNING", logger="busca.crawler.files"):
        again = run("add", str(docs))
    assert again.exit_code == 0, again.output
    assert "0 added, 0 updated, 1 unchanged, 1 deleted; 1 document in" in again.stdout
    assert "senha.md: no text found in it; left out" in caplog.text
    with Store(home) as store:
        assert [d.url for d in store.documents()] == [(docs / "outra.md").as_uri()]


def test_a_site_builds_listing_noindex_and_not_found_pages_are_left_out(run, home, tmp_path,
                                                                        caplog):
    """`busca add site/` (an MkDocs or Docusaurus build) stored its 404.html, its search page
    (noindex) and every tag or archive page (the posts' excerpts again, found beside each
    post), which `busca crawl` of the same site does not store. Named on its own, such a
    page is still added."""
    site = tmp_path / "site"
    (site / "blog" / "tags" / "ferias").mkdir(parents=True)
    (site / "search").mkdir()
    (site / "404.html").write_text(
        "<html><body><article><h1>Página não encontrada</h1><p>Volte ao início.</p>"
        "</article></body></html>", encoding="utf-8")
    (site / "search" / "index.html").write_text(
        '<html><head><meta name="robots" content="noindex, follow"></head><body><main>'
        "<h1>Pesquisar</h1><p>Digite sua pesquisa.</p></main></body></html>", encoding="utf-8")
    (site / "blog" / "tags" / "ferias" / "index.html").write_text(
        "<html><body><main><article><h2>Férias</h2><p>As férias são divididas.</p></article>"
        "<article><h2>Recesso</h2><p>O recesso vai até janeiro.</p></article></main>"
        "</body></html>", encoding="utf-8")
    (site / "index.html").write_text(
        "<html><body><article><h1>Manual</h1><p>As férias são divididas.</p></article>"
        "</body></html>", encoding="utf-8")
    with caplog.at_level("WARNING", logger="busca.crawler.files"):
        result = run("add", str(site))
    assert result.exit_code == 0, result.output
    assert "1 added" in result.stdout
    for name, why in [("404.html", 'a "page not found" page'),
                      ("search/index.html", 'marked noindex (<meta name="robots">)'),
                      ("blog/tags/ferias/index.html", "a listing of several articles")]:
        assert f"{site / name}: {why}" in caplog.text
    with Store(home) as store:
        assert [d.url for d in store.documents()] == [(site / "index.html").as_uri()]
    assert "1 added" in run("add", str(site / "404.html")).stdout
