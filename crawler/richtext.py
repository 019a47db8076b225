"""Text of the structured bodies headless CMSs return instead of HTML: Contentful's Rich Text
document (`nodeType`, `content`, text nodes' `value`) and Strapi 5's blocks (`type`,
`children`, text nodes' `text`). Each block (paragraph, heading, list item, quote, code) is a
line; inline nodes (text, links, marks) join within it. Embedded entries and assets carry no
text and are skipped."""

from __future__ import annotations

from .html import plain_text

_INLINE = {"text", "hyperlink", "entry-hyperlink", "asset-hyperlink", "resource-hyperlink",
           "link", "inline"}
_LISTS = {"unordered-list", "ordered-list", "list"}


def rich_to_text(value) -> str:
    """The text of a rich-text document or block list, one line per block."""
    lines: list[str] = []
    _blocks(value, lines)
    return plain_text("\n".join(lines))


def _blocks(node, lines: list[str]) -> None:
    if isinstance(node, list):
        for child in node:
            _blocks(child, lines)
        return
    if not isinstance(node, dict):
        return
    children = node.get("content", node.get("children"))
    kind = node.get("nodeType", node.get("type"))
    if kind in ("document", *_LISTS) or (
            isinstance(children, list) and any(_is_block(c) for c in children)):
        _blocks(children, lines)
    else:
        lines.append(_inline(node))


def _is_block(node) -> bool:
    if not isinstance(node, dict):
        return False
    kind = node.get("nodeType", node.get("type"))
    return kind not in _INLINE and isinstance(node.get("content", node.get("children")), list)


def _inline(node) -> str:
    if isinstance(node, list):
        return "".join(_inline(child) for child in node)
    if not isinstance(node, dict):
        return ""
    text = node.get("value", node.get("text"))
    if isinstance(text, str):
        return text
    return _inline(node.get("content", node.get("children", [])))


def is_rich(value) -> bool:
    """Whether a body value is structured rich text rather than a string."""
    return isinstance(value, (dict, list)) and bool(value)
