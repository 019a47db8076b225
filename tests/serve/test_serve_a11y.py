"""The page for every user, in a real Chromium against the real `busca serve`: a screen reader
(the browser's own accessibility tree, through the DevTools protocol: no axe-core offline), a
keyboard, a phone's width and a user who asks for less motion."""

from __future__ import annotations

import pytest
import test_serve_pages  # skips this module too without chromium and chromedriver
from test_serve_pages import wait_for

from selenium.webdriver.common.by import By
from serving import Server, faceted_home

browser = test_serve_pages.browser  # the same headless Chromium fixture

QUESTION = "Qual a universidade pioneira no Brasil em engenharia de software?"


@pytest.fixture(scope="module")
def server(served_home):
    with Server(served_home, "--no-log", "--quiet") as s:
        yield s


def ax_nodes(driver) -> list[dict]:
    """The page's accessibility tree as a screen reader gets it (ignored nodes left out)."""
    nodes = driver.execute_cdp_cmd("Accessibility.getFullAXTree", {})["nodes"]
    return [n for n in nodes if not n.get("ignored")]


def role(node: dict) -> str:
    return node.get("role", {}).get("value", "")


def name(node: dict) -> str:
    return node.get("name", {}).get("value", "")


def searchbox(driver) -> dict:
    return next(n for n in ax_nodes(driver) if role(n) == "searchbox")


@pytest.mark.parametrize("width", [320, 360])
def test_every_view_fits_a_phone_without_sideways_scrolling(browser, server, width):
    """At 360 px (and WCAG's 320), the search box's own width pushed the Search button out of
    the screen, and /eval's tables widened the whole page: the page scrolled sideways. Now
    only a wide table scrolls, inside its own box. A long word or path (the run's golden set
    in a clone's folder) wraps instead of widening the page."""
    long = "anticonstitucionalissimamente" * 3  # a word (or a path) no line break fits
    views = ["", f"?q={QUESTION}&method=bm25", f"?q={QUESTION}&method=compare", "eval",
             "eval?q=p01", f"?q={long}&method=bm25", f"?q={long}&method=compare",
             f"eval?run={long}"]
    browser.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {
        "width": width, "height": 740, "deviceScaleFactor": 1, "mobile": False})
    try:
        for view in views:
            browser.get(server.url + view)
            wait_for(browser, "main")
            wide, seen = browser.execute_script(
                "return [document.scrollingElement.scrollWidth, window.innerWidth]")
            assert wide <= seen, f"/{view}: {wide} px wide in a {seen} px screen"
        button = browser.find_element(By.CSS_SELECTOR, "#search button, nav a")
        assert button.rect["x"] + button.rect["width"] <= width
    finally:
        browser.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})


def test_crawled_text_is_read_in_its_own_language(browser, server, tmp_path):
    """The page speaks English (lang="en") but the passages are Portuguese: a screen reader
    read "universidade" with an English voice. Titles, snippets and whole passages now carry
    the index's language (the one the context prompt speaks: pt, or en for an index analyzed
    as English), in the search, compare and eval views."""
    from click.testing import CliRunner
    from conftest import write_jsonl

    from busca.cli import cli

    def langs(css: str) -> set[str]:
        return set(browser.execute_script(
            "return [...document.querySelectorAll(arguments[0])].map(e => e.closest('[lang]')"
            ".lang)", css))

    for method, css in (("bm25", "#hits .hit"), ("compare", "#compare .card")):
        browser.get(f"{server.url}?q={QUESTION}&method={method}")
        wait_for(browser, css)
        assert browser.find_element(By.TAG_NAME, "html").get_attribute("lang") == "en"
        assert langs(f"{css} .title") == langs(f"{css} .snippet") == {"pt"}
        assert langs(f"{css} .src, {css} summary, .meta") == {"en"}  # busca's own words
    browser.get(server.url + "eval?q=p01")
    wait_for(browser, "#detail .card")
    assert langs("#detail .card .title") == {"pt"}

    docs = [{"url": f"https://a.example/{n}", "title": f"The platypus {n}",
             "text": f"The platypus number {n} lays eggs and swims in the river."}
            for n in range(3)]
    home = tmp_path / "home"
    for args in (["add", str(write_jsonl(tmp_path / "d.jsonl", docs))],
                 ["index", "-q", "--methods", "bm25", "--analyzer", "en"]):
        result = CliRunner().invoke(cli, ["--home", str(home), *args], obj={})
        assert result.exit_code == 0, result.output
    with Server(home, "--no-log", "--quiet") as s:
        browser.get(f"{s.url}?q=platypus&method=bm25")
        wait_for(browser, "#hits .hit")
        assert langs("#hits .title") == langs("#hits .snippet") == {"en"}


def test_the_outcome_of_a_search_is_read_with_the_box(browser, server):
    """After a search the cursor is back in the box (autofocus): a screen reader read the
    box and its question, never how many passages came, that nothing was found or that the
    request was refused. The box is now described by that line."""
    cases = ((f"?q={QUESTION}&method=bm25", "3 passages"),
             ("?q=xyzzy+qwfpgj&method=bm25", "nothing found"),
             (f"?q={QUESTION}&method=bm25&k=lots", "k must be a whole number"))
    for query, said in cases:
        browser.get(server.url + query)
        wait_for(browser, "#q")
        box = searchbox(browser)
        assert said in box.get("description", {}).get("value", ""), (query, box)
    browser.get(server.url)  # no search yet: nothing to describe
    wait_for(browser, "#q")
    assert not searchbox(browser).get("description", {}).get("value")


def test_headings_lead_to_the_page_and_to_the_results(browser, server):
    """The search page had no heading at all: a screen reader's heading keys found nothing.
    It has a level-1 heading, and the results (a list, a compare view or "nothing found") a
    level-2 one, unseen on screen, so the look is unchanged."""
    for query in (f"?q={QUESTION}&method=bm25", f"?q={QUESTION}&method=compare",
                  "?q=xyzzy+qwfpgj&method=bm25"):
        browser.get(server.url + query)
        wait_for(browser, "#q")
        headings = [(name(n), {p["name"]: p["value"].get("value") for p in n["properties"]}
                     ["level"]) for n in ax_nodes(browser) if role(n) == "heading"]
        assert headings[0][1] == 1 and ("Results", 2) in headings, (query, headings)
        hidden = browser.find_element(By.XPATH, "//main//h1")
        assert hidden.size["height"] <= 1 and hidden.size["width"] <= 1


def test_hits_rank_and_score_are_named(browser, server):
    """A hit's head was read "1 3.7951 Engenharia de software": two bare numbers. They are
    now read as "rank 1" and "score 3.7951", the words unseen on screen."""
    for method, css in (("bm25", "#hits .hit"), ("compare", "#compare .card")):
        browser.get(f"{server.url}?q={QUESTION}&method={method}")
        hit = wait_for(browser, css)[0]
        rank, score = browser.execute_script(
            "return ['.rank', '.score'].map(c => arguments[0].querySelector(c).lastChild"
            ".textContent)", hit)
        assert rank == "1" and float(score) > 0
        texts = [name(n) for n in ax_nodes(browser) if role(n) == "StaticText"]
        at = texts.index(rank)
        assert texts[at - 1: at + 3] == ["rank", rank, "score", score], texts
        for word in hit.find_elements(By.CSS_SELECTOR, ".head .sr-only"):
            assert word.size["width"] <= 1 and word.size["height"] <= 1  # the look is kept


def test_an_active_facet_value_says_it_removes_the_filter(browser, tmp_path):
    """An active facet value was a link named "Frete ×" (read "Frete times"): it now says,
    as the chip's × does, that it removes the filter."""
    with Server(faceted_home(tmp_path), "--no-log", "--quiet") as s:
        browser.get(f"{s.url}?q=prazo&method=bm25&filter=category%3DFrete")
        wait_for(browser, "#facets li.active a")
        links = [name(n) for n in ax_nodes(browser) if role(n) == "link"]
        assert links.count("remove the filter category=Frete") == 2, links  # chip and facet
        assert "Frete ×" not in links


def test_highlights_and_the_search_box_stand_out_not_by_faint_colour_alone(browser, server):
    """The highlight (#ffe58a on white, 1.25:1) and the search box's border (1.26:1 against
    the page) were below the 3:1 WCAG asks of what tells a word or a control apart. A
    highlight now also has a line under it, and the box a border of 3:1."""
    ratio = """
      function lum(c) { return c.match(/[\\d.]+/g).slice(0, 3).map(Number).map(v => {
          v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); })
        .reduce((s, v, i) => s + v * [0.2126, 0.7152, 0.0722][i], 0); }
      const [a, b] = [lum(arguments[0]), lum(arguments[1])];
      return (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);"""
    browser.get(f"{server.url}?q={QUESTION}&method=bm25")
    mark = wait_for(browser, "#hits .snippet mark")[0]
    under = mark.value_of_css_property("border-bottom-color")
    assert float(mark.value_of_css_property("border-bottom-width").rstrip("px")) >= 1
    card = mark.find_element(By.XPATH, "ancestor::li").value_of_css_property("background-color")
    assert browser.execute_script(ratio, under, card) >= 3
    text = mark.value_of_css_property("color")
    assert browser.execute_script(ratio, text, mark.value_of_css_property("background-color")) \
        >= 4.5
    box = browser.find_element(By.ID, "q")
    page = browser.find_element(By.TAG_NAME, "body").value_of_css_property("background-color")
    assert browser.execute_script(ratio, box.value_of_css_property("border-top-color"),
                                  page) >= 3


def test_a_user_who_asks_for_less_motion_sees_no_flash(browser, server):
    """The compare view's rank link flashes the card it leads to; with prefers-reduced-motion
    it no longer animates (the card is still scrolled to)."""
    browser.execute_cdp_cmd("Emulation.setEmulatedMedia", {
        "features": [{"name": "prefers-reduced-motion", "value": "reduce"}]})
    try:
        browser.get(f"{server.url}?q={QUESTION}&method=compare")
        link = wait_for(browser, "#compare a.rank-link")[0]
        target = link.get_attribute("href").split("#")[1]
        link.click()
        card = browser.find_element(By.ID, target)
        assert "flash" in card.get_attribute("class")
        assert card.value_of_css_property("animation-name") == "none"
    finally:
        browser.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": []})


def test_the_link_to_what_is_shown_says_so(browser, server):
    """The header's link to this page, the run shown and the two methods compared on /eval
    were told apart by colour alone (class=active): a screen reader did not know which was
    current. Each is now aria-current, and the runs' navigation is named apart from the
    header's (two unnamed navigation landmarks before)."""
    for view, shown in (("", 1), ("eval", 3)):
        browser.get(server.url + view)
        wait_for(browser, "main")
        active = browser.find_elements(By.CSS_SELECTOR, "a.active")
        assert len(active) == shown
        assert [a.get_attribute("aria-current") for a in active] == ["page"] + ["true"] * (
            shown - 1)
        assert len(browser.find_elements(By.CSS_SELECTOR, "[aria-current]")) == shown
    navigations = [name(n) for n in ax_nodes(browser) if role(n) == "navigation"]
    assert len(navigations) == len(set(navigations)) == 2
