"""TF-IDF, Java-parity profile: weight = raw count in the chunk x ln(N / df).

Stored term-major (CSC: one column of chunk ids per term) so that a query touches only the
columns of its own terms:
- `tfidf.indptr` (int64, V+1), `tfidf.indices` (int32 chunk ids), `tfidf.counts` (raw counts),
- `tfidf.idf` (float64, ln(N/df) per term), `tfidf.norms` (float64, L2 norm of each chunk's
  weight vector), `tfidf.vocab.txt` (the terms, in column order).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
from busca.index import storage
from busca.index.analyzers import get_analyzer

METHOD = "tfidf"
ANALYZER = "java"


class EmptyVocabulary(ValueError):
    """No chunk has a single term."""


def count_matrix(texts: Sequence[str], analyzer: str):
    """Chunks x terms raw counts (CSR) and the terms in column order."""
    from sklearn.feature_extraction.text import CountVectorizer  # slow import: build only

    vectorizer = CountVectorizer(analyzer=get_analyzer(analyzer), lowercase=False, dtype=np.int64)
    try:
        counts = vectorizer.fit_transform(texts)
    except ValueError as e:  # sklearn: "empty vocabulary"
        raise EmptyVocabulary("no chunk contains a word or number to index") from e
    return counts, vectorizer.get_feature_names_out().tolist()


def build(texts: Sequence[str], out: Path, *, options: dict, previous: Path | None = None,
          on_progress=None) -> dict:
    """Build the TF-IDF arrays for `texts` into `out`; returns the manifest entry."""
    analyzer = options.get("tfidf_analyzer", ANALYZER)
    counts, terms = count_matrix(texts, analyzer)
    n = counts.shape[0]
    df = np.bincount(counts.indices, minlength=counts.shape[1])
    idf = np.log(n / df)
    weights = counts.astype(np.float64).multiply(idf).tocsr()
    norms = np.sqrt(np.asarray(weights.multiply(weights).sum(axis=1)).ravel())
    csc = counts.tocsc()
    csc.sort_indices()
    storage.save_array(out, "tfidf.indptr", csc.indptr.astype(np.int64))
    storage.save_array(out, "tfidf.indices", csc.indices.astype(np.int32))
    storage.save_array(out, "tfidf.counts", csc.data.astype(_count_dtype(csc.data)))
    storage.save_array(out, "tfidf.idf", idf)
    storage.save_array(out, "tfidf.norms", norms)
    storage.write_terms(out, METHOD, terms)
    return {"analyzer": analyzer, "vocabulary": len(terms),
            "weighting": "raw count x ln(N/df), cosine", "floor": None}


def _count_dtype(data: np.ndarray):
    return np.uint16 if data.size == 0 or data.max() <= np.iinfo(np.uint16).max else np.uint32
