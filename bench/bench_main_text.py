"""Main text of theme pages: busca's extractor (crawler/html.py) against trafilatura.

    python bench/bench_main_text.py

Pages: the 39 article pages of the bundled fixture site (a WordPress theme: header, nav,
sidebar, comment form and footer around an <article>), fetched from a FixtureSite on
127.0.0.1, and the same pages as an unknown theme would serve them: <article> and <main>
turned into <div> (no landmark to find). Gold: each article's FaQuAD text. Score: F1 of
the multiset of words (lowercased, split on whitespace) of the extracted text against the
gold's; the mean, the lowest page, and the pages/s of each extractor.
"""

from __future__ import annotations

import argparse
import json
import re
import time
import urllib.request
from collections import Counter
from statistics import mean

from busca.crawler.html import extract_page
from busca.crawler.maintext import main_text
from busca.fixtures.server import SITE_DIR, FixtureSite

_LANDMARKS = re.compile(r"<(/?)(article|main)\b")


def f1(text: str, gold: str) -> float:
    """Bag-of-words F1 of `text` against `gold`."""
    got, want = Counter(text.lower().split()), Counter(gold.lower().split())
    common = sum((got & want).values())
    if not common:
        return 0.0
    precision, recall = common / sum(got.values()), common / sum(want.values())
    return 2 * precision * recall / (precision + recall)


def pages() -> list[tuple[str, str]]:
    """(page HTML, gold text) of every article of the fixture site."""
    gold = {}
    for line in (SITE_DIR / "articles.jsonl").read_text("utf-8").splitlines():
        item = json.loads(line)
        gold[item["title"]] = item["text"].replace("\u00ad", "")
    with FixtureSite() as site:
        out = []
        for article in site.articles:
            with urllib.request.urlopen(site.link(article)) as response:
                out.append((response.read().decode("utf-8"), gold[article["title"]]))
    return out


def score(name: str, extract, cases: list[tuple[str, str]]) -> None:
    started = time.perf_counter()
    texts = [extract(html) for html, _ in cases]
    seconds = time.perf_counter() - started
    scores = [f1(text, gold) for text, (_, gold) in zip(texts, cases)]
    print(f"  {name:12} F1 mean {mean(scores):.4f}  lowest {min(scores):.4f}"
          f"  {len(cases) / seconds:6.1f} pages/s")


def main() -> None:
    argparse.ArgumentParser(description=__doc__.split("\n\n")[0]).parse_args()
    cases = pages()
    unknown = [(_LANDMARKS.sub(r"<\1div", html), gold) for html, gold in cases]
    for label, group in (("fixture theme (<article>)", cases), ("unknown theme (no landmark)",
                                                                unknown)):
        print(f"{label}, {len(group)} pages:")
        score("busca", lambda html: extract_page(html).text, group)
        score("trafilatura", main_text, group)


if __name__ == "__main__":
    from cli_errors import guarded
    guarded(main)
