"""MediaWiki wikitext as plain text: what a reader of the rendered page sees, roughly.

Templates (`{{…}}`), tables, references, comments, files and categories are dropped; links
keep their label; bold and italic quotes go; `== Heading ==` lines keep their words.
"""

from __future__ import annotations

import re
from html import unescape

from .html import plain_text

_COMMENT = re.compile(r"<!--.*?-->", re.S)
_REF = re.compile(r"<ref[^>/]*/>|<ref[^>]*>.*?</ref>", re.S | re.I)
_TABLE = re.compile(r"^\{\|.*?^\|\}", re.S | re.M)
_FILE = re.compile(r"\[\[(?:File|Image|Arquivo|Imagem|Ficheiro|Category|Categoria):[^\[\]]*"
                   r"(?:\[\[[^\]]*\]\][^\[\]]*)*\]\]", re.I)
_LINK = re.compile(r"\[\[(?:[^|\]]*\|)?([^\]]*)\]\]")
_EXTERNAL = re.compile(r"\[(?:https?:)?//[^\s\]]+\s*([^\]]*)\]")
_HEADING = re.compile(r"^(=+)\s*(.*?)\s*\1\s*$", re.M)
_QUOTES = re.compile(r"'{2,}")
_LIST = re.compile(r"^[*#:;]+\s*", re.M)
_MAGIC = re.compile(r"__[A-Z]+__")
_TAG = re.compile(r"</?[A-Za-z][^>]*>")


def wikitext_to_text(source: str) -> str:
    """Plain text of a wikitext page, one line per paragraph, heading or list item."""
    text = _COMMENT.sub("", source)
    text = _REF.sub("", text)
    text = _drop_templates(text)
    text = _TABLE.sub("", text)
    text = _FILE.sub("", text)
    text = _LINK.sub(r"\1", text)
    text = _EXTERNAL.sub(r"\1", text)
    text = _HEADING.sub(r"\2", text)
    text = _LIST.sub("", _QUOTES.sub("", _MAGIC.sub("", _TAG.sub("", text))))
    return plain_text(unescape(text))


def _drop_templates(text: str) -> str:
    """Remove `{{…}}`, nested ones too, innermost first."""
    inner = re.compile(r"\{\{[^{}]*\}\}")
    while True:
        text, n = inner.subn("", text)
        if not n:
            return text
