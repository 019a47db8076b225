"""`busca add` files: encodings of .html and files without text."""

from __future__ import annotations

from busca.crawler.files import Problem, file_id, legacy_ids, read_files
from busca.crawler.store import Document

LATIN1 = ('<html><head><meta charset="iso-8859-1"><title>Ação</title></head><body>'
          "<article><h1>Matrícula</h1><p>Inscrições até março.</p></article></body></html>")


def test_html_meta_charset_is_obeyed(tmp_path):
    path = tmp_path / "pagina.html"
    path.write_bytes(LATIN1.encode("latin-1"))
    [document] = read_files([str(path)])
    assert isinstance(document, Document)
    assert (document.title, document.text) == ("Matrícula", "Inscrições até março.")


def test_files_without_text_are_problems(tmp_path):
    (tmp_path / "vazio.txt").write_text(" \n\n", encoding="utf-8")
    (tmp_path / "menu.html").write_text("<html><body><nav><a href='/'>Início</a></nav></body>"
                                        "</html>", encoding="utf-8")
    found = list(read_files([str(tmp_path / "vazio.txt"), str(tmp_path / "menu.html")]))
    assert found == [Problem(str(tmp_path / "vazio.txt"), "no text found in it"),
                     Problem(str(tmp_path / "menu.html"), "no text found in it")]


def test_a_file_is_one_document_by_relative_or_absolute_path(tmp_path, monkeypatch):
    (tmp_path / "notas").mkdir()
    note = tmp_path / "notas" / "a.md"
    note.write_text("# Nota\n\nTexto.", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    found = list(read_files(["notas/a.md", "./notas/../notas/a.md", str(note)]))
    assert {d.url for d in found} == {note.resolve().as_uri()}
    assert found[0].url.startswith("file:///") and found[0].url.endswith("/notas/a.md")


def test_legacy_ids_are_paths_as_typed_that_name_the_same_file(tmp_path, monkeypatch):
    (tmp_path / "a.md").write_text("# A\n\ntexto", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    found = legacy_ids(["a.md", str(tmp_path / "a.md"), "https://site/a.md", "gone.md",
                        "reembolso", file_id("a.md")])
    assert found == {file_id("a.md"): ["a.md", str(tmp_path / "a.md")]}


def test_jsonl_keys_beyond_url_title_text_are_metadata(tmp_path):
    """Issue 26: every key beyond url/title/text goes to the document's metadata."""
    path = tmp_path / "docs.jsonl"
    path.write_text('{"url": "https://s/a", "title": "A", "text": "x", "modified": "2024-01-01",'
                    ' "category": "Python", "tags": ["a", "b"], "year": 2015, "empty": "",'
                    ' "meta": {"author": "Ana"}}\n'
                    '{"_id": "d2", "text": "y"}\n', encoding="utf-8")
    first, second = read_files([str(path)])
    assert first.meta == {"category": "Python", "tags": ["a", "b"], "year": 2015,
                          "author": "Ana"}
    assert first.modified == "2024-01-01" and second.meta is None


def test_a_file_keeps_its_path_and_modification_time(tmp_path):
    """`busca add notas.md`: metadata `path` (absolute) and `modified` (the file's mtime,
    UTC), so `--filter path^=/docs/` and `--filter modified>=2024-01-01` work on files."""
    import os

    note = tmp_path / "docs" / "notas.md"
    note.parent.mkdir()
    note.write_text("# Notas\n\nO prazo é de 30 dias.\n", encoding="utf-8")
    os.utime(note, (1_700_000_000, 1_700_000_000))  # 2023-11-14T22:13:20Z
    [doc] = list(read_files([str(note)]))
    assert doc.modified == "2023-11-14T22:13:20"
    assert doc.meta["path"] == str(note.resolve()) and doc.meta["headings"]
    [jsonl] = list(read_files([str(_jsonl(tmp_path))]))
    assert "path" not in (jsonl.meta or {})  # a JSONL line is not a file on disk


def _jsonl(tmp_path):
    source = tmp_path / "x.jsonl"
    source.write_text('{"url": "https://a.example/1", "text": "um"}\n', encoding="utf-8")
    return source
