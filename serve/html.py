"""HTML building blocks. Every text from a crawled site (titles, URLs, passages) and every
request parameter goes through `esc` or `marked`; URLs become links only when they are
http(s), so a `javascript:` URL from a site is shown as text, never followed."""

from __future__ import annotations

from html import escape
from urllib.parse import urlencode, urlsplit

from starlette.responses import HTMLResponse

from ..search.facets import SKIPPED  # a document's structure, not labels
from ..search.highlight import strip_controls

CURRENT = ' class=active aria-current="true"'  # the link to what is shown: seen and read
CURRENT_PAGE = ' class=active aria-current="page"'  # the navigation's link to this page


def esc(value: object) -> str:
    """Text made safe for element content and quoted attribute values, shown as it reads:
    without controls or bidi overrides (`strip_controls`)."""
    return escape(strip_controls("" if value is None else str(value)), quote=True)


def marked(text: str, spans: list[tuple[int, int]]) -> str:
    """`text` escaped, with each (start, end) span wrapped in <mark>."""
    out, at = [], 0
    for a, b in spans:
        if a < at:
            continue
        out += [esc(text[at:a]), "<mark>", esc(text[a:b]), "</mark>"]
        at = b
    out.append(esc(text[at:]))
    return "".join(out)


def source_link(url: str, label: str | None = None) -> str:
    """A link to the source article, or plain text when the URL is not http(s)."""
    label = esc(label if label is not None else url)
    try:
        scheme = urlsplit(url).scheme.lower()
    except ValueError:
        scheme = ""
    if scheme not in ("http", "https"):
        return f'<span class="url" title="{label}">{label}</span>'
    return (f'<a href="{escape(url, quote=True)}" title="{label}" rel="noopener noreferrer'
            f' nofollow" target="_blank">{label}</a>')


def hit_title(text: str, lang: str = "") -> str:
    """A hit's title: cut to a few lines by the stylesheet, whole in its tooltip; `lang`, the
    site's language (the page's own words are English)."""
    return f'<span class="title"{lang_of(lang)} title="{esc(text)}">{esc(text)}</span>'


def lang_of(lang: str) -> str:
    """The `lang` attribute of a text from the site, so a screen reader reads it in its own
    language (empty when unknown)."""
    return f' lang="{esc(lang)}"' if lang else ""


def rank_score(rank: int, score: float) -> str:
    """A hit's rank and score, each read with its name (the names are unseen on screen)."""
    return (f'<span class="rank"><span class="sr-only">rank </span>{rank}</span>'
            f'<span class="score"><span class="sr-only">score </span>{score:.4f}</span>')


def meta_line(meta: dict | None) -> str:
    """A hit's metadata as one line of `key: values` (escaped; empty without metadata)."""
    if not meta:
        return ""
    items = (f"<span>{esc(key)}: {esc(', '.join(map(str, v)) if isinstance(v, list) else v)}"
             "</span>" for key, v in meta.items() if key not in SKIPPED and not isinstance(v, dict))
    return f'<div class="meta-line">{" · ".join(items)}</div>'


def local(path: str) -> str:
    """A link to `path` of this server relative to the page (`/eval` → `./eval`): every page
    sits at the top (/, /eval, /login), so its links work at the root of a name and under a
    reverse proxy's sub-path (`https://intra.example/busca/`) alike, with no header to trust."""
    return "." + path


def href(path: str, **query) -> str:
    """An escaped local link (`local`) with its query string (empty values left out; a list
    is a repeated parameter)."""
    kept = {k: v for k, v in query.items() if v not in (None, "", [])}
    return esc(local(path) + ("?" + urlencode(kept, doseq=True) if kept else ""))


def page(title: str, body: str, *, active: str, status: int = 200) -> HTMLResponse:
    """A whole page: header with navigation, then `body` (already escaped)."""
    nav = "".join(f'<a href="{href(p)}"{CURRENT_PAGE if name == active else ""}>{label}</a>'
                  for name, p, label in (("search", "/", "Search"), ("eval", "/eval", "Eval")))
    doc = f"""<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{esc(title)}</title>
<link rel="stylesheet" href="{href("/static/busca.css")}">
<link rel="icon" href="{href("/static/favicon.svg")}" type="image/svg+xml">
<script src="{href("/static/busca.js")}" defer></script>
</head>
<body>
<header><span class="brand">busca</span><nav>{nav}</nav></header>
<main>
{body}
</main>
</body>
</html>
"""
    return HTMLResponse(doc, status_code=status)


def table(headers: list[str], rows: list[list[str]], *, cls: str = "") -> str:
    """A table; headers are escaped here, cells must already be HTML."""
    head = "".join(f"<th>{esc(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    return (f'<div class="table-scroll"><table class="{esc(cls)}"><thead><tr>{head}</tr></thead>'
            f'<tbody>{body}</tbody></table></div>')


def notice(message: str, kind: str = "error", *, ident: str = "") -> str:
    """A message in a box; `ident`, its id (the search box is described by the outcome's)."""
    ident = f' id="{esc(ident)}"' if ident else ""
    return f'<p class="notice {esc(kind)}"{ident}>{esc(message)}</p>'


def error_page(status: int, message: str, **headers: str) -> HTMLResponse:
    """A page's error as a page (a browser shows it; the JSON of the API would show raw)."""
    answer = page(f"error {status} — busca", "<h1>busca</h1>" + notice(message),
                  active="", status=status)
    answer.headers.update(headers)
    return answer
