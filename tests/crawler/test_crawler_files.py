"""`busca add` files: encodings of .html and files without text."""

from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest

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


def test_a_folder_is_its_supported_files_below_it(tmp_path):
    """`busca add notas/` said "cannot read it (Is a directory)": a folder is every .jsonl,
    .txt, .md, .html, .pdf file below it, sorted; hidden files and folders (.git, .obsidian)
    and other types left out; a symlink loop read once."""
    root = tmp_path / "notas"
    (root / "sub" / "mais").mkdir(parents=True)
    (root / ".git").mkdir()
    (root / "b.md").write_text("# B\n\nbê", encoding="utf-8")
    (root / "a.txt").write_text("á", encoding="utf-8")
    (root / "sub" / "mais" / "c.html").write_text("<html><head><title>C</title></head><body><p>cê</p>"
                                                   "</body></html>", encoding="utf-8")
    (root / ".oculto.md").write_text("não", encoding="utf-8")
    (root / ".git" / "HEAD.txt").write_text("não", encoding="utf-8")
    (root / "foto.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00")
    (root / "sub" / "volta").symlink_to(root, target_is_directory=True)  # a loop
    found = list(read_files([str(root)]))
    assert [d.text for d in found] == ["á", "B\nbê", "cê"]
    assert all(isinstance(d, Document) for d in found)


def test_a_folder_without_supported_files_is_one_problem(tmp_path):
    (tmp_path / "fotos").mkdir()
    (tmp_path / "fotos" / "a.png").write_bytes(b"\x89PNG")
    [problem] = list(read_files([str(tmp_path / "fotos")]))
    assert isinstance(problem, Problem) and problem.where == str(tmp_path / "fotos")
    assert "no .jsonl, .txt, .md, .mdx, .html, .htm, .pdf file in it" in problem.message


def test_a_windows_1252_file_is_named_with_its_line_and_the_iconv_fix(tmp_path):
    """It said "is not UTF-8 text (byte 52); convert it to UTF-8": no line to look at in a
    large JSONL, and no command, where UTF-16 text gets one."""
    path = tmp_path / "artigos.jsonl"
    path.write_bytes(b'{"url": "u1", "text": "ok"}\n{"url": "u2", "text": "a\xe7\xe3o"}\n')
    [problem] = list(read_files([str(path)]))
    assert problem.message == (
        "is not UTF-8 text (line 2, byte 52): Windows-1252 or Latin-1? convert it, e.g. iconv"
        f" -f WINDOWS-1252 -t UTF-8 {path} > {tmp_path}/artigos.utf8.jsonl && mv"
        f" {tmp_path}/artigos.utf8.jsonl {path}")


@pytest.mark.skipif(shutil.which("iconv") is None, reason="needs iconv")
@pytest.mark.parametrize("encoding", ["cp1252", "utf-16"])
def test_the_conversion_a_problem_gives_works_when_pasted(tmp_path, encoding):
    """In a folder with spaces and accents, the command split the path at its spaces, and
    it wrote the converted copy in the current folder, where adding the folder again never
    found it (and the original failed again)."""
    folder = tmp_path / "pasta com espaço"
    folder.mkdir()
    path = folder / "edital seleção.txt"
    path.write_bytes("Edital de seleção para monitoria.".encode(encoding))
    [problem] = list(read_files([str(folder)]))
    command = problem.message.split("e.g. ", 1)[1]
    subprocess.run(["sh", "-c", command], check=True, cwd=tmp_path / "..")
    [document] = list(read_files([str(folder)]))
    assert document.text == "Edital de seleção para monitoria."


FRONT = ("---\r\ntitle: \"Política de reembolso\"\r\ntags: [financeiro, 'clientes']\r\n"
         "authors:\r\n  - Ana\r\n  - Bruno\r\nlayout:\r\n  wide: true\r\ndraft: false\r\n"
         "---\r\n\r\n## Prazos\r\n\r\nO estorno leva 7 dias.\r\n")


def test_markdown_front_matter_is_its_title_and_metadata(tmp_path):
    """A Jekyll/Hugo/Obsidian note's YAML front matter was stored as text (its keys
    searched, cited in prompts) and the title was the file's stem: now the title is its
    `title`, its other plain keys are metadata (`--filter tags=financeiro`), its text what
    follows."""
    path = tmp_path / "reembolso.md"
    path.write_bytes(FRONT.encode("utf-8"))
    [doc] = list(read_files([str(path)]))
    assert doc.title == "Política de reembolso"
    assert doc.text == "Prazos\nO estorno leva 7 dias."
    assert {k: v for k, v in doc.meta.items() if k != "path"} == {
        "tags": ["financeiro", "clientes"], "authors": ["Ana", "Bruno"], "draft": "false",
        "headings": [[0, 2, "Prazos", "prazos"]]}


@pytest.mark.parametrize("front, modified", [
    ("lastmod: 2023-11-20\ndate: 2021-01-05", "2023-11-20"),  # Hugo: the last change first
    ("date: 2021-01-05T09:30:00-03:00", "2021-01-05T09:30:00-03:00"),
    ("last_modified_at: Tue, 05 Dec 2023 10:00:00 +0000", "2023-12-05T10:00:00+00:00"),
    ("updated: 05/12/2023\ndate: 2021-01-05", "2021-01-05"),  # not a date: the next one
    ("date: ontem", None)])  # none: the file's time
def test_a_markdown_files_date_is_its_front_matters(tmp_path, front, modified):
    """A docs folder cloned with git has every file at the clone's time, so `--filter
    modified>=2024-01-01` kept every page: the front matter's date (Hugo's lastmod, Jekyll's
    last_modified_at, a post's date) was left out ("modified" too, as a reserved key)."""
    path = tmp_path / "nota.md"
    path.write_text(f"---\ntitle: Nota\n{front}\n---\n\nTexto da nota.\n", encoding="utf-8")
    os.utime(path, (1_700_000_000, 1_700_000_000))  # 2023-11-14T22:13:20
    [doc] = list(read_files([str(path)]))
    assert doc.modified == (modified or "2023-11-14T22:13:20")


def test_a_rule_that_opens_a_markdown_file_is_not_front_matter(tmp_path):
    path = tmp_path / "regra.md"
    path.write_text("---\n\nTexto sem front matter: não é um bloco.\n", encoding="utf-8")
    [doc] = list(read_files([str(path)]))
    assert doc.text == "Texto sem front matter: não é um bloco."  # the rule is not text
    assert doc.title == "regra"


NOTE = """# Guia de **instalação**

> Leia antes: o [manual](https://exemplo.com.br/manual "Manual") e a ![figura](img/a.png).

## Passo 1: `pip install busca` ##

1. Rode o comando.
- Veja a tabela:

| opção | efeito |
|:------|-------:|
| `-q`  | silêncio |

***

```bash
# instale
pip install busca
```
<!-- rascunho: não publicar -->
[manual]: https://exemplo.com.br/manual
##### Nota menor
"""


def test_a_markdown_file_is_stored_as_the_text_a_reader_sees(tmp_path):
    """A .md file was stored as it is: `**`, `#`, link targets and tables' rules were in
    every snippet and prompt, and a URL's words were indexed. Now its plain text, with each
    heading's offset in that text (its section cited by the anchor GitHub gives it)."""
    path = tmp_path / "guia.md"
    path.write_text(NOTE, encoding="utf-8")
    [doc] = list(read_files([str(path)]))
    assert doc.text == ("Guia de instalação\n"
                        "Leia antes: o manual e a figura.\n"
                        "Passo 1: pip install busca\n"
                        "Rode o comando.\nVeja a tabela:\n"
                        "| opção | efeito |\n| -q | silêncio |\n"
                        "# instale\npip install busca\n"
                        "Nota menor")
    assert doc.title == "Guia de instalação"
    headings = doc.meta["headings"]
    assert headings == [[0, 1, "Guia de instalação", "guia-de-instalação"],
                        [52, 2, "Passo 1: pip install busca", "passo-1-pip-install-busca"]]
    assert all(doc.text[at:].startswith(text) for at, _, text, _ in headings)
    assert "https" not in doc.text and "rascunho" not in doc.text


def test_a_jsonl_file_is_read_a_line_at_a_time(tmp_path, monkeypatch):
    """busca add read a JSONL export whole, then decoded and split it (688 MB resident for a
    216 MB file of 50,000 documents; 65 MB now): its lines are read one by one, and a bad
    byte is still named by line and byte, before any document of the file is given."""
    from pathlib import Path

    lines = [json.dumps({"url": f"https://s.example/{n}", "text": f"Texto número {n}."},
                        ensure_ascii=False) for n in range(300)]
    good = tmp_path / "good.jsonl"
    good.write_text("\ufeff" + "\r\n".join(lines) + "\n", encoding="utf-8")
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(good.read_bytes().replace("número 250".encode(), "n\xfamero 250".encode("latin-1")))
    monkeypatch.setattr(Path, "read_bytes", lambda self: pytest.fail("read whole"))
    docs = list(read_files([str(good)]))
    assert [d.url for d in docs] == [f"https://s.example/{n}" for n in range(300)]
    assert docs[1].text == "Texto número 1."
    offset = bad.open("rb").read().index(b"n\xfamero 250") + 1
    [problem] = list(read_files([str(bad)]))
    assert f"is not UTF-8 text (line 251, byte {offset})" in problem.message


def test_a_docusaurus_mdx_page_is_added_as_markdown(tmp_path):
    """A Docusaurus docs/ folder is mostly .mdx: `busca add docs/` left them out ("1 file(s)
    of other types left out (.mdx 1)"). Now an .mdx page is Markdown: its imports and JSX
    tags go, its words and headings stay."""
    page = tmp_path / "docs" / "instalacao.mdx"
    page.parent.mkdir()
    page.write_text("---\ntitle: Instalação\n---\nimport Tabs from '@theme/Tabs';\n\n"
                    "## Requisitos {#requisitos}\n\n<Tabs>\nUse o **Python 3.11**.\n</Tabs>\n"
                    ":::tip Dica\nRode `pip install busca`.\n:::\n", encoding="utf-8")
    [doc] = list(read_files([str(tmp_path / "docs")]))
    assert doc.title == "Instalação"
    assert doc.text == "Requisitos\nUse o Python 3.11.\nDica\nRode pip install busca."
    assert doc.meta["headings"] == [[0, 2, "Requisitos", "requisitos"]]


def test_a_file_without_text_in_a_folder_is_left_out_with_a_warning(tmp_path, caplog):
    """A Hugo site's `content/` has an `_index.md` of front matter alone in every section:
    `busca add content/` skipped each as an input ("Error: 1 input(s) skipped", exit 1) on
    every run. In a folder such a file is left out with a warning; named on its own it is
    still a skipped input."""
    folder = tmp_path / "content"
    folder.mkdir()
    (folder / "_index.md").write_text("---\ntitle: Seção\n---\n", encoding="utf-8")
    (folder / "vazio.txt").write_text(" \n", encoding="utf-8")
    (folder / "a.md").write_text("# A\n\ntexto", encoding="utf-8")
    with caplog.at_level("WARNING", logger="busca.crawler.files"):
        found = list(read_files([str(folder)]))
    assert [d.title for d in found if isinstance(d, Document)] == ["A"]
    assert [(p.where, p.left_out) for p in found if isinstance(p, Problem)] == [
        (str(folder / "_index.md"), True), (str(folder / "vazio.txt"), True)]
    assert sorted(r.getMessage() for r in caplog.records) == [
        f"{folder / '_index.md'}: no text found in it; left out",
        f"{folder / 'vazio.txt'}: no text found in it; left out"]
    [problem] = list(read_files([str(folder / "_index.md")]))
    assert isinstance(problem, Problem) and problem.message == "no text found in it"
    assert not problem.left_out


def test_a_text_file_loses_the_invisible_characters_a_crawled_page_loses(tmp_path):
    """A soft hyphen or zero-width space inside a word of an added .txt file split it in two
    ("infor", "mação"): a question for "informação" never found it, where the same text
    crawled from a page (or added as .md) did."""
    path = tmp_path / "nota.txt"
    path.write_text("A infor\u00admação do pe\u200bdido\ufeff chega.", encoding="utf-8")
    [doc] = list(read_files([str(path)]))
    assert doc.text == "A informação do pedido chega."


def test_a_binary_file_names_every_type_busca_adds(tmp_path):
    """A file with NUL bytes (a .txt that is not text) said busca adds ".jsonl, .txt, .md,
    .html": it adds .mdx, .htm and .pdf too."""
    path = tmp_path / "dados.txt"
    path.write_bytes(b"abc\x00def")
    [problem] = list(read_files([str(path)]))
    assert problem.message == ("looks like a binary file; busca adds .jsonl, .txt, .md, .mdx,"
                               " .html, .htm, .pdf")


CONFLUENCE = """<!DOCTYPE html><html><head><title>Base de Conhecimento : Política de férias</title>
<META http-equiv="Content-Type" content="text/html; charset=UTF-8"></head>
<body class="theme-default aui-theme-default"><div id="page"><div id="main" class="aui-page-panel">
<div id="main-header"><div id="breadcrumb-section"><ol id="breadcrumbs">
<li class="first"><span><a href="index.html">Base de Conhecimento</a></span></li>
<li><span><a href="Politicas_123.html">Políticas</a></span></li></ol></div>
<h1 id="title-heading" class="pagetitle"><span id="title-text">
 Base de Conhecimento : Política de férias </span></h1></div>
<div id="content" class="view"><div class="page-metadata">
 Criado por <span class='author'> João Silva</span>, última modificação em 03 mar. 2024</div>
<div id="main-content" class="wiki-content group">
<h1 id="Politicadeferias-Solicitacao">Solicitação</h1>
<p>As férias devem ser solicitadas com 30 dias de antecedência.</p></div>
<div class="pageSection group"><div class="pageSectionHeader">
<h2 id="attachments" class="pageSectionTitle">Anexos:</h2></div>
<div class="greybox" align="left"><a href="attachments/123/456.pdf">formulário.pdf</a>
(application/pdf)<br/></div></div></div></div>
<div id="footer" role="contentinfo"><section class="footer-body">
<p>Document generated by Confluence on mar. 03, 2024 10:12</p></section></div></div>
</body></html>"""


def test_a_confluence_export_page_is_its_title_and_body(tmp_path):
    """A Confluence space exported as HTML: every page was titled "Space : Page" and its
    text began with the breadcrumbs and "Criado por …, última modificação em …" and ended
    with its attachments' names, on every page (a question naming the author or an
    ancestor page found them all). The page is its title and its body (`#main-content`),
    whose own h1 headings stay headings."""
    path = tmp_path / "KB" / "Ferias_124.html"
    path.parent.mkdir()
    path.write_text(CONFLUENCE, encoding="utf-8")
    [doc] = list(read_files([str(path.parent)]))
    assert doc.title == "Política de férias"
    assert doc.text == ("Solicitação\n"
                        "As férias devem ser solicitadas com 30 dias de antecedência.")
    assert doc.meta["headings"] == [[0, 1, "Solicitação", "Politicadeferias-Solicitacao"]]


def test_a_confluence_page_without_the_space_in_its_title_keeps_it_whole(tmp_path):
    """Newer exports leave the space out of the title (the first breadcrumb is empty)."""
    page = CONFLUENCE.replace(">Base de Conhecimento</a>", "></a>").replace(
        " Base de Conhecimento : Política de férias ", " Férias : regras gerais ")
    path = tmp_path / "Ferias.html"
    path.write_text(page, encoding="utf-8")
    [doc] = list(read_files([str(path)]))
    assert doc.title == "Férias : regras gerais"


WORD = ("<html>\r\n<head>\r\n<meta http-equiv=Content-Type content=\"text/html;"
        " charset=windows-1252\">\r\n<meta name=Generator content=\"Microsoft Word 15"
        " (filtered)\">\r\n<title>Manual</title>\r\n</head>\r\n<body lang=PT-BR>\r\n<div"
        " class=WordSection1>\r\n<p class=MsoTitle>Manual de Conduta Ética</p>\r\n<h1>"
        "Introdução</h1>\r\n<p class=MsoNormal>Não é permitido aceitar presentes.</p>\r\n"
        "</div>\r\n</body>\r\n</html>\r\n")
GOOGLE_DOC = ('<html><head><meta content="text/html; charset=UTF-8" http-equiv="content-type">'
              '<style type="text/css">.c1{font-weight:700}</style></head><body class="c5'
              ' doc-content"><p class="c3 title" id="h.abc"><span class="c1">Guia de'
              ' integração</span></p><h1 class="c2" id="h.xyz"><span>Autenticação</span>'
              '</h1><p class="c0"><span>Use o token no cabeçalho.</span></p></body></html>')


@pytest.mark.parametrize("page, encoding, title, text", [
    (WORD, "cp1252", "Manual de Conduta Ética",
     "Introdução\nNão é permitido aceitar presentes."),
    (GOOGLE_DOC, "utf-8", "Guia de integração", "Autenticação\nUse o token no cabeçalho."),
])
def test_a_word_or_google_doc_web_page_is_titled_by_its_title_paragraph(tmp_path, page,
                                                                        encoding, title, text):
    """A Word document saved as "Web page, filtered" or a Google Doc downloaded as HTML was
    titled by its first section heading ("Introdução", "Autenticação": every document of
    the export alike), its title left as a line of text. The paragraph in Word's or
    Google's Title style is the title."""
    path = tmp_path / "documento.htm"
    path.write_bytes(page.encode(encoding))
    [doc] = list(read_files([str(path)]))
    assert (doc.title, doc.text) == (title, text)


def test_words_title_style_pasted_into_a_page_is_not_its_title(tmp_path):
    """A post pasted from Word keeps `class="MsoTitle"`; the page (not made by Word) keeps
    its own h1 as title."""
    path = tmp_path / "post.html"
    path.write_text("<html><body><h1>Recesso de fim de ano</h1><p class=MsoTitle>Aviso</p>"
                    "<p>O recesso vai até janeiro.</p></body></html>", encoding="utf-8")
    [doc] = list(read_files([str(path)]))
    assert doc.title == "Recesso de fim de ano"
