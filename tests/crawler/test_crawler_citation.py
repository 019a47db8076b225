"""Citations finer than the URL: a PDF's page, or the section under the passage's best
window (`URL#anchor` and "Heading › Subheading"), from headings kept at extraction."""

from __future__ import annotations

import json

from busca.citation import cite, section
from busca.crawler.html import body, extract_page
from busca.index.home.documents import Store
from busca.fixtures.platforms import PlatformSite
from busca.fixtures.server import load_articles
from busca.fixtures.shapes import paragraphs

HTML = ('<p>Intro</p><h2 id="reembolso">Reembolso</h2><p>Texto a.</p>'
        '<h3><a name="prazos"></a>Prazos</h3><p>Sete dias.</p><h2>Outro</h2><p>b</p>')


def test_headings_are_found_at_their_offsets_with_level_and_anchor():
    text, headings = body(HTML)
    assert headings == ((6, 2, "Reembolso", "reembolso"), (25, 3, "Prazos", "prazos"),
                        (43, 2, "Outro", ""))
    for offset, _, heading, _ in headings:
        assert text[offset:].startswith(heading)
    page = extract_page(f"<html><body><article><h1>T</h1>{HTML}</article></body></html>")
    assert page.title == "T" and page.headings == headings  # the title is not a section


def test_section_path_and_anchor_of_an_offset():
    meta = {"headings": [list(h) for h in body(HTML)[1]]}
    url = "https://s.example/ajuda"
    assert (cite(url, meta, 0), section(meta, 0)) == (url, "")
    assert (cite(url, meta, 30), section(meta, 30)) == (url + "#prazos", "Reembolso › Prazos")
    assert section(meta, 45) == "Outro" and cite(url, meta, 45) == url  # no anchor: the URL


def test_context_cites_the_mkdocs_section_of_the_answer(run, home):
    articles = [a for a in load_articles() if len(paragraphs(a)) >= 3][:6]
    with PlatformSite(platform="mkdocs", articles=articles) as site:
        assert run("crawl", site.home, "--rate", "500").exit_code == 0
        target = articles[2]
        url = site.link(target)
    assert run("index", "-q", "--size", "30", "--overlap", "5").exit_code == 0
    third = body(paragraphs(target)[2])[0]
    question = " ".join(third.split()[:12])
    result = run("context", question, "--json")
    assert result.exit_code == 0, result.output
    passage = json.loads(result.stdout)["passages"][0]
    assert (passage["url"], passage["cite"], passage["section"]) == (
        url, url + "#parte-3", "Parte 3")
    prompt = run("context", question).stdout
    assert f"[fonte: {url}#parte-3] {target['title']} — Parte 3" in prompt
    with Store(home) as store:
        assert store.get(url).meta["headings"][0][1:] == [2, "Parte 2", "parte-2"]


NOTES = """# Manual da loja

O atendimento funciona de segunda a sexta pelo chat do painel.

## Reembolso

Quando o cliente cancela dentro da garantia, o valor pago é devolvido.

```
# não é um título
```

### Prazos

O estorno aparece na fatura em até sete dias úteis após a confirmação.
"""


def test_added_markdown_is_cited_by_its_heading(run, home, tmp_path):
    path = tmp_path / "notas.md"
    path.write_text(NOTES, encoding="utf-8")
    assert run("add", str(path)).exit_code == 0
    assert run("index", "-q", "--size", "8", "--overlap", "2").exit_code == 0
    result = run("context", "estorno aparece na fatura em sete dias úteis", "--json")
    passage = json.loads(result.stdout)["passages"][0]
    assert passage["cite"] == path.resolve().as_uri() + "#prazos"
    assert passage["section"] == "Manual da loja › Reembolso › Prazos"


# a Sphinx or MkDocs heading: a number in a span, a permalink right after the words, an
# inline tag inside a word, a <br> — a reader sees one heading, not "Instalação ¶"
SPHINX = ('<h2 id="instalacao"><span class="section-number">3.1. </span>Instalação'
          '<a class="headerlink" href="#instalacao">¶</a></h2><p>Texto um.</p>'
          '<h3 id="intro">Intro<em>dução</em> rápida</h3><p>Texto dois.</p>'
          '<h3>Passo<br>final</h3><p>Texto três.</p>')


def test_a_heading_with_inline_markup_is_a_section_where_its_line_starts():
    text, headings = body(SPHINX)
    assert [(level, anchor) for _, level, _, anchor in headings] == [
        (2, "instalacao"), (3, "intro"), (3, "")]
    assert headings[0][2].startswith("3.1. Instalação")  # its lines as the text has them
    assert [h[2] for h in headings[1:]] == ["Introdução rápida", "Passo final"]
    for offset, _, heading, _ in headings:
        assert text[offset:].startswith(heading.split()[0])
    meta = {"headings": [list(h) for h in headings]}
    assert section(meta, text.index("Texto três")) == f"{headings[0][2]} › Passo final"


def _html_lines_run(html: str) -> int:
    """How many lines of crawler/html.py extracting `html` runs: its work, on any machine."""
    import sys

    from busca.crawler import html as module

    count = 0

    def trace(frame, event, arg):
        nonlocal count
        if frame.f_code.co_filename != module.__file__:
            return None
        count += event == "line"
        return trace

    previous = sys.gettrace()  # a coverage tool's, if any
    sys.settrace(trace)
    try:
        body(html)
    finally:
        sys.settrace(previous)
    return count


PERMALINKS = """<html><body><div role="main"><section id="instalacao">
<h1>Instalação<a class="headerlink" href="#instalacao" title="Link to this heading">¶</a></h1>
<p>Como instalar.</p><section id="requisitos">
<h2><span class="section-number">1.1. </span>Requisitos<a class="headerlink" href="#requisitos">¶</a></h2>
<p>Python 3.11.</p></section>
<h2 id="proprio">Próprio<a class="hash-link" href="#proprio">​</a></h2><p>Texto.</p>
<h2>Veja <a href="#outro">outro capítulo</a></h2><p>Mais.</p></section></div></body></html>"""


def test_a_headings_permalink_is_its_anchor_not_its_text():
    """Sphinx and MkDocs end each heading with `<a class="headerlink" href="#id">¶</a>` and
    put the id on the enclosing <section>: the title was "Instalação¶", every heading path
    carried "¶", and a citation had no #anchor. A link with words in a heading stays text."""
    page = extract_page(PERMALINKS, "https://docs.example/instalacao.html")
    assert page.title == "Instalação" and "¶" not in page.text
    assert [(level, text, anchor) for _, level, text, anchor in page.headings] == [
        (2, "1.1. Requisitos", "requisitos"), (2, "Próprio", "proprio"),
        (2, "Veja outro capítulo", "")]


def test_a_long_page_of_headings_is_read_in_time_proportional_to_it():
    def page(n: int) -> str:  # Sphinx's single-page manual: headings with a permalink
        return "".join(f'<h2>Parte {i}<a class="headerlink" href="#p{i}">¶</a></h2>'
                       f"<p>Texto da parte {i}.</p><p>Mais texto.</p>" for i in range(n))

    small, large = _html_lines_run(page(150)), _html_lines_run(page(600))
    assert large < 5 * small  # 4× the page: about 4× the work, not 16×
