"""Every platform source end to end, against a fixture server of that platform's shape
(fixtures/platforms.py) serving the 39 bundled articles: found from the URL alone, each
article stored once with its metadata, a re-crawl storing nothing new, edits and deletions
followed."""

from __future__ import annotations

import pytest

from busca.crawler.crawl import crawl
from busca.crawler.errors import CrawlError
from busca.crawler.events import Failed, SourceFound, Stored
from busca.crawler.html import body_text
from busca.crawler.jsonapi import body_text_of
from busca.crawler.markdown import markdown_to_text, top_sections
from busca.crawler.options import CrawlOptions, JsonApiOptions
from busca.crawler.paging import MISSING, fill, first
from busca.crawler.richtext import rich_to_text
from busca.index.home.documents import Store
from busca.crawler.wikitext import wikitext_to_text
from busca.fixtures import platforms
from busca.fixtures.platforms import PLATFORMS, PlatformSite
from busca.fixtures.server import Faults, FixtureSite, load_articles
from busca.fixtures.shapes import author, categories, paragraphs

FAST = {"rate": 1000.0, "backoff": 0.01, "timeout": 5.0}
META = {  # what each platform's API gives about an article (at least these keys)
    "mediawiki": {"language", "authors", "categories"}, "drupal": {"language", "created"},
    "zendesk": {"section", "tags", "authors", "language", "created"},
    "mkdocs": {"language"}, "ghost": {"tags", "authors", "section", "published"},
    "discourse": {"section", "tags", "authors", "created"}, "blogger": {"tags", "authors"},
    "llms": set(), "strapi": {"language", "published", "created", "slug"},
    "contentful": {"content_type", "language", "created", "tags", "slug"},
    "substack": {"authors", "tags", "published", "audience"},
}
WHOLE_FILE = ("mkdocs", "llms")  # one file holds the site: a re-crawl gets a 304
HEADLESS = ("strapi", "contentful")  # the URL a user gives is the API itself


def run(url: str, store: Store, **options):
    events = list(crawl(url, store, options=CrawlOptions(**{**FAST, **options})))
    return events[-1].report, events


def expected_text(platform: str, article: dict) -> str:
    """The text each platform gives for an article: the WordPress text, plus MkDocs' section
    headings and the code block of llms-full.txt's first page."""
    if platform != "mkdocs":
        return body_text(article["content"])
    parts = paragraphs(article)
    lines = [body_text(parts[0])]
    for n, p in enumerate(parts[1:], start=2):
        lines += [f"Parte {n}", body_text(p)]
    return "\n".join(lines)


@pytest.mark.parametrize("platform", PLATFORMS)
def test_platform_found_from_the_url_alone_and_every_article_stored_once(tmp_path, platform):
    with PlatformSite(platform=platform) as site, Store(tmp_path) as store:
        report, events = run(site.home, store)
        found = [e for e in events if isinstance(e, SourceFound)]
        stored = [e.url for e in events if isinstance(e, Stored)]
        documents = {d.url: d for d in store.documents()}
        links = {site.link(a): a for a in site.articles}
    assert [f.source for f in found] == [platform], [f.detail for f in found]
    assert report.failures == () and report.counts["added"] == 39
    assert sorted(stored) == sorted(links) and set(documents) == set(links)
    for url, article in links.items():
        document = documents[url]
        assert document.source == platform and document.title == article["title"]
        text = expected_text(platform, article)
        if platform == "llms" and article is site.articles[0]:  # "# …" in a code block
            text += "\n# instala o cliente\npip install cliente"
        assert document.text == text
        assert META[platform] <= set(document.meta or {}), (url, document.meta)
        if platform == "mkdocs" and len(paragraphs(article)) > 1:
            assert document.meta["sections"][0] == ["parte-2", "Parte 2"]


@pytest.mark.parametrize("platform", PLATFORMS)
def test_recrawl_stores_nothing_new_then_follows_an_edit_and_a_deletion(tmp_path, platform):
    with PlatformSite(platform=platform) as site, Store(tmp_path) as store:
        run(site.home, store)
        first = len(site.log)
        report, _ = run(site.home, store)
        again = site.log[first:]
        assert report.counts == {"added": 0, "updated": 0, "metadata_updated": 0,
                                 "unchanged": 39, "deleted": 0}
        # no body travels again (a headless CMS's start URL is its API: discovery reads it)
        start = site.home.removeprefix(site.url.rstrip("/"))
        assert [h.bodies for h in again if h.bodies and h.path != start] == []
        assert len([h for h in again if h.bodies]) <= (platform in HEADLESS)
        assert len(again) <= first
        article = site.articles[3]
        edited = site.edit(article["id"], content=article["content"].replace(
            "</p>", " Frase nova.</p>", 1))
        gone = site.remove(site.articles[5]["id"])
        report, _ = run(site.home, store)
        assert report.counts == {"added": 0, "updated": 1, "metadata_updated": 0,
                                 "unchanged": 37, "deleted": 1}
        assert "Frase nova." in store.get(site.link(edited)).text
        assert store.get(site.link(gone)) is None


@pytest.mark.parametrize("platform", ["mediawiki", "discourse", "blogger"])
def test_faults_on_every_article_once(tmp_path, platform):
    faults = Faults(throttle_every=5, retry_after="0", error_every=7)
    with PlatformSite(platform=platform, faults=faults) as site, Store(tmp_path) as store:
        report, events = run(site.home, store)
        assert report.counts["added"] == 39 and store.count() == 39
    assert [e for e in events if isinstance(e, Failed)] == []


@pytest.mark.parametrize("platform", ["mediawiki", "drupal", "mkdocs", "discourse", "llms",
                                      "substack"])
def test_forced_source_probes_the_api_of_a_page_without_markers(tmp_path, platform):
    articles = load_articles()[:3]
    with PlatformSite(platform=platform, marker=False, articles=articles) as site, \
            Store(tmp_path) as store:
        auto, _ = run(site.home, store)
        assert auto.source == "html"  # no marker: auto does not guess
        report, _ = run(site.home, store, source=platform)
    assert report.source == platform and report.counts["added"] == 3


def test_forced_source_missing_names_what_and_the_way_out(tmp_path):
    with FixtureSite(load_articles()[:2]) as site, Store(tmp_path) as store:
        with pytest.raises(CrawlError, match=r"no MediaWiki api.php .* try --source sitemap"):
            run(site.url, store, source="mediawiki")


def test_ghost_page_without_a_key_says_so_and_falls_back(tmp_path, monkeypatch):
    monkeypatch.setitem(platforms._HEADS, "ghost", '<meta name="generator" content="Ghost 5.8">')
    with PlatformSite(platform="ghost", articles=load_articles()[:2]) as site, \
            Store(tmp_path) as store:
        report, _ = run(site.home, store)
    assert report.source == "html"
    assert any("carries no Content API key (data-key)" in n for n in report.notices)


def test_ghost_refusing_the_key_in_its_page_falls_back_in_auto_mode(tmp_path, monkeypatch):
    """A Content API answering 401 to the key the page carries (regenerated since; a cached
    page) stopped `busca crawl URL` with an error; auto mode goes on with the next source,
    saying why and how to give a valid key; `--source ghost` keeps the error."""
    head = platforms._HEADS["ghost"].replace("{key}", "0123456789abcdef0123456789")
    monkeypatch.setitem(platforms._HEADS, "ghost", head)
    with PlatformSite(platform="ghost", articles=load_articles()[:2]) as site, \
            Store(tmp_path / "a") as store, Store(tmp_path / "b") as forced_store:
        report, _ = run(site.home, store)
        forced, _ = run(site.home, forced_store, source="ghost")
    assert report.source == "html" and report.stopped is None
    [notice] = [n for n in report.notices if "Ghost" in n]
    assert "HTTP 401" in notice and '"Unknown Content API Key"' in notice
    assert "looking for a sitemap or feed instead" in notice
    assert f"give a valid key: busca crawl '{site.home}ghost/api/content/posts/?key=KEY'" \
        " --source json" in notice
    assert forced.stopped.startswith("the API refuses anonymous clients (HTTP 401")


def test_a_wordpress_site_is_still_read_through_its_api(tmp_path):
    with FixtureSite(load_articles()[:3]) as site, Store(tmp_path) as store:
        report, _ = run(site.url, store)
    assert report.source == "wordpress" and report.counts["added"] == 3


def test_wikitext_and_markdown_to_text():
    wiki = ("{{Info|a={{b}}}}'''Análise''' de [[Sistema|sistemas]] e [[rede]].<ref>x</ref>\n\n"
            "== Prazos ==\n* um [https://x.org dois] &amp; três\n[[Categoria:Teste]]")
    assert wikitext_to_text(wiki) == "Análise de sistemas e rede.\nPrazos\num dois & três"
    markdown = "## Título\n\n- um **dois** [três](/x)\n\n```\n# código\n```\n"
    assert markdown_to_text(markdown) == "Título\num dois três\n# código"
    # a headless CMS's Markdown body keeps its headings, as an HTML body does
    assert body_text_of(markdown, "auto") == ("Título\num dois três\n# código",
                                              ((0, 2, "Título", "título"),))
    assert top_sections("# A\nSource: u\n```\n# não\n```\n# B\nb") == [
        ("A", "Source: u\n```\n# não\n```"), ("B", "b")]


def test_strapi_4_attributes_and_markdown_bodies(tmp_path):
    with PlatformSite(platform="strapi", version=4) as site, Store(tmp_path) as store:
        report, events = run(site.home, store)
        documents = {d.url: d for d in store.documents()}
        links = {site.link(a): a for a in site.articles}
    assert [e.detail for e in events if isinstance(e, SourceFound)] == ["Strapi 4 collection"]
    assert report.counts["added"] == 39 and set(documents) == set(links)
    for url, article in links.items():
        assert documents[url].text == body_text(article["content"])
        assert documents[url].meta["slug"] == article["slug"]


def test_contentful_names_a_refused_token_and_takes_a_public_url_template(tmp_path):
    articles = load_articles()[:3]
    with PlatformSite(platform="contentful", articles=articles) as site, \
            Store(tmp_path) as store:
        with pytest.raises(CrawlError, match=r"Contentful refuses .*/entries: The access token"
                                             r" .* \(AccessTokenInvalid\); check .*access_token="):
            run(site.home.replace("fixture-delivery-token", "wrong"), store)
        assert store.count() == 0
        template = JsonApiOptions(url="https://blog.example/posts/{fields.slug}")
        report, _ = run(site.home, store, json=template)
        urls = sorted(d.url for d in store.documents())
    assert report.counts["added"] == 3
    assert urls == sorted(f"https://blog.example/posts/{a['slug']}" for a in articles)
    assert not any("token" in u for u in urls)


def test_rich_text_of_contentful_and_strapi_blocks():
    link = {"nodeType": "hyperlink", "data": {"uri": "x"},
            "content": [{"nodeType": "text", "value": "cinco dias"}]}
    document = {"nodeType": "document", "content": [
        {"nodeType": "heading-2", "content": [{"nodeType": "text", "value": "Prazos"}]},
        {"nodeType": "paragraph", "content": [{"nodeType": "text", "value": "Sai em "}, link,
                                              {"nodeType": "text", "value": "."}]},
        {"nodeType": "unordered-list", "content": [
            {"nodeType": "list-item", "content": [
                {"nodeType": "paragraph", "content": [{"nodeType": "text", "value": "um"}]}]}]},
        {"nodeType": "embedded-asset-block", "data": {"target": {}}, "content": []}]}
    assert rich_to_text(document) == "Prazos\nSai em cinco dias.\num"
    blocks = [{"type": "heading", "level": 2, "children": [{"type": "text", "text": "Ação"}]},
              {"type": "list", "format": "unordered", "children": [
                  {"type": "list-item", "children": [
                      {"type": "text", "text": "um "},
                      {"type": "link", "url": "x", "children": [{"type": "text", "text": "dois"}]},
                  ]}]}]
    assert rich_to_text(blocks) == "Ação\num dois"


def test_alternative_paths_and_dotted_url_templates():
    v4 = {"id": 7, "attributes": {"title": "A", "slug": "a"}}
    v5 = {"id": 8, "documentId": "d8", "title": "B", "slug": ""}
    assert first(v4, "attributes.title|title") == "A" and first(v5, "attributes.title|title") == "B"
    assert first(v5, "slug|attributes.slug") is MISSING  # "" counts as no value
    assert fill("/api/x/{documentId|id}", v4) == "/api/x/7"
    assert fill("/api/x/{documentId|id}", v5) == "/api/x/d8"
    assert fill("https://s/{sys.id}", {"sys": {"id": "e1"}}) == "https://s/e1"
    assert fill("https://s/{sys.id}", {"sys": {}}) is None
    assert fill("https://s/{slug", {"slug": "a"}) is None


@pytest.mark.parametrize("platform", ["zendesk", "drupal", "discourse", "mediawiki"])
def test_ids_in_the_metadata_become_names(tmp_path, platform):
    """Zendesk's sideloaded sections and users, Drupal's included tags, Discourse's
    /site.json categories: a document's metadata says "Notícias", not 360003."""
    with PlatformSite(platform=platform) as site, Store(tmp_path) as store:
        run(site.home, store)
        documents = {d.url: d for d in store.documents()}
        for article in site.articles:
            meta, names = documents[site.link(article)].meta, categories(site, article)
            if platform == "drupal":
                assert meta.get("tags", []) == names
            elif platform == "mediawiki":  # without the namespace, whatever the wiki's language
                assert meta["categories"] == names
            else:
                assert meta["section"] == (names or [None])[0]
            if platform == "zendesk":
                assert meta["authors"] == author(article)


def test_mediawiki_answers_cut_by_the_size_limit_are_continued(tmp_path):
    """A pageids batch whose answer carries only 4 texts (`rvcontinue`): the crawl continues
    it until each changed page has its text, and stores each once."""
    with PlatformSite(platform="mediawiki") as site, Store(tmp_path) as store:
        run(site.home, store)
        edited = [site.edit(a["id"], content=a["content"].replace("</p>", " Outra.</p>", 1))
                  for a in site.articles[:10]]
        report, events = run(site.home, store)
        texts = [h for h in site.log if "pageids=" in h.path and h.bodies]
        assert all("Outra." in store.get(site.link(a)).text for a in edited)
    assert [e for e in events if isinstance(e, Failed)] == []
    assert report.counts == {"added": 0, "updated": 10, "metadata_updated": 0,
                             "unchanged": 29, "deleted": 0}
    assert any("rvcontinue=" in h.path for h in texts)
