"""Main text of pages without <article> or <main>: trafilatura when installed (auto), busca's
extractor otherwise or when asked; measured in bench/bench_main_text.py."""

from __future__ import annotations

import json
import re
from collections import Counter

import pytest

from busca.crawler.crawl import crawl
from busca.crawler.errors import CrawlError
from busca.crawler.html import extract_page
from busca.crawler.maintext import check, with_main_text
from busca.crawler.options import CrawlOptions
from busca.index.home.documents import Store
from busca.fixtures.server import SITE_DIR, FixtureSite, load_articles

pytest.importorskip("trafilatura")

_LANDMARKS = re.compile(rb"<(/?)(article|main)\b")
PAGE = ("<html><head><title>Loja</title></head><body><div class=menu><a href=/>Início</a>"
        " <a href=/planos>Planos</a> <a href=/contato>Contato</a></div><div class=post>"
        "<h1>Reembolso</h1><p>Quando o cliente cancela a assinatura dentro do período de"
        " garantia, o valor pago é devolvido integralmente em até sete dias úteis.</p>"
        "<p>Pedidos cancelados depois da garantia não geram devolução do valor pago.</p></div>"
        "<div class=rodape>Todos os direitos reservados. Siga-nos nas redes.</div></body></html>")


def test_auto_uses_trafilatura_only_where_no_landmark_is_found():
    page = extract_page(PAGE, "https://loja.example/reembolso")
    assert not page.landmark and "Planos" in page.text  # busca keeps the menu here
    auto = with_main_text(page, PAGE, "auto")
    assert "Planos" not in auto.text and "direitos reservados" not in auto.text
    assert auto.text.startswith("Quando o cliente cancela") and auto.title == "Reembolso"
    assert with_main_text(page, PAGE, "busca") is page
    marked = PAGE.replace("<div class=post>", "<article>").replace("</p></div>", "</p></article>")
    landmark = extract_page(marked, "https://loja.example/reembolso")
    assert landmark.landmark and with_main_text(landmark, marked, "auto") is landmark


def test_an_unknown_choice_lists_the_valid_ones():
    with pytest.raises(CrawlError, match="choose one of auto, busca, trafilatura"):
        check("readability")


class UnknownTheme(FixtureSite):
    """The fixture theme with its <article> and <main> turned into <div>s."""

    def route(self, path, query, headers):
        reply = super().route(path, query, headers)
        if isinstance(reply.body, bytes) and b"<html" in reply.body[:200]:
            reply.body = _LANDMARKS.sub(rb"<\1div", reply.body)
            reply.headers.pop("ETag", None)
        return reply


def gold() -> dict[str, Counter]:
    lines = (SITE_DIR / "articles.jsonl").read_text("utf-8").splitlines()
    return {json.loads(l)["title"]: Counter(json.loads(l)["text"].replace("\u00ad", "").split())
            for l in lines}


@pytest.mark.parametrize("how, exact", [("auto", True), ("busca", False)])
def test_unknown_theme_crawled_to_the_article_words(tmp_path, how, exact):
    site = UnknownTheme(load_articles()[:8], wordpress=False, feed=False)
    with site, Store(tmp_path) as store:
        options = CrawlOptions(rate=1000, source="sitemap", main_text=how)
        report = list(crawl(site.url, store, options=options))[-1].report
        texts = {d.title: Counter(d.text.split()) for d in store.documents()}
    assert report.counts["added"] == 8
    words = gold()
    matches = [texts[title] == words[title] for title in texts]
    assert all(matches) if exact else not all(matches)
