"""The page in a real headless browser: Debian's chromium and chromedriver, driven by Selenium,
against the real `busca serve` on 127.0.0.1. Nothing is downloaded: both binaries come from
the distribution (.ci/run installs them)."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest

from serving import Server, faceted_home

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--window-size=1400,1000")
WAIT = 60

webdriver = pytest.importorskip("selenium.webdriver")
if not (CHROMIUM.exists() and CHROMEDRIVER.exists()) and not os.environ.get("CI"):
    pytest.skip("needs Debian's chromium and chromium-driver (apt-get install chromium"
                " chromium-driver); CI installs them", allow_module_level=True)

from selenium.common.exceptions import NoAlertPresentException  # noqa: E402
from selenium.webdriver.common.action_chains import ActionChains  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.common.keys import Keys  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402


@pytest.fixture(scope="module")
def browser():
    profile = tempfile.mkdtemp(prefix="busca-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in (*FLAGS, f"--user-data-dir={profile}"):
        options.add_argument(flag)
    service = webdriver.chrome.service.Service(str(CHROMEDRIVER))
    driver = webdriver.Chrome(service=service, options=options)
    driver.set_page_load_timeout(WAIT)
    yield driver
    driver.quit()
    shutil.rmtree(profile, ignore_errors=True)


@pytest.fixture(scope="module")
def server(served_home):
    with Server(served_home, "--no-log", "--quiet") as s:
        yield s


def wait_for(driver, css: str, count: int = 1):
    WebDriverWait(driver, WAIT).until(
        lambda d: len(d.find_elements(By.CSS_SELECTOR, css)) >= count)
    return driver.find_elements(By.CSS_SELECTOR, css)


def test_type_a_question_and_see_hits(browser, server):
    browser.get(server.url)
    box = wait_for(browser, "#q")[0]
    browser.find_element(By.CSS_SELECTOR, 'label.switch input[value="bm25"] + span').click()
    box.send_keys("Qual a universidade pioneira no Brasil em engenharia de software?",
                  Keys.ENTER)
    hits = wait_for(browser, "#hits .hit", 3)
    assert hits[0].find_element(By.CSS_SELECTOR, ".title").text == "Engenharia de software"
    marks = [m.text.lower() for m in browser.find_elements(By.CSS_SELECTOR, "#hits mark")]
    assert "engenharia" in marks and "universidades" in marks  # stemmed: universidade(s)
    state = parse_qs(urlsplit(browser.current_url).query)
    assert state["method"] == ["bm25"] and "pioneira" in state["q"][0]


def test_compare_view_links_the_same_passage_and_survives_a_reload(browser, server):
    question = "Como o PC consegue rodar vários aplicativos juntos?"
    browser.get(server.url)
    wait_for(browser, "#q")[0].send_keys(question, Keys.ENTER)
    wait_for(browser, "#hits .hit, .notice")
    browser.find_element(By.CSS_SELECTOR, 'label.switch input[value="compare"] + span').click()
    columns = wait_for(browser, "#compare .column", 4)
    assert [c.get_attribute("data-method") for c in columns] == \
        ["tfidf", "bm25", "dense", "hybrid"]
    assert "method=compare" in browser.current_url
    first = columns[0].find_element(By.CSS_SELECTOR, ".card")
    chunk = first.get_attribute("data-chunk")
    ActionChains(browser).move_to_element(first).perform()
    same = browser.find_elements(By.CSS_SELECTOR, f'#compare .card[data-chunk="{chunk}"]')
    assert len(same) >= 2 and all("linked" in c.get_attribute("class") for c in same)
    browser.refresh()
    wait_for(browser, "#compare .column", 4)
    assert browser.find_element(By.ID, "q").get_attribute("value") == question


def test_eval_page_chart_slices_and_a_question_detail(browser, server):
    browser.get(server.url + "eval")
    bars = wait_for(browser, "svg#chart rect.bar", 16)
    assert len(bars) == 16  # recall@1/3/5/10 x 4 methods
    slices = browser.find_elements(By.CSS_SELECTOR, "table.slices tbody tr")
    assert sorted(r.find_element(By.TAG_NAME, "td").text for r in slices) == \
        ["tipo = lexical", "tipo = parafrase"]
    link = browser.find_element(By.CSS_SELECTOR, "table.wins a.question")
    question = link.text
    link.click()
    detail = wait_for(browser, "#detail")[0]
    assert detail.find_element(By.TAG_NAME, "h2").text == question
    assert len(detail.find_elements(By.CSS_SELECTOR, ".column")) == 2
    assert detail.find_elements(By.CSS_SELECTOR, ".card.relevant")  # a lost question: found by A


def test_a_hostile_article_shows_as_text(browser, xss_home):
    from conftest import XSS_TITLE

    with Server(xss_home, "--no-log", "--quiet") as s:
        for method in ("bm25", "compare"):
            browser.get(f"{s.url}?q=ornitorrinco&method={method}")
            titles = [t.text for t in wait_for(browser, ".title", 3)]
            assert XSS_TITLE in titles
            cards = browser.find_elements(By.CSS_SELECTOR, ".card, .hit")
            ActionChains(browser).move_to_element(cards[0]).perform()
            assert browser.execute_script("return window.__xss === undefined")
            with pytest.raises(NoAlertPresentException):
                browser.switch_to.alert.text  # noqa: B018
            assert not browser.find_elements(By.CSS_SELECTOR, "main img, main b")


def test_a_facet_click_filters_and_its_chip_removes_the_filter(browser, tmp_path):
    """The facets beside the hits (issue #26): a click adds the filter to the URL, the hits
    and counts follow it, and the chip's × takes it away."""
    with Server(faceted_home(tmp_path), "--no-log", "--quiet") as s:
        browser.get(f"{s.url}?q=prazo&method=bm25")
        assert len(wait_for(browser, "#hits .hit", 3)) == 3
        facet = browser.find_element(By.CSS_SELECTOR, '#facets a[data-filter="category=Frete"]')
        assert facet.find_element(By.XPATH, "..").text.split() == ["Frete", "2"]
        facet.click()
        chip = wait_for(browser, "#filters .chip")[0]
        assert chip.get_attribute("data-filter") == "category=Frete"
        assert parse_qs(urlsplit(browser.current_url).query)["filter"] == ["category=Frete"]
        assert len(browser.find_elements(By.CSS_SELECTOR, "#hits .hit")) == 2
        box = browser.find_element(By.ID, "q")  # a new question keeps the filter
        box.clear()
        box.send_keys("entrega", Keys.ENTER)
        WebDriverWait(browser, WAIT).until(lambda d: "entrega" in d.current_url)
        assert parse_qs(urlsplit(browser.current_url).query)["filter"] == ["category=Frete"]
        browser.find_element(By.CSS_SELECTOR, "#filters .chip .remove").click()
        WebDriverWait(browser, WAIT).until(lambda d: "filter" not in d.current_url)
        assert len(wait_for(browser, "#hits .hit", 3)) == 3
        assert not browser.find_elements(By.CSS_SELECTOR, "#filters .chip")


def _checked(driver) -> list[str]:
    return [r.get_attribute("value") for r in
            driver.find_elements(By.CSS_SELECTOR, 'input[name="method"]') if r.is_selected()]


def test_back_and_forward_show_the_question_and_method_of_the_url(browser, server):
    """Back to a search: the box and the method switch say what the URL and the hits say,
    not what the form held when the page was left (the browser restores that state)."""
    browser.get(f"{server.url}?q=engenharia&method=bm25")
    wait_for(browser, "#hits .hit")
    box = browser.find_element(By.ID, "q")
    box.clear()
    box.send_keys("universidade")  # typed, then the method switched: a new search
    browser.find_element(By.CSS_SELECTOR, 'label.switch input[value="tfidf"] + span').click()
    WebDriverWait(browser, WAIT).until(lambda d: "method=tfidf" in d.current_url)
    browser.back()
    WebDriverWait(browser, WAIT).until(lambda d: "method=bm25" in d.current_url)
    wait_for(browser, "#hits .hit")
    WebDriverWait(browser, WAIT).until(lambda d: _checked(d) == ["bm25"])
    assert browser.find_element(By.ID, "q").get_attribute("value") == "engenharia"
    browser.forward()
    WebDriverWait(browser, WAIT).until(lambda d: "method=tfidf" in d.current_url)
    WebDriverWait(browser, WAIT).until(lambda d: _checked(d) == ["tfidf"])
    assert browser.find_element(By.ID, "q").get_attribute("value") == "universidade"


def test_arrow_keys_choose_a_method_and_enter_searches(browser, server):
    """A keyboard user moves through the method switch with the arrow keys without a search
    at each step (WCAG 3.2.2: a choice is not a navigation), then Enter searches."""
    browser.get(f"{server.url}?q=engenharia&method=tfidf")
    wait_for(browser, "#hits .hit")
    browser.find_element(By.CSS_SELECTOR, 'input[name="method"][value="tfidf"]').send_keys(
        Keys.ARROW_RIGHT)
    ActionChains(browser).send_keys(Keys.ARROW_RIGHT).perform()
    assert "method=tfidf" in browser.current_url
    assert _checked(browser) == ["dense"]
    assert browser.switch_to.active_element.get_attribute("value") == "dense"
    ActionChains(browser).send_keys(Keys.ENTER).perform()
    WebDriverWait(browser, WAIT).until(lambda d: "method=dense" in d.current_url)
    assert parse_qs(urlsplit(browser.current_url).query)["q"] == ["engenharia"]


def test_more_passages_from_the_page(browser, server):
    """The page showed k=3 passages and no way to a fourth but editing the URL: "more
    passages" asks for more, the URL keeps k (and the question, method and view)."""
    for method, found in (("bm25", "#hits .hit"), ("compare", "#compare .column[data-method="
                                                               '"bm25"] .card')):
        browser.get(f"{server.url}?q=engenharia&method={method}")
        assert len(wait_for(browser, found)) == 3
        browser.find_element(By.CSS_SELECTOR, "a.more").click()
        WebDriverWait(browser, WAIT).until(lambda d: "k=13" in d.current_url)
        assert len(wait_for(browser, found, 13)) == 13
        state = parse_qs(urlsplit(browser.current_url).query)
        assert state["q"] == ["engenharia"] and state["method"] == [method]
    for k, method in ((100, "hybrid"), (60, "bm25")):  # k at its cap; fewer hits than k
        browser.get(f"{server.url}?q=engenharia&method={method}&k={k}")
        assert 13 < len(wait_for(browser, "#hits .hit", 14)) <= k
        assert not browser.find_elements(By.CSS_SELECTOR, "a.more")


def test_a_huge_title_and_url_do_not_fill_the_page(browser, tmp_path):
    """A crawled page whose title is 3,000 characters (a bad <title>) took the whole screen
    in every hit and card: a title or URL shows at most a few lines, the whole of it on
    hover (its title attribute, escaped)."""
    from conftest import lexical_home_of

    long_title = "<b>Ornitorrinco</b> " + "palavra " * 400
    long_url = "https://a.example/" + "x" * 3000
    home = lexical_home_of(tmp_path / "home", [
        {"url": long_url, "title": long_title, "text": "O ornitorrinco bota ovos."},
        {"url": "https://a.example/b", "title": "Equidna", "text": "A equidna bota ovos."}])
    with Server(home, "--no-log", "--quiet") as s:
        for method, css in (("bm25", "#hits .hit"), ("compare", "#compare .card")):
            browser.get(f"{s.url}?q=ornitorrinco&method={method}")
            hit = wait_for(browser, css)[0]
            title = hit.find_element(By.CSS_SELECTOR, ".title")
            link = hit.find_element(By.CSS_SELECTOR, ".src a")
            line = browser.execute_script(
                "return parseFloat(getComputedStyle(arguments[0]).lineHeight)", title)
            assert title.size["height"] <= 3.5 * line and link.size["height"] <= 3.5 * line
            assert title.get_attribute("title") == long_title
            assert link.get_attribute("href") == long_url
            assert not browser.find_elements(By.CSS_SELECTOR, ".title b")


FRONT_END = """<!doctype html><meta charset="utf-8"><title>front end</title><pre id="out"></pre>
<script>
const api = new URLSearchParams(location.search).get("api");
fetch(api + "api/context", {
    method: "POST", body: JSON.stringify({q: "ornitorrinco", method: "bm25"}),
    headers: {"Content-Type": "application/json",
              "Authorization": "Bearer t0ken-of-the-front-end-42"}})
  .then(r => r.json().then(d => ({status: r.status, titles: d.passages.map(p => p.title)})))
  .catch(e => ({error: e.name}))
  .then(result => { document.getElementById("out").textContent = JSON.stringify(result); });
</script>"""


def test_a_front_end_of_another_origin_reads_the_api_only_with_cors(browser, tmp_path):
    """A web app served from another port (Vite's localhost:5173) POSTs JSON with a bearer
    token: the browser asks first (a preflight OPTIONS) and hides any answer that does not
    name the page's origin. With --cors that origin the page reads the passages; without
    it, fetch fails in the page (TypeError), as before."""
    import json
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from conftest import lexical_home_of

    class Page(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 - http.server's name
            body = FRONT_END.encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    home = lexical_home_of(tmp_path / "home", [
        {"url": "https://a.example/o", "title": "Ornitorrinco", "text": "O ornitorrinco nada."},
        {"url": "https://a.example/e", "title": "Equidna", "text": "A equidna bota ovos."}])
    pages = ThreadingHTTPServer(("127.0.0.1", 0), Page)
    threading.Thread(target=pages.serve_forever, daemon=True).start()
    origin = f"http://127.0.0.1:{pages.server_address[1]}"
    try:
        for cors in (("--cors", origin), ()):
            with Server(home, "--no-log", "--quiet", "--token", "t0ken-of-the-front-end-42",
                        *cors) as s:
                browser.get(f"{origin}/?api={s.url}")
                WebDriverWait(browser, WAIT).until(
                    lambda d: d.find_element(By.ID, "out").text)
                result = json.loads(browser.find_element(By.ID, "out").text)
                if cors:
                    assert result["status"] == 200, result
                    assert result["titles"][0] == "Ornitorrinco", result
                else:
                    assert result == {"error": "TypeError"}, result
    finally:
        pages.shutdown()
        pages.server_close()


def test_the_page_works_under_a_reverse_proxys_sub_path(browser, server):
    """Behind `location /busca/ { proxy_pass http://127.0.0.1:8000/; }` the page asked the
    proxy's root for /static/busca.css and busca.js (no style, no script) and its form, its
    method switch and its navigation left /busca/ (tests/serve/test_serve_proxy.py's proxy)."""
    from test_serve_proxy import Proxy

    proxy = Proxy(server.url, "/busca")
    base = f"http://127.0.0.1:{proxy.port}/busca/"
    try:
        browser.get(base + "?q=engenharia&method=tfidf")
        wait_for(browser, "#hits .hit")
        loaded = browser.execute_script(
            "return [...document.styleSheets].map(s => s.cssRules.length)")
        assert loaded and loaded[0] > 0  # the style sheet came through the proxy
        browser.find_element(By.CSS_SELECTOR, 'label.switch input[value="bm25"] + span').click()
        WebDriverWait(browser, WAIT).until(lambda d: "method=bm25" in d.current_url)  # busca.js
        assert browser.current_url.startswith(base) and wait_for(browser, "#hits .hit")
        box = browser.find_element(By.CSS_SELECTOR, "#q")
        box.clear()
        box.send_keys("universidade pioneira", Keys.ENTER)
        WebDriverWait(browser, WAIT).until(lambda d: "pioneira" in d.current_url)
        assert browser.current_url.startswith(base) and wait_for(browser, "#hits .hit")
        browser.find_element(By.LINK_TEXT, "Eval").click()
        WebDriverWait(browser, WAIT).until(lambda d: d.current_url.startswith(base + "eval"))
        assert wait_for(browser, "svg")
    finally:
        proxy.close()
