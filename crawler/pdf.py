"""PDF text with its page numbers, through pypdf (the `pdf` extra: pip install 'busca[pdf]').

One PDF is one document: the pages' texts one after another, and in `meta["pages"]` the
character offset where each page starts, so a passage can be cited as `file.pdf#page=12`.
Pages without text (scanned images) are counted, not stored empty. The running header and
footer (a line at the top or bottom of most pages, page numbers aside) are left out, and a
word hyphenated at a line's end ("informa-" / "ção") is whole again.
"""

from __future__ import annotations

import io
import logging
import re
import unicodedata
from collections import Counter
from dataclasses import dataclass

from ..errors import BuscaError
from .html import plain_text

EXTRA = "pip install 'busca[pdf]'"


class PdfError(BuscaError):
    """A PDF that cannot be read (no pypdf, damaged, encrypted, or no text at all)."""


@dataclass(frozen=True)
class PdfText:
    """The text of a PDF, where each page starts in it, and the pages that had no text."""

    title: str
    text: str
    starts: tuple[tuple[int, int], ...]  # (page number from 1, character offset)
    empty: tuple[int, ...]  # pages without text (scanned?)
    pages: int

    def meta(self) -> dict:
        meta: dict = {"pages": [list(s) for s in self.starts], "page_count": self.pages}
        if self.empty:
            meta["pages_without_text"] = list(self.empty)
        return meta


def read_pdf(data: bytes) -> PdfText:
    """Text and page offsets of a PDF; PdfError naming the problem and the fix."""
    try:
        from pypdf import PdfReader
        from pypdf.errors import DependencyError, LimitReachedError, PyPdfError
    except ImportError:
        raise PdfError(f"reading PDFs needs pypdf: {EXTRA}") from None
    logging.getLogger("pypdf").setLevel(logging.ERROR)
    if b"%PDF-" not in data[:1024]:  # a web page or image saved as .pdf
        raise PdfError(f"not a PDF: it starts with {data[:12].decode('latin-1')!r}, not %PDF-;"
                       " give it the extension of what it is (.html, .txt) or fetch the PDF"
                       " again")
    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted and not reader.decrypt(""):
            raise PdfError("the PDF is encrypted with a password; decrypt a copy first (e.g."
                           " qpdf --password=PASSWORD --decrypt in.pdf out.pdf) and add it")
        texts = [_page_text(page) for page in reader.pages]
        title = (reader.metadata or {}).get("/Title") if reader.metadata else None
    except LimitReachedError:  # a stream that inflates past pypdf's limit (75 MB): a bomb
        raise PdfError("the PDF has a stream too large to decompress (over pypdf's limit);"
                       " busca does not read it") from None
    except DependencyError as e:
        raise PdfError(f"reading this PDF needs another package: {e}") from None
    except (PyPdfError, ValueError, KeyError, TypeError, OSError) as e:
        raise PdfError(f"damaged or unreadable PDF ({e})") from None
    pages = _joined_words(_without_running_lines([text.split("\n") if text else []
                                                  for text in texts]))
    return _assemble(["\n".join(lines) for lines in pages], str(title).strip() if title else "")


# typographic ligatures a PDF's fonts give ("ﬁcha"), as the letters a question types
LIGATURES = {c: unicodedata.normalize("NFKC", chr(c)) for c in range(0xFB00, 0xFB07)}


_SOFT_BREAK = re.compile(r"\u00ad[ \t]*(?=\r?\n)")  # a soft hyphen ending a line: a break


def _page_text(page) -> str:
    text = _SOFT_BREAK.sub("-", page.extract_text() or "")
    return unicodedata.normalize("NFC", plain_text(text).translate(LIGATURES))


_NUMBERS = re.compile(r"\d+")
EDGE = 2  # lines at the top and at the bottom of a page where a running line may be


def _without_running_lines(pages: list[list[str]]) -> list[list[str]]:
    """The pages' lines with their running header and footer once, where it first shows: a
    line among the first or last EDGE of at least 3 pages and 40% of the pages with text,
    its numbers aside ("Página 3 de 40" is "Página 7 de 40")."""
    seen = Counter(key for lines in pages
                   for key in {_running_key(line) for line in lines[:EDGE] + lines[-EDGE:]})
    least = max(3, 0.4 * sum(1 for lines in pages if lines))
    running = {key for key, n in seen.items() if n >= least}
    if not running:
        return pages
    kept, shown = [], set()
    for lines in pages:
        edges = {*range(EDGE), *range(len(lines) - EDGE, len(lines))}
        keys = [_running_key(line) if at in edges else "" for at, line in enumerate(lines)]
        kept.append([line for line, key in zip(lines, keys)
                     if key not in running or key not in shown])
        shown.update(keys)
    return kept


def _running_key(line: str) -> str:
    return _NUMBERS.sub("#", line).casefold()


_HYPHENATED = re.compile(r"(?<![^\W\d_])([^\W\d_]+)[-\u2010]$")  # a line ending in "informa-"
# (from a word's start only: a line of 50,000 letters was read again from each one)
_CONTINUED = re.compile(r"(-?)([^\W\d_]{2,})(\S*) ?")  # the next one: "ção, que…"
_WORD = re.compile(r"[^\W\d_]+(?:-[^\W\d_]+)*")
_ENCLITICS = frozenset("lo la los las".split())  # fazê-lo, pô-la


def _joined_words(pages: list[list[str]]) -> list[list[str]]:
    """The pages' lines with each word hyphenated at a line's end whole on the line it began
    (across a page break too): "informa-" / "ção, que" gives "informação," / "que". The
    hyphen stays when the next line repeats it ("terça-" / "-feira"), the document spells
    the word with it elsewhere ("pró-reitoria"), or an enclitic follows ("fazê-lo")."""
    pages = [list(lines) for lines in pages]
    words = {word.casefold() for lines in pages for line in lines for word in _WORD.findall(line)}
    at = [(page, line) for page, lines in enumerate(pages) for line in range(len(lines))]
    for (p, i), (q, j) in zip(at, at[1:]):
        if not pages[p][i].endswith(("-", "\u2010")):
            continue
        broken, rest = _HYPHENATED.search(pages[p][i]), _CONTINUED.match(pages[q][j])
        if not broken or not rest or not rest.group(2)[0].islower():
            continue
        first, second = broken.group(1), rest.group(2)
        hyphen = bool(rest.group(1)) or _keeps_hyphen(first, second, words)
        pages[p][i] = pages[p][i][:-1] + "-" * hyphen + second + rest.group(3)
        pages[q][j] = pages[q][j][rest.end():] or None  # a line the word took whole goes
    return [[line for line in lines if line is not None] for lines in pages]


def _keeps_hyphen(first: str, second: str, words: set[str]) -> bool:
    if (first + second).casefold() in words:
        return False
    return (f"{first}-{second}".casefold() in words
            or second.casefold() in _ENCLITICS and first[-1] in "áéíóúâêô")


def _assemble(texts: list[str], title: str) -> PdfText:
    parts, starts, empty, offset = [], [], [], 0
    for number, text in enumerate(texts, start=1):
        if not text:
            empty.append(number)
            continue
        starts.append((number, offset))
        parts.append(text)
        offset += len(text) + 1
    if not parts:
        raise PdfError(f"none of its {len(texts)} pages has text (a scan?); run OCR on it"
                       " first (e.g. ocrmypdf)")
    return PdfText(title, "\n".join(parts), tuple(starts), tuple(empty), len(texts))
