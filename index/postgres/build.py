"""A build in progress on PostgreSQL: everything in ONE transaction, live only at COMMIT.

The writer opens its own connection and transaction; the connection holds the home's build
lock (index/home/buildlock.py) until it closes, so a second build of the home exits at once. Chunk
rows are copied as they come; method arrays are kept in a temporary folder (memory-mapped .npy) until `publish`, which turns
them into the build's tables (index/postgres/schema.py lists them: per lexical method one row per
term holding its posting list, plus the SQL ranking tables when `sql_tables` is set), builds
their indexes, records the manifest in `builds`, flips `busca_meta.live`, sets the format
version and commits. Readers see the old build until that
COMMIT; a killed build never commits, so PostgreSQL rolls it back and nothing of it remains.
Builds older than the previous one are dropped after the commit (the previous one stays for
readers still answering on it). With `partitions` > 1 the tables that grow with the corpus are
created hash-partitioned by their distribution key (schema.py's `create_table`).
"""

from __future__ import annotations

import io
import json
import os
import shutil
import tempfile
import uuid
from collections.abc import Iterable
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from . import copy as pc
from ..home.buildlock import take_pg_lock
from ..home.processes import alive
from ..home.storage import read_npy
from ..dense.dense_models import array_key
from .lists import pack_ids, pack_values
from .schema import (ARRAYS, BLOCKS, BLOCKS_KEYS, CHUNKS, DENSE, DENSE_KEYS, FORWARD,
                        FORWARD_KEYS, POSTINGS, POSTINGS_KEYS, POSTINGS_STORAGE, TERMS,
                        TERMS_KEYS, PostgresError, build_table, create_table, quoted,
                        set_format)

LEXICAL_DATA = ("counts", "scores")  # the per-posting array of tfidf / bm25
BIG = ("indices", "counts", "scores", "vectors")  # stored as tables, not as .npy bytes
HNSW_M, HNSW_EF_CONSTRUCTION = 16, 128  # pgvector defaults 16, 64; see docs/postgres.md
SPOOL = "busca-pg-build-"  # temporary folder of a build's arrays: SPOOL<pid>-<random>
FIRST_BLOCK = 256  # postings in a term's first (best) block; each next block is twice as long
KEEP_BUILDS = 2  # the live build and the previous one


def new_build_name() -> str:
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dt%H%M%S")
    return f"b{stamp}_{uuid.uuid4().hex[:8]}"


class PostgresBuildWriter:
    """Implements the BuildWriter boundary for a PostgreSQL home."""

    sentence_groups = False  # pgvector searches window vectors only (index/dense/dense_groups.py)

    def __init__(self, connect, schema: str, *, make_build=None, sql_tables: bool = False,
                 partitions: int = 0):
        self.name = new_build_name()
        self.schema = schema
        self.partitions = partitions  # > 1: the big tables hash-partitioned (schema.py)
        self.sql_tables = sql_tables  # also write the tables of index/postgres/rank.py's SQL ranker
        self.conn = connect(autocommit=False)
        try:
            take_pg_lock(self.conn, schema)  # one build at a time per home
        except BaseException:
            self.conn.close()
            raise
        self.conn.execute("SET client_connection_check_interval = '1s'")
        self.conn.execute("SET maintenance_work_mem = '256MB'")
        _remove_orphans()
        self._dir = Path(tempfile.mkdtemp(prefix=f"{SPOOL}{os.getpid()}-"))
        self._arrays: dict[str, list[str]] = {}
        self._terms: dict[str, list[str]] = {}
        self._chunks = 0
        self._make_build = make_build or (lambda data: data)

    # --- what builders hand over ----------------------------------------------------
    def save_array(self, method: str, name: str, array: np.ndarray) -> None:
        np.save(self._dir / f"{method}.{name}.npy", np.ascontiguousarray(array),
                allow_pickle=False)
        self._arrays.setdefault(method, []).append(name)

    def write_terms(self, method: str, terms: list[str]) -> None:
        self._terms[method] = list(terms)

    def write_chunks(self, rows: Iterable) -> None:
        rows = list(rows)
        table = build_table(self.schema, self.name, "chunks")
        with self.conn.cursor() as cur:
            self._create(cur, CHUNKS, table, "chunks")
            pc.copy_rows(cur, table, ["id", "url", "position", "start", "end", "doc_sha256"], [
                pc.Int4(np.array([r.id for r in rows], dtype=np.int64)),
                pc.Text([r.url for r in rows]),
                pc.Int4(np.array([r.position for r in rows], dtype=np.int64)),
                pc.Int4(np.array([r.start for r in rows], dtype=np.int64)),
                pc.Int4(np.array([r.end for r in rows], dtype=np.int64)),
                pc.Text([r.doc_sha256 for r in rows])], len(rows))
        self._chunks = len(rows)

    # --- publishing ---------------------------------------------------------------------
    def publish(self, manifest):
        """Upload the methods, record the manifest, make this build live: one COMMIT.
        Returns the published build."""
        manifest = {**manifest.to_json(), "build": self.name}
        with self.conn.cursor() as cur:
            cur.execute("SELECT pg_advisory_xact_lock(hashtext(%s))",
                        (f"busca-build:{self.schema}",))
            cur.execute(ARRAYS.format(t=build_table(self.schema, self.name, "arrays")))
            for method, names in self._arrays.items():
                self._upload(cur, method, names, manifest)
            s = quoted(self.schema)
            cur.execute(f"INSERT INTO {s}.builds (name, manifest) VALUES (%s, %s)",
                        (self.name, json.dumps(manifest)))
            cur.execute(f"INSERT INTO {s}.busca_meta (key, value) VALUES ('live', %s)"
                        " ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value",
                        (json.dumps(self.name),))
            set_format(cur, self.schema)
        self.conn.commit()
        self.conn.autocommit = True
        drop_old_builds(self.conn, self.schema)
        self._close()
        return self._make_build(manifest)

    def abort(self) -> None:
        """Roll everything back (what a killed build amounts to)."""
        try:
            self.conn.rollback()
        finally:
            self._close()

    def _close(self) -> None:
        self.conn.close()
        shutil.rmtree(self._dir, ignore_errors=True)

    def _create(self, cur, ddl: str, table: str, part: str) -> None:
        create_table(cur, ddl.format(t=table), table, part, self.partitions)

    def _load(self, method: str, name: str) -> np.ndarray:
        return read_npy(self._dir / f"{method}.{name}.npy", mmap_mode="r")

    def _upload(self, cur, method: str, names: list[str], manifest: dict) -> None:
        for name in (n for n in names if n not in BIG):
            self._blob(cur, f"{method}.{name}", np.asarray(self._load(method, name)))
        data = next((n for n in LEXICAL_DATA if n in names), None)
        if data is not None:
            self._upload_lists(cur, method, data, int(manifest["chunks"]))
            if self.sql_tables:
                self._upload_postings(cur, method, data, int(manifest["chunks"]))
        elif "vectors" in names:
            entry = next(e for m, e in manifest["methods"].items()
                         if array_key(m) == method and "dimension" in e)
            self._upload_vectors(cur, method, entry)

    def _blob(self, cur, name: str, array: np.ndarray) -> None:
        buf = io.BytesIO()
        np.save(buf, array, allow_pickle=False)
        cur.execute(f"INSERT INTO {build_table(self.schema, self.name, 'arrays')}"
                    " (name, data) VALUES (%s, %s)", (name, buf.getvalue()))

    def _upload_lists(self, cur, method: str, data: str, n: int) -> None:
        """`<m>_postings`: per term, its CSR column slice (chunk ids, values), packed by
        index/postgres/lists.py."""
        indptr = np.asarray(self._load(method, "indptr"), dtype=np.int64)
        indices = self._load(method, "indices")
        values = self._load(method, data)
        self._blob(cur, f"{method}.dtype", np.array(values.dtype.str))
        terms = self._terms[method]
        df = np.diff(indptr)
        if data == "counts":
            idf = np.asarray(self._load(method, "idf"), dtype=np.float64)
        else:  # bm25 (Lucene's idf, for reading the table; the impacts already hold it)
            idf = np.log(1 + (n - df + 0.5) / (df + 0.5))
        bound = np.asarray(self._load(method, "bound"), dtype=np.float64)
        table = build_table(self.schema, self.name, f"{method}_postings")
        self._create(cur, POSTINGS, table, "postings")
        cur.execute(POSTINGS_STORAGE.format(t=table))
        pc.copy_rows(cur, table, ["term", "term_id", "df", "idf", "bound", "ids", "vals"], [
            pc.Text(terms), pc.Int4(np.arange(len(terms))), pc.Int4(df), pc.Float8(idf),
            pc.Float8(bound), pc.Slices(indptr, indices, pack_ids),
            pc.Slices(indptr, values, pack_values)], len(terms))
        for sql in POSTINGS_KEYS:
            cur.execute(sql.format(t=table))

    def _upload_postings(self, cur, method: str, data: str, n: int) -> None:
        """The SQL ranker's tables: `<m>_terms`, `<m>_blocks`, `<m>_forward`."""
        _extension_refused(cur.connection, "intarray")  # intarray's idx(): rankers find
        # terms in forward rows faster (a trusted extension; without it they do without)
        indptr = np.asarray(self._load(method, "indptr"), dtype=np.int64)
        indices = np.asarray(self._load(method, "indices"))
        values = np.asarray(self._load(method, data))
        terms = self._terms[method]
        df = np.diff(indptr)
        if data == "counts":  # tfidf: ordering key count / norm, exact counts forward
            idf = np.asarray(self._load(method, "idf"), dtype=np.float64)
            norms = np.asarray(self._load(method, "norms"), dtype=np.float64)
            inverse = np.zeros_like(norms)
            np.divide(1.0, norms, out=inverse, where=norms > 0)
            keys = (values * inverse[indices]).astype(np.float32)
        else:  # bm25: the impacts themselves
            idf = np.log(1 + (n - df + 0.5) / (df + 0.5))
            norms = np.zeros(n)
            keys = values
        bound = np.asarray(self._load(method, "bound"), dtype=np.float64)
        order, block_ptr, block_rows, tops = impact_blocks(indptr, indices, keys)
        table = build_table(self.schema, self.name, f"{method}_terms")
        self._create(cur, TERMS, table, "terms")
        pc.copy_rows(cur, table, ["term", "term_id", "df", "idf", "bound", "tops"], [
            pc.Text(terms), pc.Int4(np.arange(len(terms))), pc.Int4(df), pc.Float8(idf),
            pc.Float8(bound), pc.Array(tops[0], tops[1], "float4")], len(terms))
        for sql in TERMS_KEYS:
            cur.execute(sql.format(t=table))
        table = build_table(self.schema, self.name, f"{method}_blocks")
        self._create(cur, BLOCKS, table, "blocks")
        pc.copy_rows(cur, table, ["term_id", "block", "chunks", "vals"], [
            pc.Int4(block_rows[0]), pc.Int4(block_rows[1]),
            pc.Array(block_ptr, indices[order], "int4"), pc.Array(block_ptr, keys[order], "float4")],
            len(block_rows[0]))
        for sql in BLOCKS_KEYS:
            cur.execute(sql.format(t=table))
        del keys
        csr = sp.csc_matrix((values, indices, indptr), shape=(n, len(terms))).tocsr()
        csr.sort_indices()
        table = build_table(self.schema, self.name, f"{method}_forward")
        self._create(cur, FORWARD, table, "forward")
        pc.copy_rows(cur, table, ["chunk", "norm", "terms", "vals"], [
            pc.Int4(np.arange(n)), pc.Float8(norms), pc.Array(csr.indptr, csr.indices, "int4"),
            pc.Array(csr.indptr, csr.data, "float4")], n)
        for sql in FORWARD_KEYS:
            cur.execute(sql.format(t=table))

    def _upload_vectors(self, cur, method: str, entry: dict) -> None:
        vectors = self._load(method, "vectors")
        hashes = self._load(method, "hashes")
        require_vector(cur.connection, keep=True)
        table = build_table(self.schema, self.name, method)
        self._create(cur, DENSE.replace("{d}", str(int(vectors.shape[1]))), table, "dense")
        pc.copy_rows(cur, table, ["chunk", "hash", "embedding"], [
            pc.Int4(np.arange(len(vectors))), pc.Bytes(hashes), pc.Vector(vectors)],
            len(vectors))
        m = int(entry.get("hnsw_m", HNSW_M))
        ef = int(entry.get("hnsw_ef_construction", HNSW_EF_CONSTRUCTION))
        for sql in DENSE_KEYS:
            cur.execute(sql.format(t=table, m=m, ef=ef))


def impact_blocks(indptr: np.ndarray, indices: np.ndarray, keys: np.ndarray):
    """Each term's postings best key first (ties by chunk id), cut into blocks of FIRST_BLOCK,
    2 x FIRST_BLOCK, 4 x ... postings. Returns the posting order, the blocks' bounds in it,
    (term id, block number) of each block, and per term the first key of each of its blocks
    (as CSR: pointer, values)."""
    df = np.diff(indptr)
    column = np.repeat(np.arange(df.size), df)
    order = np.lexsort((indices, -keys.astype(np.float64), column))
    counts = np.zeros(df.size, dtype=np.int64)  # blocks per term
    nonempty = df > 0
    counts[nonempty] = np.ceil(np.log2(df[nonempty] / FIRST_BLOCK + 1)).astype(np.int64)
    term_ids = np.repeat(np.arange(df.size), counts)
    numbers = np.arange(term_ids.size) - np.repeat(np.cumsum(counts) - counts, counts)
    starts = indptr[term_ids] + FIRST_BLOCK * (2 ** numbers - 1)
    block_ptr = np.append(starts, indptr[-1]).astype(np.int64)
    tops_ptr = np.concatenate([[0], np.cumsum(counts)])
    tops = keys[order][starts] if starts.size else np.empty(0, np.float32)
    return order, block_ptr, (term_ids, numbers), (tops_ptr, tops)


def _remove_orphans() -> None:
    """Remove the array folders of killed builds (their process is gone)."""
    for folder in Path(tempfile.gettempdir()).glob(SPOOL + "*"):
        pid = folder.name[len(SPOOL):].split("-", 1)[0]
        if pid.isdigit() and not alive(int(pid)):
            shutil.rmtree(folder, ignore_errors=True)


VECTOR_SCHEMA = """SELECT n.nspname, n.nspname = ANY (current_schemas(false)) FROM pg_extension e
JOIN pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'vector'"""


def vector_on_path(conn) -> bool:
    """Whether pgvector is in the database (False: not installed); PostgresError naming the
    fix when it is in a schema off the role's search_path (its type and operators would be
    unknown to busca's SQL)."""
    found = conn.execute(VECTOR_SCHEMA).fetchone()
    if found and not found[1]:
        raise PostgresError(
            f"pgvector is installed in the schema {found[0]!r} of database"
            f" {conn.info.dbname!r}, which is not on role {conn.info.user}'s search_path —"
            f" add options=-c%20search_path%3Dpublic,{found[0]} to the home URL, or an"
            f" administrator runs ALTER ROLE {conn.info.user} SET search_path = \"$user\","
            f" public, {found[0]}")
    return bool(found)


def require_vector(conn, *, keep: bool) -> None:
    """PostgresError naming the fix unless pgvector is in the database, in a schema on the
    search_path, or this role may create it there; `keep`: create it (in the open
    transaction), else only try (rolled back)."""
    if vector_on_path(conn):
        return
    reason = _extension_refused(conn, "vector", keep=keep)
    if reason is not None:
        raise PostgresError(
            f"dense needs the pgvector extension in database {conn.info.dbname!r}, and role"
            f" {conn.info.user} could not create it ({reason}) — an administrator runs CREATE"
            " EXTENSION vector; in that database (pgvector installed on the server first, if"
            " it is not), or build without vectors: busca index --dense none (tfidf and bm25"
            " need no extension)")


def _extension_refused(conn, name: str, *, keep: bool = True) -> str | None:
    """CREATE EXTENSION IF NOT EXISTS `name` in a savepoint (a refusal keeps the build
    going; rolled back unless `keep`): None if allowed, else the refusal's first line (no
    privilege, or not installed on this server)."""
    import psycopg

    try:
        with conn.transaction(force_rollback=not keep):
            conn.execute(f"CREATE EXTENSION IF NOT EXISTS {name}")
        return None
    except psycopg.Error as e:
        return (str(e).strip().splitlines() or [type(e).__name__])[0]


def drop_old_builds(conn, schema: str) -> None:
    """Drop the tables and rows of every build but the newest KEEP_BUILDS published ones."""
    s = quoted(schema)
    names = [r[0] for r in conn.execute(
        f"SELECT name FROM {s}.builds ORDER BY created_at DESC, name DESC")]
    for name in names[KEEP_BUILDS:]:
        tables = [r[0] for r in conn.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = %s AND tablename LIKE %s",
            (schema, name + "\\_%"))]
        with conn.transaction():
            for table in tables:
                conn.execute(f"DROP TABLE IF EXISTS {quoted(schema, table)}")
            conn.execute(f"DELETE FROM {s}.builds WHERE name = %s", (name,))
