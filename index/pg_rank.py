"""Ranking inside PostgreSQL: the same ids and scores as the local rankers.

busca analyzes the query (the index's own analyzer) and weighs its terms; the database sums
the stored weights and orders the chunks:

- candidates: `<m>_terms` posting lists of the query's terms are unnested and summed per chunk
  (float8, on `vals`: bm25 impacts, tfidf count / norm). Long lists whose largest
  contributions (`bound`) cannot lift a chunk into the top k are skipped (MaxScore, as the
  local ranker does): only chunks whose partial sum is within that bound of the k-th best stay;
- exact scores of those few chunks from `<m>_forward`, summed in column order exactly as the
  local rankers do: bm25 in float4 (`sum(real)` adds in single precision, like numpy float32),
  tfidf in float8 then divided by (chunk norm x query norm); ties by chunk id.

Dense: pgvector's HNSW index on cosine distance (`?dense=exact` in the home URL scans instead);
the score is the inner product of the unit vectors, as the local ranker computes it.
"""

from __future__ import annotations

import numpy as np

from .analyzers import get_analyzer, java_terms

LONG = 64  # a list longer than 1/LONG of the chunks may be skipped
SKIP_SHARE = 0.5  # skip long lists whose bounds add up to less than this share of the best
SLACK = 1e-5  # relative margin for float4 keys and float8 partial sums vs exact float32 sums
EF_SEARCH = 100

_QUERY = "q(t, w, wf) AS (SELECT * FROM unnest(%(t)s::int4[], %(w)s::float8[], %(wf)s::float4[]))"
_EXACT = {
    "bm25": "(SELECT sum(u.v * q.wf ORDER BY u.t) FROM unnest(f.terms, f.vals) AS u(t, v)"
            " JOIN q ON q.t = u.t)::float8",
    "tfidf": "(SELECT sum(u.v::float8 * q.w ORDER BY u.t) FROM unnest(f.terms, f.vals)"
             " AS u(t, v) JOIN q ON q.t = u.t) / (f.norm * %(qnorm)s)",
}
_TOP = """WITH {q},
partial AS (SELECT u.c, sum(u.v * q.w) AS p FROM q JOIN {terms} p ON p.term_id = q.t
            CROSS JOIN LATERAL unnest(p.chunks, p.vals) AS u(c, v)
            WHERE q.t = ANY(%(kept)s::int4[]) GROUP BY u.c),
kth AS (SELECT min(p) AS theta, count(*) AS n
        FROM (SELECT p FROM partial ORDER BY p DESC LIMIT %(k)s) x),
near AS (SELECT c FROM partial, kth WHERE p >= kth.theta * (1 - %(slack)s) - %(rest)s)
SELECT f.chunk, {exact} AS s, (SELECT n FROM kth), (SELECT theta FROM kth)
FROM {forward} f WHERE f.chunk IN (SELECT c FROM near) ORDER BY s DESC, f.chunk LIMIT %(k)s"""
_ALL = """WITH {q}, near AS (SELECT DISTINCT u.c FROM q JOIN {terms} p ON p.term_id = q.t
            CROSS JOIN LATERAL unnest(p.chunks) AS u(c))
SELECT f.chunk, {exact} AS s FROM {forward} f WHERE f.chunk IN (SELECT c FROM near)
ORDER BY f.chunk"""


class LexicalRanker:
    """tfidf or bm25 of one build, ranked by PostgreSQL."""

    def __init__(self, connection, tables: dict, method: str, entry: dict, n_chunks: int):
        self.connection = connection  # () -> this thread's connection
        self.method = method
        self.kind = "bm25" if method == "bm25" or "k1" in entry else "tfidf"
        self.analyzer = entry["analyzer"]
        self.analyze = get_analyzer(self.analyzer)
        self.terms, self.forward = tables["terms"], tables["forward"]
        self.n_rows = n_chunks

    def _query(self, query: str) -> dict:
        """Term ids (column order), weights and bounds of the query's known terms."""
        tf: dict[str, int] = {}
        for term in self.analyze(query):
            tf[term] = tf.get(term, 0) + 1
        rows = self.connection().execute(
            f"SELECT term, term_id, df, idf, bound FROM {self.terms} WHERE term = ANY(%s)"
            " ORDER BY term_id", (list(tf),)).fetchall()
        counts = np.array([tf[r[0]] for r in rows], dtype=np.float64)
        idf = np.array([r[3] for r in rows], dtype=np.float64)
        q = {"t": [r[1] for r in rows], "df": np.array([r[2] for r in rows]),
             "bound": np.array([r[4] for r in rows], dtype=np.float64), "qnorm": 1.0}
        if self.kind == "bm25":
            if not rows:
                raise _no_terms(self._why_nothing(query))
            q["w"], q["wf"] = counts, counts.astype(np.float32)
            return q
        weights = np.array([t * i for t, i in zip(counts, idf)], dtype=np.float64)
        qnorm = float(np.sqrt(np.dot(weights, weights)))
        if qnorm == 0:
            raise _no_terms(_why_no_terms(self.analyze(query), q["t"]))
        q["w"] = np.array([w * i for w, i in zip(weights, idf)], dtype=np.float64)
        q["wf"], q["qnorm"] = q["w"].astype(np.float32), qnorm
        return q

    def _params(self, q: dict, **extra) -> dict:
        return {"t": q["t"], "w": q["w"].tolist(), "wf": q["wf"].tolist(),
                "qnorm": q["qnorm"], **extra}

    def score(self, query: str) -> tuple[np.ndarray, np.ndarray]:
        """Every chunk with a positive score, by id, with the local ranker's exact score."""
        q = self._query(query)
        sql = _ALL.format(q=_QUERY, terms=self.terms, forward=self.forward,
                          exact=_EXACT[self.kind])
        rows = self.connection().execute(sql, self._params(q)).fetchall()
        return _arrays([r for r in rows if r[1] > 0])

    def top(self, query: str, k: int) -> tuple[np.ndarray, np.ndarray]:
        """The exact top k, best first, ties by chunk id."""
        if k < 1:
            raise ValueError(f"k must be at least 1, got {k}")
        q = self._query(query)
        skip = self._skippable(q["df"], q["w"] * q["bound"])
        rest = float((q["w"][skip] * q["bound"][skip]).sum()) if skip.size else 0.0
        kept = [t for i, t in enumerate(q["t"]) if i not in set(skip.tolist())]
        rows = self._top(q, kept, rest, k)
        if skip.size and (not rows or rows[0][2] < k or rows[0][3] * (1 - SLACK) <= rest):
            rows = self._top(q, q["t"], 0.0, k)  # the skipped lists might matter: all of them
        return _arrays([r for r in rows if r[1] > 0])

    def _top(self, q: dict, kept: list[int], rest: float, k: int) -> list[tuple]:
        sql = _TOP.format(q=_QUERY, terms=self.terms, forward=self.forward,
                          exact=_EXACT[self.kind])
        params = self._params(q, kept=kept, rest=rest, k=k, slack=SLACK)
        return self.connection().execute(sql, params).fetchall()

    def _skippable(self, lengths: np.ndarray, bounds: np.ndarray) -> np.ndarray:
        """Long lists, lowest bound first, while their bounds add up to less than SKIP_SHARE
        of the best bound of the other lists."""
        candidates = np.flatnonzero(lengths > self.n_rows // LONG)
        candidates = candidates[np.argsort(bounds[candidates], kind="stable")]
        for n in range(candidates.size, 0, -1):
            others = np.setdiff1d(np.arange(lengths.size), candidates[:n])
            best = bounds[others].max() if others.size else 0.0
            if bounds[candidates[:n]].sum() < SKIP_SHARE * best:
                return np.sort(candidates[:n])
        return np.empty(0, np.int64)

    def _why_nothing(self, query: str) -> str:
        raw = java_terms(query)
        if raw and not self.analyze(query):
            return (f"every word of the query is a stopword for the {self.analyzer} analyzer"
                    f" ({', '.join(raw[:8])}): ask with a content word")
        return _why_no_terms(self.analyze(query), [])


class DenseRanker:
    """Cosine of unit vectors with pgvector: HNSW (approximate) or an exact scan."""

    def __init__(self, connection, table: str, encoder, *, exact: bool = False,
                 ef_search: int = EF_SEARCH):
        self.connection = connection
        self.table = table
        self.encoder = encoder
        self.exact = exact
        self.ef_search = ef_search

    def embed(self, query: str) -> np.ndarray:
        if not query.strip():
            from ..search.dense import EmptyQuery
            raise EmptyQuery("the query is empty")
        return np.asarray(self.encoder.encode([query], query=True)[0], dtype=np.float32)

    def score(self, query: str) -> tuple[np.ndarray, np.ndarray]:
        """Every chunk id and its cosine with the query."""
        rows = self.connection().execute(
            f"SELECT chunk, -(embedding <#> %s) FROM {self.table} ORDER BY chunk",
            (_vector(self.embed(query)),)).fetchall()
        return _arrays(rows)

    def top(self, query: str, k: int) -> tuple[np.ndarray, np.ndarray]:
        vector = _vector(self.embed(query))
        conn = self.connection()
        if self.exact:
            sql = (f"SELECT chunk, -(embedding <#> %(v)s) AS s FROM {self.table}"
                   " ORDER BY s DESC, chunk LIMIT %(k)s")
            rows = conn.execute(sql, {"v": vector, "k": k}).fetchall()
        else:
            with conn.transaction():
                conn.execute(f"SET LOCAL hnsw.ef_search = {max(int(self.ef_search), k)}")
                rows = conn.execute(
                    f"SELECT chunk, -(embedding <#> %(v)s) FROM {self.table}"
                    " ORDER BY embedding <=> %(v)s LIMIT %(k)s", {"v": vector, "k": k}).fetchall()
        rows.sort(key=lambda r: (-r[1], r[0]))
        return _arrays(rows)


def _vector(values: np.ndarray) -> str:
    """pgvector's text form; repr of float32 values round-trips exactly."""
    return "[" + ",".join(repr(float(x)) for x in np.asarray(values, dtype=np.float32)) + "]"


def _arrays(rows) -> tuple[np.ndarray, np.ndarray]:
    ids = np.array([r[0] for r in rows], dtype=np.int64)
    scores = np.array([r[1] for r in rows], dtype=np.float64)
    return ids, scores


def _no_terms(message: str):
    from ..search.lexical import NoSearchableTerms
    return NoSearchableTerms(message)


def _why_no_terms(terms, known) -> str:
    from ..search.lexical import _why_no_terms as why
    return why(terms, known)
