"""`busca crawl`: summary on stdout, progress and notes on stderr, exit codes, JSON report."""

from __future__ import annotations

import json
import socket

import pytest

from busca.crawler.store import Document
from busca.index.home.documents import Store
from busca.fixtures.platforms import PLATFORMS, PlatformSite
from busca.fixtures.server import FixtureSite, Faults, load_articles

FAST = ["--rate", "500"]


def test_crawl_then_index(run, home):
    with FixtureSite(load_articles()[:5]) as site:
        result = run("crawl", site.url, *FAST)
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith(f"crawled {site.url} via wordpress: 5 added, 0 updated,"
                                    " 0 unchanged, 0 deleted; 0 failed;")
    assert f"source: wordpress at {site.url}wp-json/ (Link header" in result.stderr
    with Store(home) as store:
        assert store.count() == 5 and {d.source for d in store.documents()} == {"wordpress"}
    indexed = run("index", "--quiet")
    assert indexed.exit_code == 0 and "indexed 5 documents" in indexed.stdout


def test_second_crawl_and_json_report(run):
    with FixtureSite(load_articles()[:3]) as site:
        run("crawl", site.url, *FAST)
        site.remove(site.articles[0]["id"])
        result = run("crawl", site.url, *FAST, "--json")
    report = json.loads(result.stdout)
    assert (report["added"], report["unchanged"], report["deleted"]) == (0, 2, 1)
    assert report["source"] == "wordpress" and report["failures"] == [] and report["stopped"] is None


def test_a_crawl_that_cannot_start_still_reports_in_json(run):
    """--json: a report on stdout (it was empty), the one-line error on stderr, exit 1."""
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{probe.getsockname()[1]}/"
    result = run("crawl", url, "--json", "--retries", "0")
    assert result.exit_code == 1 and "Traceback" not in result.output
    report = json.loads(result.stdout)
    assert report["url"] == url and report["documents"] == 0 and not report["interrupted"]
    assert report["stopped"] in result.stderr


def test_every_crawl_report_in_json_has_the_keys_of_one_that_could_not_finish(run):
    """A script reads `documents` and `interrupted` whatever the crawl's end: a finished
    crawl's report lacked both (a KeyError), which only an unfinished one carried."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{probe.getsockname()[1]}/"
    unfinished = json.loads(run("crawl", url, "--json", "--retries", "0").stdout)
    with FixtureSite(load_articles()[:3]) as site:
        run("crawl", site.url, *FAST)
        site.remove(site.articles[0]["id"])
        finished = json.loads(run("crawl", site.url, *FAST, "--json").stdout)
    assert set(unfinished) <= set(finished)
    assert (finished["documents"], finished["unchanged"], finished["deleted"]) == (2, 2, 1)
    assert finished["interrupted"] is False and finished["stopped"] is None


def test_failures_are_listed_by_reason(run):
    articles = load_articles()[:4]
    articles[0]["content"] = articles[2]["content"] = ""
    with FixtureSite(articles) as site:
        result = run("crawl", site.url, *FAST, "--source", "sitemap")
    assert result.exit_code == 0
    assert "  failed (2): no text found in the page (empty article?); nothing stored:" in result.stdout
    assert result.stderr.count("failed: ") == 2


def test_nothing_fetched_exits_1_with_one_line(run):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    result = run("crawl", f"http://127.0.0.1:{port}/", "--retries", "0")
    assert result.exit_code == 1
    assert result.stderr.strip().splitlines()[-1] == (
        f"Error: cannot fetch http://127.0.0.1:{port}/: connection refused by"
        f" 127.0.0.1:{port}; is the site up and the port right?")
    assert "Traceback" not in result.output


def test_a_first_crawl_that_cannot_start_leaves_no_home(run, home):
    """`busca --home H crawl URL` of a site that is down left H with an empty busca.db:
    `busca stats` then showed "documents 0 / no index yet: run busca index" and every later
    command took it for a real, empty site. The failed first crawl now leaves nothing, so
    H reads as the mistyped or never-crawled home it is; a home that held anything before
    is kept as it was."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{probe.getsockname()[1]}/"
    result = run("crawl", url, "--retries", "0")
    assert result.exit_code == 1 and "connection refused" in result.stderr
    assert not home.exists()
    stats = run("stats")
    assert stats.exit_code == 1 and "the folder does not exist" in stats.stderr
    Store(home).close()  # a home that was there before, even empty, stays
    assert run("crawl", url, "--retries", "0", "--json").exit_code == 1
    assert (home / "busca.db").is_file()
    with Store(home) as store:
        store.put(Document("https://a.example/1", "Ação", "O prazo é de sete dias."))
    assert run("crawl", url, "--retries", "0").exit_code == 1
    with Store(home) as store:
        assert store.count() == 1


def test_api_refused_exits_1(run):
    with FixtureSite(load_articles()[:2], faults=Faults(api_status=403)) as site:
        result = run("crawl", site.url, *FAST, "--source", "wordpress")
    assert result.exit_code == 1
    assert "the site refuses its API to anonymous clients (HTTP 403" in result.stderr


def test_empty_site_exits_1(run):
    with FixtureSite([]) as site:
        result = run("crawl", site.url, *FAST)
    assert result.exit_code == 1
    assert "nothing could be fetched" in result.stderr and "the site listed no documents" in result.stderr


def test_bad_usage_exits_2(run):
    result = run("crawl", "https://s.example/", "--source", "rss")
    assert result.exit_code == 2 and "'rss' is not one of 'auto', 'wordpress'" in result.stderr
    result = run("crawl", "https://s.example/", "--types", "posts,media")
    assert result.exit_code == 2 and '"media" is not a post type but another WordPress' \
        " collection; choose posts, pages or a custom type's REST name" in result.stderr
    result = run("crawl", "https://s.example/", "--rate", "0")
    assert result.exit_code == 2


def test_bad_url_exits_1(run):
    result = run("crawl", "example.com")
    assert result.exit_code == 1
    assert "'example.com' has no scheme; did you mean https://example.com ?" in result.stderr


def test_json_source_options(run, home):
    with FixtureSite(load_articles()[:4], ghost=True) as site:
        result = run("crawl", site.url + "ghost/api/content/posts/?key=k&limit=2", *FAST,
                     "--source", "json", "--json-items", "posts", "--json-body", "html",
                     "--json-modified", "updated_at", "--json-page-param", "page",
                     "--json-next", "meta.pagination.next")
    assert result.exit_code == 0, result.output
    assert "via json: 4 added" in result.stdout
    with Store(home) as store:
        assert {d.source for d in store.documents()} == {"json"}


def test_help_shows_an_example(run):
    result = run("crawl", "--help")
    assert "Example: busca crawl https://example.com" in result.stdout
    assert "[default: 2.0" in result.stdout


def test_max_pages_used_up_on_listings_says_so(run):
    with FixtureSite(load_articles()[:5], wordpress=False, sitemap=False, feed=False) as site:
        result = run("crawl", site.url, *FAST, "--max-pages", "1")
    assert result.exit_code == 1
    assert result.stderr.strip().splitlines()[-1] == (
        f"Error: nothing could be fetched from {site.url}: the --max-pages budget (1) was used"
        " up before any document was found; raise --max-pages")


def test_crawl_delay_note_is_printed_once(run):
    with FixtureSite(load_articles()[:2], crawl_delay=0.3) as site:
        result = run("crawl", site.url, *FAST)
    assert result.exit_code == 0
    assert result.stderr.count("asks for 0.3 s between requests") == 1


def test_a_post_whose_link_is_a_number_is_reported_not_a_crash(run, home):
    articles = load_articles()[:4]
    with FixtureSite(articles) as site:
        first = run("crawl", site.url, *FAST)
        site.faults = Faults(numeric_links=frozenset({articles[1]["id"]}))
        result = run("crawl", site.url, *FAST)
        as_json = json.loads(run("crawl", site.url, *FAST, "--json").stdout)
    assert first.exit_code == 0
    assert result.exit_code == 0, result.output
    assert "Traceback" not in result.output
    assert result.stdout.startswith(f"crawled {site.url} via wordpress: 0 added, 0 updated,"
                                    " 3 unchanged, 0 deleted; 1 failed;")
    assert (f"  failed (1): malformed post skipped: link is int '{articles[1]['id']}', not a"
            " URL: ") in result.stdout
    assert [f["reason"] for f in as_json["failures"]] == [
        f"malformed post skipped: link is int '{articles[1]['id']}', not a URL"]
    with Store(home) as store:  # its stored copy stays: the post may still exist
        assert store.count() == 4 and all(isinstance(u, str) for u in store.hashes())


def test_a_site_capping_per_page_is_crawled_through_its_api(run, home):
    with FixtureSite(load_articles()[:12], per_page_max=10) as site:
        result = run("crawl", site.url, *FAST)
    assert result.exit_code == 0, result.output
    assert "via wordpress: 12 added" in result.stdout and "0 failed" in result.stdout
    assert ("note: the WordPress API refuses per_page=100 (per_page must be between 1"
            " (inclusive) and 10 (inclusive)); reading 10 posts per page") in result.stderr


@pytest.mark.parametrize("platform", PLATFORMS)
def test_crawl_names_the_platform_it_found_from_the_url_alone(run, home, platform):
    with PlatformSite(platform=platform, articles=load_articles()[:4]) as site:
        result = run("crawl", site.home, *FAST)
    assert result.exit_code == 0, result.output
    assert f"source: {platform} at " in result.stderr
    assert f"via {platform}: 4 added" in result.stdout


def test_json_paging_and_metadata_options(run, home):
    with PlatformSite(platform="mediawiki", articles=load_articles()[:4], page_cap=3) as site:
        result = run("crawl", site.url + "w/api.php?action=query&generator=allpages&prop="
                     "revisions|info&inprop=url&rvprop=content&rvslots=main&formatversion=2",
                     *FAST, "--source", "json", "--json-items", "query.pages",
                     "--json-url", "fullurl", "--json-body", "revisions.0.slots.main.content",
                     "--json-continue", "continue", "--json-meta", "language=pagelanguage")
    assert result.exit_code == 0, result.output
    assert "via json: 4 added" in result.stdout
    with Store(home) as store:
        assert {d.meta["language"] for d in store.documents()} == {"pt-br"}


def test_json_meta_needs_name_and_path(run):
    result = run("crawl", "http://127.0.0.1:9/", "--source", "json", "--json-meta", "tags")
    assert result.exit_code == 2 and "is not NAME=PATH" in result.output
