"""Pages of a paged listing remembered between crawls: each page's validators (ETag,
Last-Modified), the documents it held and the page after it. A later crawl asks for the page
with If-None-Match / If-Modified-Since; a 304 means its documents are unchanged and the next
page is the remembered one, so an unchanged listing sends no article body again.

Kept in the site state `crawl:site:<listing>#pages`; `--full` ignores it.
"""

from __future__ import annotations

from collections.abc import Mapping

from .options import Context


def conditional_headers(validators: dict) -> dict:
    """If-None-Match / If-Modified-Since from a stored {"etag", "last_modified"}."""
    headers = {}
    if validators.get("etag"):
        headers["If-None-Match"] = validators["etag"]
    if validators.get("last_modified"):
        headers["If-Modified-Since"] = validators["last_modified"]
    return headers


class Memo:
    """The remembered pages of one listing (keyed by the listing's URL without paging)."""

    def __init__(self, ctx: Context, listing: str):
        self.ctx, self.key = ctx, f"{listing}#pages"
        self.pages: dict = {} if ctx.options.full else dict(
            ctx.site_state(self.key).get("pages") or {})
        self.stored = set(ctx.store.hashes())

    def headers(self, url: str) -> dict:
        """Conditional headers for `url`, when what the page held is still stored."""
        entry = self.pages.get(url)
        if not isinstance(entry, dict) or not isinstance(entry.get("items"), list) \
                or any(item not in self.stored for item in entry["items"]):
            return {}
        return conditional_headers(entry)

    def replay(self, url: str) -> tuple[list[str], str | None]:
        """(the documents, the next page) of a page that answered 304."""
        entry = self.pages[url]
        return list(entry["items"]), entry.get("next")

    def remember(self, url: str, headers: Mapping[str, str], items: list[str],
                 following: str | None) -> None:
        """Keep a page that was read whole (every item stored), if it has validators."""
        etag, modified = headers.get("ETag"), headers.get("Last-Modified")
        if etag or modified:
            self.pages[url] = {"etag": etag, "last_modified": modified, "items": items,
                               "next": following}
        else:
            self.pages.pop(url, None)
        self.ctx.set_site_state(self.key, {"pages": self.pages})

    def forget(self, url: str) -> None:
        self.pages.pop(url, None)
