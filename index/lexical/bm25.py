"""BM25 as Lucene scores it, precomputed at index time so that a query sums a few columns.

    score(q, d) = sum over query terms t of  idf(t) * tf / (tf + k1 * (1 - b + b * dl / avgdl))
    idf(t)      = ln(1 + (N - df + 0.5) / (df + 0.5))

tf = count of t in chunk d, dl = number of terms of d after analysis, avgdl = mean dl over
the N chunks, df = chunks containing t. This is Lucene's BM25Similarity (since Lucene 8, no
(k1 + 1) factor) with exact lengths instead of Lucene's one-byte length encoding, i.e. bm25s's
`method="lucene"`. A term repeated in the query counts once per occurrence, as in Lucene's
BooleanQuery and bm25s.

Files in the index folder (term-major, like `tfidf`):
- `bm25.indptr` (int64, V+1), `bm25.indices` (int32 chunk ids), `bm25.scores` (float32, the
  term's score in that chunk), `bm25.bound` (float32, the largest score of each term),
- `bm25.vocab.txt` (the analyzed terms, in column order).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

import numpy as np

from ...errors import BuscaError
from .. import compiled
from ..text.analyzers import analyzer_version, default_bm25_analyzer, get_term_filter
from ..text.counting import TermCounts, column_blocks, count_texts, reanalyze
from .arrays import save_arrays

if TYPE_CHECKING:  # scipy loads with the build, never for a search
    import scipy.sparse as sp

log = logging.getLogger(__name__)

METHOD = "bm25"
K1 = 1.2
B = 0.75
K1_MAX = 10.0
IDF = "ln(1 + (N - df + 0.5) / (df + 0.5))"


class Bm25ParameterError(BuscaError, ValueError):
    """k1 or b outside the range where BM25 makes sense."""


def check_parameters(k1: float, b: float) -> None:
    """Refuse k1 outside [0, 10] and b outside [0, 1] (and NaN)."""
    if not (isinstance(k1, (int, float)) and 0.0 <= k1 <= K1_MAX):
        raise Bm25ParameterError(f"k1 must be between 0 and {K1_MAX:g} (Lucene's default is"
                                 f" {K1}), got {k1}")
    if not (isinstance(b, (int, float)) and 0.0 <= b <= 1.0):
        raise Bm25ParameterError(f"b must be between 0 and 1 (Lucene's default is {B}), got {b}")


def check_options(options: dict) -> str:
    """Validate the bm25 options before any work; returns the analyzer name to use."""
    check_parameters(options.get("bm25_k1", K1), options.get("bm25_b", B))
    analyzer = options.get("bm25_analyzer") or default_bm25_analyzer()
    get_term_filter(analyzer)  # UnknownAnalyzer, or MissingStemmer naming the extra
    if not options.get("bm25_analyzer") and analyzer != "pt":  # never fall back silently
        log.warning("PyStemmer is not installed, so bm25 uses the %s analyzer (no stemming, no"
                    " stopwords) instead of pt: pip install PyStemmer, or choose it with"
                    " --analyzer %s", analyzer, analyzer)
    return analyzer


def build(texts: Sequence[str], out, *, options: dict, previous=None,
          on_progress=None) -> dict:
    """Build the BM25 arrays for chunk `texts` into `out`; returns the manifest entry."""
    return build_counts(count_texts(texts), out, options=options, on_progress=on_progress)


def build_counts(counts: TermCounts, out, *, options: dict, on_progress=None) -> dict:
    """Build the BM25 arrays from the chunks' java-term counts; the manifest entry."""
    analyzer = check_options(options)
    k1, b = options.get("bm25_k1", K1), options.get("bm25_b", B)
    big = counts.arrays.nnz >= compiled.MIN_POSTINGS
    kernel = compiled.for_build("postings_numba") if big else None
    if kernel is not None:
        terms, target = counts.targets(analyzer)
        target = target.astype(np.int32)  # read at random for every entry: the smaller, the better
        m = counts.arrays
        split = int(np.searchsorted(m.indptr, m.indptr[-1] // 2))  # half the entries before
        lengths, indptr, early = merged_shape(kernel, m, target, len(terms), split)
        length_norm, avgdl = _length_norm(lengths.astype(np.float64), k1, b)
        indices, scores, bound = _compiled_postings(
            kernel, m, target, indptr, (split, early), _idf(np.diff(indptr), m.shape[0]),
            length_norm)
    else:
        analyzed = reanalyze(counts, analyzer)
        terms = analyzed.terms
        lengths = np.asarray(analyzed.matrix.sum(axis=1), dtype=np.float64).ravel()
        csc = analyzed.matrix.tocsc()
        del analyzed  # the chunk-major copy is no longer needed: less memory at the peak
        scores, bound, avgdl = bm25_scores(csc, lengths, k1=k1, b=b)
        indptr, indices = csc.indptr, csc.indices
        del csc
    if not terms:
        log.warning("bm25: no chunk has a term left after the %s analyzer", analyzer)
    save_arrays(out, METHOD, {"indices": indices.astype(np.int32, copy=False),
                              "scores": scores, "indptr": indptr.astype(np.int64),
                              "bound": bound})
    out.write_terms(METHOD, terms)
    return {"analyzer": analyzer, "analyzer_version": analyzer_version(analyzer),
            "k1": k1, "b": b, "vocabulary": len(terms), "avgdl": avgdl,
            "scoring": "Lucene BM25, idf " + IDF, "floor": None}


def merged_shape(kernel, m, target, n_targets: int, split: int):
    """For the counts `m` with column j added into column target[j] (dropped when < 0):
    each chunk's length, the term-major indptr of the merged columns, and per block of
    2**BLOCK_SHIFT merged columns the postings of the chunks before `split` (where the
    second half of `bm25_scatter` starts writing in each block); both halves at once."""
    with ThreadPoolExecutor(2) as pool:
        (lengths, chunks), (later_lengths, later_chunks) = pool.map(
            lambda rows: kernel.merged_rows(m.indptr, m.indices, m.data, target, n_targets,
                                            *rows), ((0, split), (split, m.shape[0])))
    indptr = np.zeros(n_targets + 1, dtype=np.int64)
    np.cumsum(chunks + later_chunks, out=indptr[1:])
    blocks = np.arange(0, max(n_targets, 1), 1 << kernel.BLOCK_SHIFT)
    early = np.add.reduceat(chunks, blocks) if n_targets else np.zeros(1, dtype=np.int64)
    return np.concatenate([lengths, later_lengths]), indptr, early


def _compiled_postings(kernel, m, target, indptr, halves, idf, length_norm):
    """The merged columns term-major, scored, and each term's largest score, in two threads
    (index/lexical/postings_numba.py's kernels let go of the GIL): the first pass over two
    halves of the chunks (`halves`: where the second starts, and its postings before it in
    each block), each writing from its own cursors in every block; then the second over two
    halves of the blocks. At 1M chunks this comes after tfidf has finished, on an idle core."""
    shift, total, (split, early) = kernel.BLOCK_SHIFT, int(indptr[-1]), halves
    rows = np.empty(total, dtype=np.int32)
    scores = np.empty(total, dtype=np.float32)
    within = np.empty(total, dtype=np.uint16)
    starts = kernel.block_starts(indptr, shift)
    parts = ((0, split, starts.copy()), (split, m.shape[0], starts + early))
    bounds = [np.zeros(indptr.size - 1, dtype=np.float32) for _ in parts]
    middle = int(np.searchsorted(starts, total // 2))
    with ThreadPoolExecutor(2) as pool:
        for done in [pool.submit(kernel.bm25_scatter, m.indptr, m.indices, m.data, target, idf,
                                 length_norm, r0, r1, fill, rows, scores, within, bound, shift)
                     for (r0, r1, fill), bound in zip(parts, bounds)]:
            done.result()
        for done in [pool.submit(kernel.by_blocks, indptr, rows, scores, within, shift, b0, b1)
                     for b0, b1 in ((0, middle), (middle, starts.size))]:
            done.result()
    return rows, scores, np.maximum(*bounds)


def _idf(df: np.ndarray, n: int) -> np.ndarray:
    return np.log(1 + (n - df + 0.5) / (df + 0.5))


def _length_norm(lengths: np.ndarray, k1: float, b: float) -> tuple[np.ndarray, float]:
    """k1 * (1 - b + b * dl / avgdl) per chunk, and avgdl."""
    n = lengths.size
    avgdl = float(lengths.sum() / n) if n else 0.0
    return (k1 * (1 - b + b * lengths / avgdl) if avgdl > 0 else np.zeros(n)), avgdl


def bm25_scores(csc: sp.csc_matrix, lengths: np.ndarray, *, k1: float = K1, b: float = B):
    """The float32 score of each entry of a chunks x terms count matrix (CSC), each term's
    largest score, and avgdl; `lengths` = terms per chunk."""
    n, vocabulary = csc.shape
    idf = _idf(np.diff(csc.indptr), n)
    length_norm, avgdl = _length_norm(lengths, k1, b)
    scores = np.empty(csc.nnz, dtype=np.float32)
    bound = np.zeros(vocabulary, dtype=np.float32)
    for c0, c1 in column_blocks(csc.indptr):
        lo, hi = csc.indptr[c0], csc.indptr[c1]
        tf = csc.data[lo:hi].astype(np.float64)
        term_idf = np.repeat(idf[c0:c1], np.diff(csc.indptr[c0:c1 + 1]))
        scores[lo:hi] = term_idf * tf / (tf + length_norm[csc.indices[lo:hi]])
        filled = np.flatnonzero(np.diff(csc.indptr[c0:c1 + 1]))
        if filled.size:
            bound[c0 + filled] = np.maximum.reduceat(scores[lo:hi], csc.indptr[c0 + filled] - lo)
    return scores, bound, avgdl
