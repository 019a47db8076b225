"""Crawl messages a new user sees (issue 25 item 17), against the fixture site on 127.0.0.1."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time

import pytest

from busca.crawler.crawl import crawl
from busca.crawler.errors import CrawlError
from busca.crawler.events import Failed, Notice, SourceFound
from busca.crawler.options import CrawlOptions
from busca.index.home.documents import Store
from busca.fixtures.server import Faults, FixtureSite, load_articles

FAST = {"rate": 500.0, "backoff": 0.02, "timeout": 5.0}


@pytest.fixture
def store(tmp_path):
    with Store(tmp_path / "home") as s:
        yield s


def events(url: str, store: Store, **options) -> list:
    return list(crawl(url, store, options=CrawlOptions(**{**FAST, **options})))


def test_an_api_answering_html_is_named_and_auto_falls_back_to_the_sitemap(store, tmp_path):
    """It said "malformed JSON (Expecting value…)" and stored nothing."""
    articles = load_articles()[:5]
    with FixtureSite(articles, faults=Faults(api_html=True)) as site:
        found = events(site.url, store)
        with Store(tmp_path / "strict") as other:
            strict = events(site.url, other, source="wordpress")
            assert other.count() == 0
    assert [e.reason for e in strict if isinstance(e, Failed)][0].startswith(
        "an HTML page, not JSON")
    notices = [e.message for e in found if isinstance(e, Notice)]
    assert any("the WordPress API answers an HTML page, not JSON" in n
               and "looking for a sitemap" in n for n in notices), notices
    assert [e.source for e in found if isinstance(e, SourceFound)] == ["wordpress", "sitemap"]
    assert found[-1].report.counts["added"] == 5 and store.count() == 5
    assert not any("malformed JSON" in e.reason for e in found if isinstance(e, Failed))


def test_one_attempt_is_singular(store):
    """It said "HTTP 500 after 1 attempts"."""
    with FixtureSite(load_articles()[:2], faults=Faults(error_every=1)) as site:
        with pytest.raises(CrawlError, match=r"HTTP 500 after 1 attempt;"):
            events(site.url, store, retries=0)
        with pytest.raises(CrawlError, match=r"HTTP 500 after 2 attempts;"):
            events(site.url, store, retries=1)


@pytest.mark.parametrize("as_json", [[], ["--json"]])
def test_ctrl_c_stops_a_crawl_with_exit_code_130(tmp_path, as_json):
    """It exited 1; 130 (128 + SIGINT) is what shells and scripts expect. With --json a
    report still comes on stdout (it printed nothing)."""
    with FixtureSite(load_articles()[:5], faults=Faults(latency=1.0)) as site:
        proc = subprocess.Popen(
            [sys.executable, "-m", "busca.cli", "--home", str(tmp_path / "home"), "crawl",
             site.url, *as_json], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            # a runner started in the background ignores SIGINT, and a child inherits that:
            # the child gets the default, as a command typed at a terminal has
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        deadline = time.monotonic() + 60
        while not site.hits() and time.monotonic() < deadline:  # the crawl has begun
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "interrupted; the 0 documents read so far are stored" in err
    assert "Traceback" not in err
    if as_json:
        report = json.loads(out)
        assert report["interrupted"] is True and report["documents"] == 0
        assert report["url"] == site.url and report["stopped"].startswith("interrupted;")


def test_https_to_a_plain_http_site_names_the_http_url(store):
    """It said "TLS error talking to 127.0.0.1:P: HTTPSConnectionPool(... WRONG_VERSION_NUMBER
    ...)" and never suggested http://."""
    with FixtureSite(load_articles()[:1]) as site:
        https = site.url.replace("http://", "https://")
        with pytest.raises(CrawlError) as caught:
            events(https, store, retries=0)
    host = https.split("//")[1].rstrip("/")
    assert f"does not speak HTTPS there; crawl http://{host}/ instead" in str(caught.value)


def test_a_timeout_names_the_option_that_waits_longer(store):
    with FixtureSite(load_articles()[:1], faults=Faults(latency=0.5)) as site:
        with pytest.raises(CrawlError, match=r"no data for 0.1 s; a longer --timeout waits more"):
            events(site.url, store, retries=0, timeout=0.1)


def test_sigterm_stops_a_crawl_as_ctrl_c_does_and_the_rerun_completes(tmp_path):
    """SIGTERM (`timeout`, a service manager, a CI job cancelled) ended the crawl silently,
    exit -15 and nothing on stdout for --json; now it is Ctrl-C's message and report, and what
    was stored stays for the rerun."""
    command = [sys.executable, "-m", "busca.cli", "--home", str(tmp_path / "home"), "crawl"]
    with FixtureSite(load_articles()[:8], faults=Faults(latency=0.2)) as site:
        proc = subprocess.Popen([*command, site.url, "--source", "sitemap", "--json"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 60
        while len(site.bodies_served()) < 3 and time.monotonic() < deadline:  # pages came
            time.sleep(0.05)
        time.sleep(0.3)  # and were stored
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 130, err
        assert "Traceback" not in err
        report = json.loads(out)
        stored = report["documents"]
        assert report["interrupted"] is True and 1 <= stored < 8
        assert f"interrupted; the {stored} documents read so far are stored" in err
        again = subprocess.run([*command, site.url, "--source", "sitemap", "--json"],
                               capture_output=True, text=True, timeout=120)
    second = json.loads(again.stdout)
    assert (second["added"], second["unchanged"]) == (8 - stored, stored)
