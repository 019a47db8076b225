"""Ranking inside PostgreSQL: the same ids and scores as the local rankers.

Lexical ranking here is the home URL's `lexical=sql` (builds then also write the tables it
reads); by default busca ranks the lists it reads from the build (index/postgres/lexical.py), about
50x faster at 1M chunks (docs/postgres.md). busca analyzes the query (the index's own
analyzer) and weighs its terms; the database sums the stored weights and orders the chunks:

- candidates: each query term's postings are stored best first (`<m>_blocks`: bm25 impacts,
  tfidf count / norm) in blocks of 256, 512, 1024, ... A round reads the first blocks of every
  term, sums what it met per chunk (float8) and bounds what every chunk may still gain from the
  unread blocks (the first key of the next block of each list: threshold algorithm, Fagin et
  al. 2001). When no unread chunk can reach the k-th best known score, the top k is among the
  chunks met whose bound reaches it; otherwise one more block is read of the lists whose next
  values are the largest;
- exact scores of those few chunks from `<m>_forward`, added left to right in column order in
  the local rankers' precision: bm25 in float4 (single precision, like numpy's float32), tfidf
  in float8 then divided by (chunk norm x query norm); ties by chunk id.

Dense: pgvector's HNSW index on cosine distance with max(ef_search, k) candidates, at most
pgvector's 1000 (`?dense=exact` in the home URL scans instead, and so does a k above 1000, more
than HNSW can give); the score is the inner product of the unit vectors, as the local ranker
computes it.
"""

from __future__ import annotations

import numpy as np

from ..text.analyzers import analysis
from ..lexical.lexical import NoSearchableTerms, why_nothing  # the local messages
from ..dense.vectors import EmptyQuery

FIRST_DEPTH = 2  # blocks of every list read in the first round (256 + 512 postings)
ADVANCE_SHARE = 0.8  # measured at 100k chunks: 0 (every list), 0.5 and 0.8, same answers
MOST_EXACT = 2000  # chunks scored exactly per round at most (else read deeper first)
SLACK = 1e-5  # relative margin for float4 keys and float8 partial sums vs exact float32 sums
EF_SEARCH = 200  # measured: docs/postgres.md (recall 0.99 at 10k chunks)
MOST_EF_SEARCH = 1000  # pgvector's range of hnsw.ef_search: an HNSW scan yields at most this

_QUERY = ("q(t, w, wf, depth, nxt) AS (SELECT * FROM unnest(%(t)s::int4[], %(w)s::float8[],"
          " %(wf)s::float4[], %(depth)s::int4[], %(nxt)s::float8[]))")


def exact_sql(kind: str, n_terms: int, find: str = "array_position") -> str:
    """A chunk's exact score from its forward row `f`, as one expression: the query terms'
    values (found by `find`: intarray's idx() when the extension is there, 3x faster, else
    array_position), weighted and added left to right in column order, in the local ranker's
    precision (a term the chunk lacks adds 0, which changes no sum)."""
    value = "coalesce(f.vals[{find}(f.terms, %(t{j})s::int4)], 0)"
    if kind == "bm25":
        parts = [value.format(find=find, j=j) + f" * %(wf{j})s::float4" for j in range(n_terms)]
        return "(" + " + ".join(["0::float4"] + parts) + ")::float8"
    parts = [value.format(find=find, j=j) + f"::float8 * %(w{j})s::float8"
             for j in range(n_terms)]
    return "(" + " + ".join(["0::float8"] + parts) + ") / (f.norm * %(qnorm)s)"
# Chunks met in the blocks read so far: `lo` = what they are known to score, `up` = what they
# may score at most (lo + the next unread key of every list they were not met in). A chunk
# never met scores at most %(unseen)s. The k best `lo` give theta; chunks whose `up` reaches
# theta are scored exactly. The answer is final when theta beats `unseen` (flag row -1).
_TOP = """WITH {q},
seen AS (SELECT u.c, sum(u.v * q.w) AS lo, sum(q.nxt) AS met
         FROM q JOIN {blocks} b ON b.term_id = q.t AND b.block < q.depth
         CROSS JOIN LATERAL unnest(b.chunks, b.vals) AS u(c, v) GROUP BY u.c),
kth AS (SELECT min(lo) AS theta, count(*) AS n
        FROM (SELECT lo FROM seen ORDER BY lo DESC LIMIT %(k)s) x),
near AS (SELECT c FROM seen, kth WHERE lo + %(unseen)s - met >= kth.theta * (1 - %(slack)s)),
flags AS (SELECT kth.n, kth.theta, (SELECT count(*) FROM near) AS near FROM kth)
SELECT -1, flags.theta, flags.n, flags.near FROM flags
UNION ALL (
SELECT f.chunk, {exact} AS s, 0, 0 FROM {forward} f
WHERE f.chunk IN (SELECT c FROM near) AND (SELECT near FROM flags) <= %(most)s
  AND (%(unseen)s = 0 OR %(unseen)s < (SELECT theta FROM flags) * (1 - %(slack)s))
ORDER BY s DESC, f.chunk LIMIT %(k)s)"""
_ALL = """WITH {q}, near AS (SELECT DISTINCT u.c FROM q JOIN {blocks} b ON b.term_id = q.t
            CROSS JOIN LATERAL unnest(b.chunks) AS u(c))
SELECT f.chunk, {exact} AS s FROM {forward} f WHERE f.chunk IN (SELECT c FROM near)
ORDER BY f.chunk"""


class LexicalRanker:
    """tfidf or bm25 of one build, ranked by PostgreSQL."""

    def __init__(self, connection, tables: dict, method: str, entry: dict, n_chunks: int,
                 *, find: str = "array_position"):
        self.connection = connection  # () -> this thread's connection
        self.find = find
        self.method = method
        self.kind = "bm25" if method == "bm25" or "k1" in entry else "tfidf"
        self.analyzer = entry["analyzer"]
        self.analyze, self.term_filter = analysis(self.analyzer,
                                                  entry.get("analyzer_version", ""))
        self.terms, self.blocks = tables["terms"], tables["blocks"]
        self.forward = tables["forward"]
        self.n_rows = n_chunks

    def _query(self, query: str) -> dict:
        """Term ids (column order), weights and block tops of the query's known terms."""
        tf: dict[str, int] = {}
        for term in self.analyze(query):
            tf[term] = tf.get(term, 0) + 1
        rows = self.connection().execute(
            f"SELECT term, term_id, idf, tops FROM {self.terms} WHERE term = ANY(%s)"
            " ORDER BY term_id", (list(tf),)).fetchall()
        counts = np.array([tf[r[0]] for r in rows], dtype=np.float64)
        idf = np.array([r[2] for r in rows], dtype=np.float64)
        q = {"t": [r[1] for r in rows], "tops": [np.append(r[3], 0.0) for r in rows],
             "qnorm": 1.0}
        if self.kind == "bm25":
            if not rows:
                raise NoSearchableTerms(why_nothing(query, self.analyzer, self.term_filter))
            q["w"], q["wf"] = counts, counts.astype(np.float32)
            return q
        weights = np.array([t * i for t, i in zip(counts, idf)], dtype=np.float64)
        qnorm = float(np.sqrt(np.dot(weights, weights)))
        if qnorm == 0:
            raise NoSearchableTerms(why_nothing(query, self.analyzer, self.term_filter, q["t"]))
        q["w"] = np.array([w * i for w, i in zip(weights, idf)], dtype=np.float64)
        q["wf"], q["qnorm"] = q["w"].astype(np.float32), qnorm
        return q

    def idf_terms(self, terms: list[str], chunks: list[int]
                  ) -> tuple[dict[str, int], list[set[str]]]:
        """The df of each of `terms` the build knows, and for each of `chunks` those of them
        it holds (its forward row): what search/coverage.py reads, in two queries."""
        rows = self.connection().execute(
            f"SELECT term, term_id, df FROM {self.terms} WHERE term = ANY(%s)", (terms,))
        found = {term: (term_id, df) for term, term_id, df in rows.fetchall()}
        forward = {chunk: set(ids) for chunk, ids in self.connection().execute(
            f"SELECT chunk, terms FROM {self.forward} WHERE chunk = ANY(%s)",
            ([int(c) for c in chunks],)).fetchall()}
        return ({t: df for t, (_, df) in found.items()},
                [{t for t, (i, _) in found.items() if i in forward.get(chunk, ())}
                 for chunk in chunks])

    def _params(self, q: dict, depth: np.ndarray, **extra) -> dict:
        nxt = np.array([w * tops[d] for w, tops, d in zip(q["w"], q["tops"], depth)])
        each = {f"{name}{j}": value for name in ("t", "w", "wf")
                for j, value in enumerate(q[name].tolist() if name != "t" else q[name])}
        return {"t": q["t"], "w": q["w"].tolist(), "wf": q["wf"].tolist(),
                "depth": depth.tolist(), "nxt": nxt.tolist(), "unseen": float(nxt.sum()),
                "qnorm": q["qnorm"], **each, **extra}

    def score(self, query: str) -> tuple[np.ndarray, np.ndarray]:
        """Every chunk with a positive score, by id, with the local ranker's exact score."""
        q = self._query(query)
        sql = _ALL.format(q=_QUERY, blocks=self.blocks, forward=self.forward,
                          exact=exact_sql(self.kind, len(q["t"]), self.find))
        depth = np.array([len(t) - 1 for t in q["tops"]], dtype=np.int64)
        rows = self.connection().execute(sql, self._params(q, depth)).fetchall()
        return _arrays([r for r in rows if r[1] > 0])

    def top(self, query: str, k: int) -> tuple[np.ndarray, np.ndarray]:
        """The exact top k, best first, ties by chunk id: blocks are read best first, one
        more block of the lists with the largest unread values per round, until no unread
        posting can enter the top k."""
        if k < 1:
            raise ValueError(f"k must be at least 1, got {k}")
        q = self._query(query)
        depth = np.full(len(q["t"]), FIRST_DEPTH, dtype=np.int64)
        last = np.array([len(t) - 1 for t in q["tops"]], dtype=np.int64)
        sql = _TOP.format(q=_QUERY, blocks=self.blocks, forward=self.forward,
                          exact=exact_sql(self.kind, len(q["t"]), self.find))
        while True:
            depth = np.minimum(depth, last)
            params = self._params(q, depth, k=k, slack=SLACK, most=MOST_EXACT)
            rows = self.connection().execute(sql, params).fetchall()
            theta, n, near = rows[0][1], rows[0][2], rows[0][3]
            final = params["unseen"] == 0 or (
                n >= k and theta is not None and params["unseen"] < theta * (1 - SLACK))
            if final and near <= MOST_EXACT:
                return _arrays([r for r in rows[1:] if r[1] > 0])
            if (depth == last).all():  # everything read: score the near chunks regardless
                params["most"], params["unseen"] = near, 0.0
                rows = self.connection().execute(sql, params).fetchall()
                return _arrays([r for r in rows[1:] if r[1] > 0])
            depth = depth + _advance(np.array(params["nxt"]), depth < last)



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
            raise EmptyQuery("the query is empty")
        return np.asarray(self.encoder.encode([query], query=True)[0], dtype=np.float32)

    def score(self, query: str) -> tuple[np.ndarray, np.ndarray]:
        """Every chunk id and its cosine with the query."""
        rows = self.connection().execute(
            f"SELECT chunk, -(embedding <#> %s) FROM {self.table} ORDER BY chunk",
            (_vector(self.embed(query)),)).fetchall()
        return _arrays(rows)

    def score_among(self, query: str, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The cosine of the chunks `ids` only (a filter's allowed chunks, search/filters.py):
        an exact scan of those rows, by primary key — no HNSW, so no recall lost to the
        filter."""
        if not ids.size:
            return _arrays([])
        rows = self.connection().execute(
            f"SELECT chunk, -(embedding <#> %s) FROM {self.table} WHERE chunk = ANY(%s)"
            " ORDER BY chunk", (_vector(self.embed(query)), ids.astype(np.int32).tolist())
        ).fetchall()
        return _arrays(rows)

    def top(self, query: str, k: int) -> tuple[np.ndarray, np.ndarray]:
        """The k nearest chunks: through HNSW with max(ef_search, k) candidates, or an exact
        scan (`dense=exact`, or k above the MOST_EF_SEARCH candidates HNSW can give)."""
        vector = _vector(self.embed(query))
        conn = self.connection()
        if self.exact or k > MOST_EF_SEARCH:
            sql = (f"SELECT chunk, -(embedding <#> %(v)s) AS s FROM {self.table}"
                   " ORDER BY s DESC, chunk LIMIT %(k)s")
            rows = conn.execute(sql, {"v": vector, "k": k}).fetchall()
        else:
            with conn.transaction():
                candidates = min(max(int(self.ef_search), k), MOST_EF_SEARCH)
                conn.execute(f"SET LOCAL hnsw.ef_search = {candidates}")
                rows = conn.execute(
                    f"SELECT chunk, -(embedding <#> %(v)s) FROM {self.table}"
                    " ORDER BY embedding <=> %(v)s LIMIT %(k)s", {"v": vector, "k": k}).fetchall()
        rows.sort(key=lambda r: (-r[1], r[0]))
        return _arrays(rows)


def _advance(nxt: np.ndarray, open_: np.ndarray) -> np.ndarray:
    """1 for the lists worth one more block: unread, and whose next value is at least
    ADVANCE_SHARE of the largest next value (a list of small values barely lowers the bound
    of unseen chunks however deep it is read)."""
    nxt = np.where(open_, nxt, 0.0)
    return ((nxt >= ADVANCE_SHARE * nxt.max()) & open_).astype(np.int64)


def _vector(values: np.ndarray) -> str:
    """pgvector's text form; repr of float32 values round-trips exactly."""
    return "[" + ",".join(repr(float(x)) for x in np.asarray(values, dtype=np.float32)) + "]"


def _arrays(rows) -> tuple[np.ndarray, np.ndarray]:
    ids = np.array([r[0] for r in rows], dtype=np.int64)
    scores = np.array([r[1] for r in rows], dtype=np.float64)
    return ids, scores
