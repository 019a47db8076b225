"""Markdown as the text a reader sees (crawler/markdown.py), on the shapes real documentation
folders use: MkDocs (FastAPI's Portuguese docs), Docusaurus, Obsidian vaults, GitHub READMEs,
Hugo. Each test names what a user saw before."""

from __future__ import annotations

import json

from busca.crawler.files import read_files
from busca.crawler.markdown import markdown_text

FASTAPI = """\
# Tutorial - Guia do Usuário { #tutorial-user-guide }

Texto de abertura.

## Configuração inicial { #first-steps }

Rode o servidor.

##### Por que usar hashing de senha { #why-use-password-hashing }

Porque sim.

## GET /users/{id}

A rota.
"""


def test_a_heading_attribute_list_is_its_anchor_not_its_words(tmp_path):
    """FastAPI's (MkDocs) and Docusaurus' `## Título { #id }`: the braces were in the title,
    the section and every prompt ("Tutorial - Guia do Usuário { #tutorial-user-guide }"),
    and the cited anchor was made of them (#configuração-inicial-first-steps, on no page).
    Now the words a reader sees, and the id the page gives the heading."""
    path = tmp_path / "index.md"
    path.write_text(FASTAPI, encoding="utf-8")
    [doc] = list(read_files([str(path)]))
    assert doc.title == "Tutorial - Guia do Usuário"
    assert doc.text.splitlines() == ["Tutorial - Guia do Usuário", "Texto de abertura.",
                                     "Configuração inicial", "Rode o servidor.",
                                     "Por que usar hashing de senha", "Porque sim.",
                                     "GET /users/{id}", "A rota."]
    assert [h[2:] for h in doc.meta["headings"]] == [
        ["Tutorial - Guia do Usuário", "tutorial-user-guide"],
        ["Configuração inicial", "first-steps"], ["GET /users/{id}", "get-usersid"]]
    text, headings = markdown_text("## Instalação {#install}\n### Uso { .x data-toc-label='U' }")
    assert (text, [h[3] for h in headings]) == ("Instalação\nUso", ["install", "uso"])


def test_context_cites_the_heading_id_of_an_added_markdown_file(run, tmp_path):
    path = tmp_path / "docs" / "index.md"
    path.parent.mkdir()
    path.write_text(FASTAPI, encoding="utf-8")
    assert run("add", str(path.parent)).exit_code == 0
    assert run("index", "-q", "--size", "8", "--overlap", "2").exit_code == 0
    passage = json.loads(run("context", "rode o servidor", "--json").stdout)["passages"][0]
    assert passage["cite"] == path.resolve().as_uri() + "#first-steps"
    assert passage["section"] == "Tutorial - Guia do Usuário › Configuração inicial"
    assert "unchanged" in run("add", str(path.parent)).output


def test_a_code_span_keeps_its_characters():
    """`__init__.py` was stored as "init.py", `**kwargs` as "kwargs" and `<tipo>` vanished
    (emphasis and tag marks were removed inside code). Now only the ticks go."""
    text, _ = markdown_text("Crie `app/__init__.py`, use `**kwargs`, `allowed_hosts=[\"*\"]`"
                            " e `<tipo>`; *ênfase* e _sublinhado_ em snake_case.")
    assert text == ("Crie app/__init__.py, use **kwargs, allowed_hosts=[\"*\"] e <tipo>;"
                    " ênfase e sublinhado em snake_case.")


README = """\
Projeto Busca
=============

[![Build](https://ci.example/badge.svg)](https://ci.example) [![PyPI][pypi-badge]][pypi]

Leia [o guia][guia], o [manual] e <https://exemplo.com.br/ajuda>; veja a nota[^1].

Instalação
----------

Instale com pip.

[^1]: A nota de rodapé explica o prazo.
[guia]: https://exemplo.com.br/guia
[manual]: https://exemplo.com.br/manual
[pypi]: https://pypi.org/project/busca
[pypi-badge]: https://img.shields.io/pypi/v/busca.svg
"""


def test_a_readme_s_underlined_headings_references_and_footnotes(tmp_path):
    """A GitHub README: its `Title\\n=====` heading was lost (the `=====` line was text, the
    title the file's name), `[o guia][guia]` kept its brackets, an autolink and a footnote's
    text were dropped (words a reader sees)."""
    path = tmp_path / "README.md"
    path.write_text(README, encoding="utf-8")
    [doc] = list(read_files([str(path)]))
    assert doc.title == "Projeto Busca"
    assert doc.text.splitlines() == [
        "Projeto Busca", "Build PyPI",
        "Leia o guia, o manual e https://exemplo.com.br/ajuda; veja a nota.",
        "Instalação", "Instale com pip.", "A nota de rodapé explica o prazo."]
    assert [h[1:] for h in doc.meta["headings"]] == [[1, "Projeto Busca", "projeto-busca"],
                                                     [2, "Instalação", "instalação"]]
    assert all(doc.text[at:].startswith(words) for at, _, words, _ in doc.meta["headings"])
    text, _ = markdown_text("Um item:\n\n- item\n---\nfim")  # a rule under a list item
    assert text == "Um item:\nitem\nfim"


def test_an_obsidian_note_s_links_callouts_and_title(tmp_path):
    """An Obsidian note: `[[Página|apelido]]`, `![[imagem.png]]` and `> [!tip]- Título` were
    stored as typed, and a note without a `# ` heading was titled by a `###` further down.
    Now what Obsidian shows, and the note's file name as its title."""
    path = tmp_path / "Callouts.md"
    path.write_text("Use callouts, veja [[Configuração|a configuração]] e [[#Tipos]].\n\n"
                    "> [!tip]- Dica dobrável\n> Corpo da dica.\n> ![[imagem.png]]\n\n"
                    "> [!note]\n> Sem título.\n\n### Tipos\n\nVeja [[Notas#Prazos]].\n",
                    encoding="utf-8")
    [doc] = list(read_files([str(path)]))
    assert doc.title == "Callouts"
    assert doc.text.splitlines() == [
        "Use callouts, veja a configuração e Tipos.", "Dica dobrável", "Corpo da dica.",
        "Note", "Sem título.", "Tipos", "Veja Notas > Prazos."]


def test_boxes_tabs_imports_and_shortcodes_leave_their_titles_only():
    """MkDocs `!!! note "T"`/`=== "Aba"`, FastAPI's `/// tip | Dica`, Docusaurus `:::tip T`
    and MDX imports, Hugo `{{< x >}}`: their marks were stored and shown in every prompt."""
    source = ("import Tabs from '@theme/Tabs';\n\n"
              '!!! warning "Atenção"\n\n    Corpo.\n\n'
              '=== ":octicons-mark-github-16: Linux"\n\n    ```bash\n    pip install busca\n'
              "    ```\n\n//// tab | Teste\n/// tip | Dica\nTexto.\n///\n////\n\n"
              ":::note[Nota]\n\nUm.\n\n:::\n\n:::tip\n\nDois.\n\n:::\n\n"
              '{{< figure src="a.png" >}}\n{{% tab "Mac" %}}Instale.{{% /tab %}}\n')
    assert markdown_text(source)[0].splitlines() == [
        "Atenção", "Corpo.", "Linux", "pip install busca", "Teste", "Dica", "Texto.",
        "Nota", "Um.", "Tip", "Dois.", "Instale."]


def test_anchors_are_github_s_for_punctuation_and_repeated_headings():
    """`## C++ & Go` was cited as #c-go (GitHub: #c--go), and a second `## Exemplo` as the
    first one's #exemplo (GitHub: #exemplo-1)."""
    _, headings = markdown_text("## Exemplo\n\na\n\n## C++ & Go\n\nb\n\n## Exemplo\n\nc\n\n"
                                "## Exemplo\n\nd")
    assert [h[3] for h in headings] == ["exemplo", "c--go", "exemplo-1", "exemplo-2"]
