"""MediaWiki wikitext as plain text: what a reader of the rendered page sees, roughly.

Templates (`{{…}}`), tables, references, comments, files and categories are dropped; links
keep their label; bold and italic quotes go; `== Heading ==` lines keep their words.
"""

from __future__ import annotations

import re
from html import unescape

from .html import COMMENT, TAG, plain_text, without_spans

_REF = re.compile(r"<ref([^<>]*)>", re.I)  # an opening (or self-closing) <ref …> tag
_TABLE = re.compile(r"^\{\|", re.M)
_TABLE_END = re.compile(r"^\|\}", re.M)
_FILE = re.compile(r"\[\[(?:File|Image|Arquivo|Imagem|Ficheiro|Category|Categoria):[^][]*"
                   r"(?:\[\[[^][]*\]\][^][]*)*\]\]", re.I)
_LINK = re.compile(r"\[\[(?:[^][|]*\|)?([^][]*)\]\]")
_EXTERNAL = re.compile(r"\[(?:https?:)?//[^][\s]+\s*([^][]*)\]")
_QUOTES = re.compile(r"'{2,}")
_LIST = re.compile(r"^[*#:;]+\s*", re.M)
_MAGIC = re.compile(r"__[A-Z]+__")
_BRACES = re.compile(r"\{\{|\}\}")
# Each pattern stops at the next bracket or tag, and a span without its end is searched once:
# a crawled page of 50,000 "[[" or "<ref>" took a regex 10-50 s (each one searched to the end).


def wikitext_to_text(source: str) -> str:
    """Plain text of a wikitext page, one line per paragraph, heading or list item."""
    text = without_spans(source, COMMENT, "-->")
    text = _refs_removed(text)
    text = _drop_templates(text)
    text = without_spans(text, _TABLE, _TABLE_END)
    text = _FILE.sub("", text)
    text = _LINK.sub(r"\1", text)
    text = _EXTERNAL.sub(r"\1", text)
    text = "\n".join(map(_heading, text.split("\n")))
    text = _LIST.sub("", _QUOTES.sub("", _MAGIC.sub("", TAG.sub("", text))))
    return plain_text(unescape(text))


def _heading(line: str) -> str:
    """`== Heading ==` as its words (the shorter run of `=` on either side closes it, as
    MediaWiki reads `=== A ==`: "= A"); any other line as it is. (A regex with a back
    reference took minutes on a line of 20,000 "=".)"""
    body = line.rstrip()
    if not body.startswith("="):
        return line
    run = min(len(body) - len(body.lstrip("=")), len(body) - len(body.rstrip("=")),
              len(body) // 2)
    return body[run:len(body) - run].strip() if run else line


def _drop_templates(text: str) -> str:
    """Remove `{{…}}`, nested ones too: each `}}` closes the last open `{{`; a `{{` never
    closed, or a `}}` that closes none, stays as text (the pairs inside it go)."""
    spans, open_at = [], []
    for brace in _BRACES.finditer(text):
        if brace.group() == "{{":
            open_at.append(brace.start())
        elif open_at:
            spans.append((open_at.pop(), brace.end()))
    kept, at = [], 0
    for start, end in sorted(spans):
        if start >= at:  # the outermost of nested pairs
            kept.append(text[at:start])
            at = end
    return "".join(kept) + text[at:]


def _refs_removed(text: str) -> str:
    """`text` without its references: `<ref name=x/>` tags, and `<ref …>…</ref>` spans (a
    `<ref>` without a `</ref>` after it stays, as a regex left it)."""
    lower, kept, at, closed = text.lower(), [], 0, True
    for tag in _REF.finditer(text):
        if tag.start() < at:
            continue
        if "/" not in tag.group(1)[:-1] and tag.group(1).endswith("/"):
            end = tag.end()
        elif closed and (found := lower.find("</ref>", tag.end())) >= 0:
            end = found + len("</ref>")
        else:
            closed = False
            continue
        kept.append(text[at:tag.start()])
        at = end
    return "".join(kept) + text[at:]
