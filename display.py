"""Text for people: hits, side-by-side comparisons, highlighted snippets (no printing here).

The CLI decides the `Style` once (colour only on a terminal, never with NO_COLOR or
TERM=dumb; the terminal's width) and passes it in; with no colour and no terminal the text
is plain and stable, which is what pipes and tests read. Every text that came from a site
or a file goes through `strip_controls` before it is drawn, so no crawled byte drives the
terminal.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from dataclasses import dataclass

import click

from .search import Comparison, Hit, highlight

MISSED = "—"
WIDTH = 100  # characters when not on a terminal
QUESTION_CHARS = 120  # a question's characters in a table (busca misses; --json has it whole)
BESIDE = 30  # columns a compare snippet needs beside the ranks; fewer: it goes under them
UNDER = " " * 6  # the indent of a compare row's title and snippet under its ranks

strip_controls = highlight.strip_controls  # the CLI's name for it


def one_line(text: str) -> str:
    """A title, URL or question from a site or a file on one line (`strip_controls`, every
    run of whitespace, line breaks included, as one space): no line of its own can look
    like a hit."""
    return " ".join(strip_controls(text).split())


def shortened(text: str, chars: int = QUESTION_CHARS) -> str:
    """`text` cut to `chars` characters, "…" marking a cut (a table's column of questions)."""
    return text if len(text) <= chars else text[:chars - 1].rstrip() + "…"


@dataclass(frozen=True)
class Style:
    """How to draw: ANSI colour or not, the line width, wrapping or not."""

    colour: bool = False
    width: int = WIDTH
    wrap: bool = False  # wrap snippets at `width` (on a terminal)

    def paint(self, text: str, **how) -> str:
        return click.style(text, **how) if self.colour else text

    def snippet_chars(self) -> int:
        """Characters of a snippet: 240, or three lines of a narrow terminal."""
        return min(highlight.SNIPPET, 3 * (self.width - 6)) if self.wrap else highlight.SNIPPET


def marked_snippet(text: str, query: str, analyzer: str, style: Style, *, indent: str,
                   chars: int | None = None, focus: str | None = None) -> str:
    """A snippet of `text` with the query's words highlighted, wrapped on a terminal; it
    starts at the sentence holding `focus` (a golden passage) when `text` holds it."""
    chars = chars or style.snippet_chars()
    text, focus = strip_controls(text), focus and strip_controls(focus)
    at = text.find(" ".join(focus.split())) if focus else -1
    piece, found = highlight.snippet(text, query, analyzer, width=chars,
                                     at=at if at >= 0 else None)
    if style.wrap:
        lines = textwrap.wrap(piece, width=max(style.width - len(indent), 20))
        return "\n".join(indent + line for line in _mark_lines(lines, piece, found, style))
    return indent + _mark(piece, found, style)


def _mark(text: str, found, style: Style) -> str:
    if not style.colour:
        return text
    return highlight.mark(text, found, "\x1b[1;33m", "\x1b[0m")


def _mark_lines(lines: list[str], piece: str, found, style: Style) -> list[str]:
    """Highlight wrapped lines: each line's spans, found by its position in `piece`."""
    out, at = [], 0
    for line in lines:
        start = piece.find(line, at)
        at = start + len(line)
        inside = [(a - start, b - start) for a, b in found if a >= start and b <= at]
        out.append(_mark(line, inside, style))
    return out


def left_out(documents: int) -> str:
    """The note of a search that left out documents removed or changed since the build."""
    return (f"note: left out {documents} document{'s' * (documents != 1)} removed or changed"
            " since the index was built (run busca index to search the documents as they are"
            " now)")


def hits_text(hits: Sequence[Hit], query: str, analyzer: str, style: Style) -> str:
    """Each hit: rank, score, title, URL, then a highlighted snippet."""
    blocks = []
    for hit in hits:
        head = (f"{hit.rank}. {hit.score:.4f}  {style.paint(one_line(hit.title), bold=True)}"
                + "  " + style.paint(f"<{one_line(hit.url)}>", dim=True))
        blocks.append(head + "\n" + marked_snippet(hit.text, query, analyzer, style,
                                                   indent="   "))
    return "\n".join(blocks) + ("\n" if blocks else "")


def compare_text(comparison: Comparison, analyzer: str, style: Style, *,
                 relevant: set[int] | frozenset = frozenset(), focus: str | None = None) -> str:
    """The rank table: one line per chunk with its rank under every method, then its snippet.

    A rank within the top k is bold; deeper ranks (up to the comparison's depth) are plain;
    "—" is a miss. Relevant chunks (from a golden set) are marked with "✓" and their snippet
    starts at the golden passage `focus`.
    """
    methods = comparison.methods
    cell = max(6, *(len(m) + 2 for m in methods))
    indent = " " * (4 + cell * len(methods) + 3)
    beside = not style.wrap or style.width - len(indent) >= BESIDE
    if not beside:  # a narrow terminal: title and snippet under the ranks, wrapped to fit
        indent = UNDER
    chars = 2 * max(style.width - len(indent), 30)  # two lines beside the rank columns
    header = "    " + "".join(m.rjust(cell) for m in methods) + "   passage" * beside
    lines = [style.paint(header, bold=True)]
    for row in comparison.rows:
        mark = style.paint("✓", fg="green", bold=True) if row.chunk_id in relevant else " "
        ranks = "".join(_rank_cell(row.ranks[m], comparison.k, cell, style) for m in methods)
        title = (style.paint(one_line(row.title), bold=True) + "  "
                 + style.paint(f"<{one_line(row.url)}>", dim=True))
        lines.append(f"  {mark} {ranks}" + (f"   {title}" if beside else f"\n{indent}{title}"))
        lines.append(marked_snippet(row.text, comparison.query, analyzer, style,
                                    indent=indent, chars=chars,
                                    focus=focus if row.chunk_id in relevant else None))
    legend = _legend(comparison, bool(relevant), methods)
    if style.wrap:  # on a terminal, the legend and notes wrap at its width too
        legend = "\n".join(textwrap.fill(part, style.width) for part in legend.split("\n"))
    lines.append(legend)
    return "\n".join(lines) + "\n"


def _rank_cell(rank: int | None, k: int, cell: int, style: Style) -> str:
    if rank is None:
        return style.paint(MISSED.rjust(cell), dim=True)
    text = str(rank).rjust(cell)
    return style.paint(text, bold=True) if rank <= k else text


def _legend(comparison: Comparison, golden: bool, methods) -> str:
    text = (f"ranks under each method (top {comparison.k} shown, ranks counted to"
            f" {comparison.depth}; {MISSED} = not in the first {comparison.depth})")
    if comparison.per_doc:
        text += f"; at most {comparison.per_doc} window(s) per article"
    if golden:
        text += "; ✓ = holds the golden passage"
    notes = "".join(f"\n{m}: {strip_controls(why)}" for m, why in comparison.notes.items()
                    if m in methods)
    return text + notes
