"""Titles indexed with the text: `busca index --titles METHODS`.

A lexical method counts the article's title words in every window of the article (its
title's term counts added to each window's row); a dense model encodes "Title. text" for
each window. The chunk spans, and so what search shows, stay the text alone. tfidf keeps the
Java pipeline's results unless it is named: titles are never on for it by default.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from ...errors import BuscaError
from .counting import TermCounts, count_texts

ALL = "all"
NONE = "none"
TITLES: tuple[str, ...] = ()  # methods that index titles when --titles is not given


class BadTitles(BuscaError, ValueError):
    """A --titles list naming a method the build does not make."""


def titled_methods(spec: str | None, methods: Sequence[str], default: Sequence[str]) -> list[str]:
    """The methods of `methods` that index titles: `spec` names them ("all", "none", or a
    comma-separated list); None: `default`."""
    if spec is None:
        return [m for m in methods if m in default or m.partition(":")[0] in default]
    names = [n.strip() for n in spec.split(",") if n.strip()]
    if names in ([NONE], []):
        return []
    if names == [ALL]:
        return [m for m in methods if m.partition(":")[0] != "hybrid"]
    if NONE in names or ALL in names:
        raise BadTitles(f"--titles takes {ALL}, {NONE} or a list of methods, not"
                        f" {NONE if NONE in names else ALL} within a list: {spec!r}")
    unknown = [n for n in names if n not in methods]
    if unknown:
        raise BadTitles(f"--titles names {unknown[0]!r}, which this build does not make;"
                        f" choose among: {', '.join(methods)}, all or none")
    return [m for m in methods if m in names]


def kept_titles(previous, methods: Sequence[str]) -> list[str]:
    """A rebuild without --titles: the methods of `methods` whose previous build indexed
    titles; with no previous build, those of TITLES."""
    if previous is None:
        return titled_methods(None, methods, TITLES)
    return [m for m in methods if previous.manifest.entry(m).get("titles")]


def chunk_titles(home, urls: Iterable[str], per_doc: Iterable[int]) -> list[str]:
    """The title of every chunk (its document's), in chunk order."""
    titles = {d.url: d.title or "" for d in home.documents()}
    return [titles.get(url, "") for url, n in zip(urls, per_doc) for _ in range(int(n))]


def titled_texts(texts: Sequence[str], titles: Sequence[str]) -> list[str]:
    """Each window's text after its title ("Title. text"); untitled windows unchanged."""
    return [f"{title}. {text}" if title.strip() else text for text, title in zip(texts, titles)]


def with_titles(counts: TermCounts, titles: Sequence[str]) -> TermCounts:
    """The counts with each chunk's title terms added to its row (columns: the union of
    terms, in sorted order)."""
    import scipy.sparse as sp
    extra = count_texts(titles)
    terms = sorted(set(counts.terms) | set(extra.terms))
    column = {t: i for i, t in enumerate(terms)}
    matrix = (_widened(counts, column, len(terms)) + _widened(extra, column, len(terms)))
    matrix = sp.csr_matrix(matrix.astype(counts.matrix.dtype, copy=False))
    matrix.sort_indices()
    return TermCounts(matrix, terms)


def _widened(counts: TermCounts, column: dict, width: int):
    import scipy.sparse as sp
    target = np.fromiter((column[t] for t in counts.terms), np.int64, len(counts.terms))
    m = counts.matrix.tocsr()
    return sp.csr_matrix((m.data.astype(np.int32), target[m.indices], m.indptr),
                         shape=(m.shape[0], width))
