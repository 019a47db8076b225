"""PDF text with its page numbers, through pypdf (the `pdf` extra: pip install 'busca[pdf]').

One PDF is one document: the pages' texts one after another, and in `meta["pages"]` the
character offset where each page starts, so a passage can be cited as `file.pdf#page=12`.
Pages without text (scanned images) are counted, not stored empty.
"""

from __future__ import annotations

import io
import logging
import unicodedata
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
    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted and not reader.decrypt(""):
            raise PdfError("the PDF is encrypted with a password; decrypt it first")
        texts = [_page_text(page) for page in reader.pages]
        title = (reader.metadata or {}).get("/Title") if reader.metadata else None
    except LimitReachedError:  # a stream that inflates past pypdf's limit (75 MB): a bomb
        raise PdfError("the PDF has a stream too large to decompress (over pypdf's limit);"
                       " busca does not read it") from None
    except DependencyError as e:
        raise PdfError(f"reading this PDF needs another package: {e}") from None
    except (PyPdfError, ValueError, KeyError, TypeError, OSError) as e:
        raise PdfError(f"damaged or unreadable PDF ({e})") from None
    return _assemble(texts, str(title).strip() if title else "")


# typographic ligatures a PDF's fonts give ("ﬁcha"), as the letters a question types
LIGATURES = {c: unicodedata.normalize("NFKC", chr(c)) for c in range(0xFB00, 0xFB07)}


def _page_text(page) -> str:
    text = plain_text(page.extract_text() or "").translate(LIGATURES)
    return unicodedata.normalize("NFC", text)


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
