"""Issue #26: WordPress metadata (categories, tags, author, dates) kept, returned, filtered."""

from __future__ import annotations

import json

from busca import corpus as api
from busca.fixtures.server import FixtureSite

FAST = {"rate": 500.0, "backoff": 0.02, "timeout": 5.0, "source": "wordpress"}
TAGS = {0: ["Pesquisa", "Ensino"], 1: ["Ensino"]}  # article position -> tag names


def _site() -> FixtureSite:
    site = FixtureSite()
    for position, tags in TAGS.items():
        site.articles[position]["tags"] = list(tags)
    return site


def _crawl(home, url: str) -> None:
    with api.open(home) as corpus:
        list(corpus.crawl(url, **FAST))


def _expected(site: FixtureSite, article: dict) -> dict:
    names = {c["id"]: c["name"] for c in site.categories}
    ids = [c for c in article.get("categories", []) if isinstance(c, int)] or [1]
    meta = {"categories": [names[i] for i in ids if i in names], "author": "Autor 1",
            "date": article["date"], "modified": article["modified"], "type": "post"}
    return {**meta, **({"tags": article["tags"]} if article.get("tags") else {})}


def test_search_json_hits_carry_each_posts_metadata(run, home):
    with _site() as site:
        _crawl(home, site.url)
        assert run("index", "-q").exit_code == 0
        by_url = {site.link(a): a for a in site.articles}
        seen = set()
        for query in ("curso", "pesquisa", "ensino superior", "história"):
            result = run("search", query, "--json", "-k", "10", "--no-serve")
            for line in result.stdout.splitlines():
                hit = json.loads(line)
                assert hit["meta"] == _expected(site, by_url[hit["url"]]), hit["url"]
                seen.add(hit["url"])
        assert len(seen) >= 10
        tagged = site.link(site.articles[0])
        result = run("search", "informação", "--json", "-k", "10", "--no-serve",
                     "--filter", "tags=Pesquisa")
        urls = {json.loads(line)["url"] for line in result.stdout.splitlines()}
        assert urls == {tagged}


def test_a_change_of_tags_alone_is_picked_up_by_the_next_crawl(home):
    with _site() as site:
        _crawl(home, site.url)
        article = site.articles[1]
        modified = article["modified_gmt"]
        article["tags"] = ["Extensão"]  # WordPress need not bump `modified` for this
        _crawl(home, site.url)
        assert article["modified_gmt"] == modified
        with api.open(home) as corpus:
            assert corpus.home.get(site.link(article)).meta["tags"] == ["Extensão"]
            assert corpus.home.get(site.link(site.articles[0])).meta["tags"] == TAGS[0]
