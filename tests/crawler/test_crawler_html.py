"""HTML to clean text: main content, separate lines, entities, chrome dropped, charsets."""

from __future__ import annotations

import pytest

from busca.crawler.html import (body_text, decode_html, extract_page, html_to_text, plain_text,
                                title_text)

PAGE = """<!DOCTYPE html><html lang="pt-BR"><head><meta charset="utf-8">
<title>Regulamento &#8211; Ensino Superior</title>
<link rel="https://api.w.org/" href="/wp-json/">
<link rel="alternate" type="application/rss+xml" href="/feed/">
<link rel="canonical" href="https://site.example/regulamento/">
<style>p { color: red }</style><script>var segredo = "não";</script>
</head><body>
<header><a href="/">Início</a><nav><a href="/categoria/">Categoria</a></nav></header>
<main><article>
<header class="entry-header"><h1>Regulamento &amp; normas</h1><p>por Redação</p></header>
<div class="entry-content">
<p>Primeiro&nbsp;parágrafo com <strong>ênfase</strong> e <a href="/link/">link</a>.</p>
<h2>Prazos</h2>
<ul><li>Matrícula: 7 dias</li><li>Rematrícula: <em>15</em> dias</li></ul>
<table><tr><th>Curso</th><td>Computação</td></tr></table>
<figure><img src="x.jpg" alt="foto"><figcaption>Foto: arquivo</figcaption></figure>
<p>Linha um<br>linha dois</p>
<form><input name="q"><button>Buscar</button></form>
<script>document.write("anúncio")</script>
</div>
<footer class="entry-footer">Tags: normas</footer>
</article></main>
<aside><h2>Posts recentes</h2><ul><li>Outro</li></ul></aside>
<footer>Rodapé do site</footer>
</body></html>"""

EXPECTED_TEXT = "\n".join([
    "Primeiro parágrafo com ênfase e link.",
    "Prazos",
    "Matrícula: 7 dias",
    "Rematrícula: 15 dias",
    "Curso",
    "Computação",
    "Linha um",
    "linha dois",
])


def test_article_text_is_clean_lines():
    title, text = html_to_text(PAGE)
    assert title == "Regulamento & normas"
    assert text == EXPECTED_TEXT


def test_page_metadata_and_links():
    page = extract_page(PAGE, "https://site.example/regulamento/")
    assert page.api_root == "https://site.example/wp-json/"
    assert page.feeds == ("https://site.example/feed/",)
    assert page.canonical == "https://site.example/regulamento/"
    assert "https://site.example/categoria/" in page.links  # nav links are still followed
    assert "https://site.example/link/" in page.links
    assert not page.is_listing and not page.noindex


def test_title_falls_back_to_og_title_then_title_tag():
    og = '<head><meta property="og:title" content="Título OG"><title>T – Site</title></head><p>x</p>'
    assert html_to_text(og)[0] == "Título OG"
    assert html_to_text("<title> Só o título </title><p>x</p>")[0] == "Só o título"


def test_main_role_used_when_several_articles():
    html = ("<body><div role=main><article><h2>A</h2><p>um</p></article>"
            "<article><h2>B</h2><p>dois</p></article></div><div>fora</div></body>")
    page = extract_page(html)
    assert page.is_listing
    assert page.text == "A\num\nB\ndois"


def test_body_without_main_elements_uses_body():
    assert html_to_text("<body><nav>menu</nav><div>texto <b>solto</b></div></body>")[1] == \
        "texto solto"


def test_entities_nbsp_and_invisible_characters():
    html = "<p>R&amp;D&nbsp;&nbsp;em&#160;1&#8211;2 &lt;tag&gt; so\u00adft zero\u200bwidth</p>"
    assert body_text(html) == "R&D em 1–2 <tag> soft zerowidth"


def test_text_is_nfc():
    decomposed = "<p>cafe\u0301 e ac\u0327a\u0303o</p>"
    assert body_text(decomposed) == "café e ação"


def test_pre_keeps_its_lines():
    assert body_text("<p>código:</p><pre>a = 1\n\n   b = 2</pre>") == "código:\na = 1\nb = 2"


def test_comments_and_cdata_are_not_text():
    assert body_text("<p>a<!-- escondido -->b</p>") == "ab"


def test_body_text_keeps_headings_inside_the_body():
    assert body_text("<h1>Seção</h1><p>texto</p>") == "Seção\ntexto"
    assert html_to_text("<h1>Seção</h1><p>texto</p>") == ("Seção", "texto")


def test_plain_text_fields_are_normalised_line_by_line():
    assert body_text("linha  um\n\n  linha\tdois ") == "linha um\nlinha dois"
    assert plain_text("a\u00a0b\r\nc") == "a b\nc"


def test_title_text_decodes_wordpress_rendering():
    assert title_text("Normas &#8211; 2023 &#038; depois") == "Normas – 2023 & depois"
    assert title_text("  <em>Título</em>  com tag ") == "Título com tag"


def test_noindex_page():
    page = extract_page('<meta name="robots" content="noindex, follow"><p>x</p>')
    assert page.noindex


@pytest.mark.parametrize("content_type, body, expected", [
    ("text/html; charset=ISO-8859-1", "<p>ação</p>".encode("latin-1"), "<p>ação</p>"),
    ("text/html", '<meta charset="windows-1252"><p>ação “x”</p>'.encode("cp1252"),
     '<meta charset="windows-1252"><p>ação “x”</p>'),
    ("text/html", "<p>ação</p>".encode("utf-8"), "<p>ação</p>"),
    (None, "<p>ação</p>".encode("latin-1"), "<p>ação</p>"),  # undeclared, not UTF-8
    ("text/html; charset=UTF-8", "<p>matrícula “x”</p>".encode("cp1252"),
     "<p>matrícula “x”</p>"),  # declared UTF-8, written in cp1252
    ("text/html; charset=utf-8", "<p>ação</p>".encode() + " e sessão".encode("latin-1"),
     "<p>ação</p> e sessão"),  # UTF-8 with a Latin-1 part pasted in
    ("text/html; charset=bogus", "<p>ação</p>".encode("utf-8"), "<p>ação</p>"),
])
def test_decode_html(content_type, body, expected):
    assert decode_html(body, content_type) == expected


def test_deeply_nested_html_does_not_recurse():
    html = "<div>" * 3000 + "<p>fundo</p>" + "</div>" * 3000
    assert body_text(html) == "fundo"


def test_an_archive_with_one_post_is_a_listing():
    archive = ('<main><article><h2><a href="https://s.example/post/">Post</a></h2>'
               "<p>Resumo</p></article></main>")
    assert extract_page(archive, "https://s.example/category/x/").is_listing
    single = '<main><article><h1><a href="https://s.example/post/">Post</a></h1><p>x</p></article></main>'
    assert not extract_page(single, "https://s.example/post/").is_listing


def test_comments_marked_up_as_articles_do_not_make_a_listing():
    page = ('<main><article><header><h1>Post</h1></header><div><p>Corpo.</p></div></article>'
            '<div id="comments"><article class="comment-body"><p>Ótimo!</p></article>'
            '<article class="comment-body"><p>Concordo.</p></article></div></main>')
    result = extract_page(page, "https://s.example/post/")
    assert not result.is_listing
    assert (result.title, result.text) == ("Post", "Corpo.")
