"""A corpus home in PostgreSQL: the second implementation of the backend boundary.

`open_home("postgresql://user@host/db?corpus=blog")` gives a home whose documents, crawl
state, builds and query log live in the schema `blog` (the map of tables: index/postgres/schema.py).
Builds are written by index/postgres/build.py in one transaction. tfidf and bm25 are ranked by
busca's own code on the posting lists read from the build (index/postgres/lexical.py, cached per
process by index/postgres/cache.py), or inside PostgreSQL with `lexical=sql`
(index/postgres/rank.py); dense by pgvector (index/postgres/rank.py). Same ids and scores as a local home.

URL parameters read by busca (and removed before connecting): `corpus` (schema, default
`busca`), `dense` (`hnsw`, the default, or `exact`), `ef_search` (HNSW candidates, default 200),
`partitions` (N > 1: new tables that grow with the corpus are hash-partitioned by their
distribution key, index/postgres/schema.py), `lexical` (`busca`, the default, or `sql`: builds
also write the SQL ranker's tables, and
queries are ranked by PostgreSQL), `cache_mb` (the posting list cache, default
$BUSCA_PG_CACHE_MB or 256; 0: none), `read` (a standby to search on, index/postgres/replica.py:
writes go to the home URL's server) and `read_wait` (seconds a publish waits for it, 10).
"""

from __future__ import annotations

import io
import json
import threading
from collections.abc import Iterable, Mapping
from datetime import datetime, timezone

import numpy as np

from . import cache as pg_cache, rank as pg_rank
from ..text.chunks import ChunkRow
from ..dense.encoders import THREADS, get_encoder
from ..home.manifest import Manifest
from ..home.vocabulary import Vocabulary
from ..dense.dense_models import array_key, is_dense, server_settings
from ..methods import method_spec, not_in_index, stored_methods
from .build import PostgresBuildWriter, require_vector, vector_on_path
from .conn import (ANSWER_WAIT, Connections, Guarded, GuardedWriter, PostgresMissingTable,
                   PostgresUnavailable, access, check_writable)
from .lexical import LexicalRanker, PostingLists, SparseRanker
from .replica import Routes
from ..lexical.sparse import question_encoder
from .store import PostgresStore
from .schema import (PostgresDamaged, PostgresError, build_table, check_format, corpus_exists,
                     create_base, damaged, legacy_table, missing_corpus, parse_location, quoted,
                     read_options, redact)
from ..home.storage import IndexFormatError, IndexNotFound, read_npy
from ..dense.vectors import check_encoder, require_vectors

CHUNK_COLUMNS = 'id, url, position, start, "end", doc_sha256'
QUERY_KEYS = ("at", "command", "query", "method", "k", "scores", "floor", "answered", "seconds")
NUL_SHOWN = "\ufffd"  # a NUL of a question, in the query log (text cannot hold NUL)
MISSING_TABLES = "SELECT t FROM unnest(%s::text[]) AS t WHERE to_regclass(t) IS NULL"

_sound: set[tuple] = set()  # (database, corpus, build) whose tables this process found whole
_sound_lock = threading.Lock()


class StaleBuild(PostgresMissingTable):
    """The build was dropped by newer builds while it was being read (an IndexNotFound, so
    that a server retries on the live build)."""


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


class PostgresHome(PostgresStore):
    """Documents, settings, builds and the query log of one corpus in one database."""

    def __init__(self, location: str, *, embed: Mapping | None = None, create: bool = True):
        """Opening only reads. `create`: a missing corpus reads as empty and the first write
        creates it; else it is CorpusNotFound (a mistyped ?corpus= creates nothing)."""
        self.location = location
        url, self.options = read_options(location)
        self._conninfo, self.schema = parse_location(url)
        self._connections = Connections(self._conninfo, location, self.schema,
                                        float(self.options.get("answer_wait", ANSWER_WAIT)))
        self.routes = Routes(self._connections, self.options, self.schema)
        self.embed = dict(embed or {})  # the user's openai:MODEL server settings (vectors.py)
        try:
            mb = pg_cache.budget_mb(self.options.get("cache_mb"))
        except ValueError:
            raise PostgresError("BUSCA_PG_CACHE_MB must be a whole number of megabytes (0: no"
                                " cache)") from None
        self.cache = pg_cache.shared(mb)
        self.sql_lexical = self.options.get("lexical") == "sql"
        self.partitions = int(self.options.get("partitions", 0))  # the layout of new tables
        self._exists = False
        self._writer = create  # may write: what it reads first comes from the primary
        self._read_only: bool | None = None
        if not self.exists() and not create:  # (connects now: a bad URL fails at once)
            raise missing_corpus(self.standby(), self.schema, redact(self._conninfo))

    # --- connections --------------------------------------------------------------------
    def connect(self, *, autocommit: bool = True):
        """A new psycopg connection (PostgresUnavailable with a one-line reason if it fails)."""
        return self._connections.connect(autocommit=autocommit)

    def conn(self) -> Guarded:
        """This thread's autocommit connection to the primary (made again after a loss)."""
        return self._connections.get()

    def standby(self) -> Guarded:
        """This thread's connection to where builds are read (`read=`, else the primary)."""
        return self.routes.standby.get()

    def _reads(self) -> Guarded:
        """Where documents are read: the standby, or the primary once this home wrote."""
        return self.routes.reads()

    def _writers_reads(self) -> Guarded:
        """Where what a writer reads before its first write is read (whether the corpus
        exists, the document hashes): for a home that may write (`create`: `crawl`, `add`,
        `index`, a server) the primary — its standby may be away —, or, when the primary
        cannot be reached, the standby (a server of a `read=` home answers meanwhile); for a
        home opened only to read (`search`, `stats`, ...) where documents are read."""
        if not self._writer:
            return self._reads()
        try:
            return self.conn()
        except PostgresUnavailable:
            if not self.routes.routed:
                raise
            return self._reads()

    def guard(self, *, write: bool = False):
        """psycopg errors in the block -> one-line PostgresErrors (index/postgres/conn.py)."""
        return self._connections.guard(write=write)

    def close(self) -> None:
        self.routes.close()

    # --- the corpus itself --------------------------------------------------------------
    def exists(self) -> bool:
        """Whether the corpus exists (then its format is checked, once): reads only
        (`_writers_reads`)."""
        if not self._exists:
            conn = self._writers_reads()
            if corpus_exists(conn, self.schema):
                check_format(conn, self.schema, builds=False)
                self._exists = True
        return self._exists

    def _writing(self) -> None:
        """Before a write: create the corpus if it does not exist yet (only writes create);
        from then on this home reads from the primary."""
        self.routes.writing()
        if not self.exists():
            create_base(self.conn(), self.schema, self.partitions)
            self._exists = True

    @property
    def read_only(self) -> bool:
        """Whether this role or session cannot write the query log (then searches skip it,
        search/querylog.py): checked once."""
        if self._read_only is None:
            self._read_only = access(self.conn(), self.schema).read_only
        return self._read_only

    def __enter__(self) -> PostgresHome:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def find_function(self) -> str:
        """intarray's idx() (schema-qualified) if the extension is installed, else
        array_position: how rankers find a term in a chunk's sorted term ids."""
        row = self.standby().execute(
            "SELECT n.nspname FROM pg_extension e JOIN pg_namespace n"
            " ON n.oid = e.extnamespace WHERE e.extname = 'intarray'").fetchone()
        return f"{quoted(row[0])}.idx" if row else "array_position"

    # --- builds -------------------------------------------------------------------------
    def live_name(self, conn: Guarded | None = None) -> str | None:
        """The live build's name, read from the standby (or `conn`)."""
        if not self.exists():
            return None
        row = (conn or self.standby()).execute(f"SELECT value FROM {quoted(self.schema)}.busca_meta"
                                  " WHERE key = 'live'").fetchone()
        if row is not None and not isinstance(row[0], str):
            raise damaged(self.schema, json.dumps(row[0]),
                          "busca_meta's 'live' is not a build name")
        return row[0] if row else None

    def current(self, *, primary: bool = False) -> PostgresBuild:
        """The live build (on the standby, or the primary's), or IndexNotFound naming the fix
        (PostgresOldFormat, an IndexFormatError, when an older busca wrote it)."""
        source = self.conn if primary else self.standby
        name = self.live_name(source())
        if name is not None:
            check_format(source(), self.schema)
        row = None if name is None else source().execute(
            f"SELECT manifest FROM {quoted(self.schema)}.builds WHERE name = %s",
            (name,)).fetchone()
        if row is None:
            raise IndexNotFound(f'no index in {redact(self.location)} — run "busca index" first')
        build = PostgresBuild(self, _manifest(row[0]), source)
        build.check_tables()
        return build

    def previous(self) -> PostgresBuild | None:
        """The primary's live build if it can be read (for reuse by the next build), else
        None; this home is writing from now on (it reads from the primary)."""
        self.routes.writing()
        try:
            return self.current(primary=True)
        except (IndexNotFound, IndexFormatError, PostgresDamaged):
            return None

    def new_build(self, methods: Iterable[str] = ()) -> GuardedWriter:
        """The writer of a new build, once the session and role are known to be allowed to
        write it, and the database to hold `methods` (dense: pgvector) — a refusal is one
        line before any work."""
        self._writing()
        check_writable(self.conn(), self._connections.where)
        if any(is_dense(m) for m in methods):
            with self.guard(write=True):
                require_vector(self.conn().raw, keep=False)
        with self.guard(write=True):
            writer = PostgresBuildWriter(
                self.connect, self.schema, sql_tables=self.sql_lexical,
                make_build=self._published, partitions=self.partitions)
        return GuardedWriter(writer, self.guard)

    def _published(self, data) -> PostgresBuild:
        """The build just committed, once the standby has it (waiting at most read_wait s)."""
        with self.guard():
            self.routes.published()
        return PostgresBuild(self, _manifest(data), self.conn)

    def set_floors(self, floors: Mapping[str, float],
                   models: Mapping[str, Mapping] | None = None, *,
                   key: str = "floor") -> PostgresBuild:
        """Calibrated floors (or another per-method `key`) and answerability models into the
        live build's manifest."""
        build = self.current(primary=True)
        self._writing()
        manifest = build.manifest.with_floors(floors, models, key=key)
        self.conn().execute(f"UPDATE {quoted(self.schema)}.builds SET manifest = %s"
                            " WHERE name = %s", (json.dumps(manifest.to_json()), build.name))
        return PostgresBuild(self, manifest)

    # --- query log ----------------------------------------------------------------------
    def log_query(self, *, command: str, query: str, method: str, k: int,
                  scores: list[float], floor: float | None, answered: bool, seconds: float,
                  at: str | None = None) -> None:
        """Into the primary's query log (a reader keeps reading from its standby); a NUL in
        the question, which text cannot hold, is logged as U+FFFD."""
        if not self.exists():
            self._writing()
        self.conn().execute(
            f"INSERT INTO {quoted(self.schema)}.queries (at, command, query, method, k, scores,"
            " floor, answered, seconds) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)",
            (at or _now(), command, query.replace("\0", NUL_SHOWN), method, k,
             json.dumps(scores), floor, bool(answered), seconds))

    def forget_queries(self, before: str) -> int:
        """Delete the queries logged before `before` (ISO, UTC) from the primary's log."""
        if not self.exists():
            return 0
        self._writing()
        return self.conn().execute(f"DELETE FROM {quoted(self.schema)}.queries WHERE at < %s",
                                   (before,)).rowcount

    def logged_queries(self, since: str | None = None) -> list[dict]:
        if not self.exists():
            return []
        sql = f"SELECT {', '.join(QUERY_KEYS)} FROM {quoted(self.schema)}.queries"
        args: tuple = ()
        if since is not None:
            sql, args = sql + " WHERE at >= %s", (since,)
        rows = self._reads().execute(sql + " ORDER BY at, id", args).fetchall()
        return [dict(zip(QUERY_KEYS, r)) for r in rows]


LISTED = ("indices", "counts", "scores")  # a lexical method's arrays kept as posting rows


class PostgresBuild:
    """A published build: its manifest, chunk rows, method data and rankers."""

    def __init__(self, home: PostgresHome, manifest: Manifest, conn=None):
        self.home = home
        self.conn = conn or home.standby  # the server it was found on, which reads it
        self.manifest = manifest
        self.name = manifest.build
        self.embed = home.embed
        self._rankers: dict = {}
        self._tables: dict[str, str] = {}

    def __repr__(self) -> str:
        return f"PostgresBuild({self.name!r})"

    @property
    def build(self) -> str:
        return self.name

    @property
    def methods(self) -> Mapping[str, Mapping]:
        return self.manifest.methods

    def table(self, part: str) -> str:
        """The quoted name of one of the build's tables: its short name (schema.py's
        `short_name`), or the name PostgreSQL cut when an older busca made the build."""
        name = build_table(self.home.schema, self.name, part)
        legacy = legacy_table(self.home.schema, self.name, part)
        if name == legacy:
            return name
        if part not in self._tables:
            found = self._fetch("SELECT to_regclass(%s) IS NOT NULL", (name,))[0][0]
            self._tables[part] = name if found else legacy
        return self._tables[part]

    @property
    def _key(self) -> tuple:
        return (self.home._conninfo, self.home.schema, self.name)

    def check_tables(self, *, again: bool = False) -> None:
        """The damaged-build error if a table the build's methods read is gone while the
        build is still live (checked once per process, and again after a damage was met, or
        when `again`)."""
        if self._key in _sound and not again:
            return
        tables = [self.table(part) for part in _required_parts(self.manifest)]
        missing = [r[0] for r in self._fetch(MISSING_TABLES, (tables,))]
        if missing:
            raise self._gone(", ".join(missing) + " missing")
        with _sound_lock:
            _sound.add(self._key)

    def check(self) -> None:
        """The damaged-build error if a table this build reads was dropped since it was loaded
        (GET /healthz): one catalog query, whatever this process found before; no table read."""
        self.check_tables(again=True)

    def _gone(self, problem: str) -> PostgresError:
        """StaleBuild if a newer build replaced this one (ask again), else it is damaged."""
        if self.home.live_name(self.conn()) != self.name:
            return StaleBuild(f"build {self.name} was replaced while reading it — ask again")
        with _sound_lock:
            _sound.discard(self._key)
        return damaged(self.home.schema, self.name, problem)

    def _fetch(self, sql: str, args=(), *, binary: bool = False) -> list[tuple]:
        try:
            return self.conn().execute(sql, args, binary=binary).fetchall()
        except PostgresMissingTable as e:
            cause = str(e.__cause__ or e).strip().splitlines()[0]
            raise self._gone(f"a table is missing: {cause}") from e

    def chunks(self, ids: Iterable[int] | None = None) -> list[ChunkRow]:
        """Chunk rows in id order, or in the order of `ids`."""
        sql = f"SELECT {CHUNK_COLUMNS} FROM {self.table('chunks')}"
        if ids is None:
            return [ChunkRow(*r) for r in self._fetch(sql + " ORDER BY id")]
        ids = [int(i) for i in ids]
        by_id = {r[0]: ChunkRow(*r) for r in self._fetch(sql + " WHERE id = ANY(%s)", (ids,))}
        lost = [i for i in ids if i not in by_id and 0 <= i < int(self.manifest.chunks)]
        if lost:
            raise self._gone(f"chunk rows missing from {self.table('chunks')}, e.g. id {lost[0]}")
        return [by_id[i] for i in ids if i in by_id]

    def chunk_urls(self) -> list[str]:
        """The document URL of each chunk, in id order."""
        return [r[0] for r in self._fetch(f"SELECT url FROM {self.table('chunks')} ORDER BY id")]

    def documents(self) -> dict[str, str]:
        """url -> content hash of each document the build chunked (its first chunk's row)."""
        return dict(self._fetch(f"SELECT url, doc_sha256 FROM {self.table('chunks')}"
                                " WHERE position = 0"))

    def terms(self, method: str) -> list[str]:
        return [r[0] for r in self._fetch(
            f"SELECT term FROM {self.table(method + '_postings')} ORDER BY term_id")]

    def vocabulary(self, method: str) -> Vocabulary:
        return Vocabulary.of(self.terms(method))

    def array(self, method: str, name: str) -> np.ndarray:
        """A method array as the local build stores it (vectors come from pgvector, a
        lexical method's chunk ids and values from its posting rows: a rebuild reuses the
        sparse latents of unchanged chunks, as on a local home)."""
        if name == "vectors":
            return self._vectors(method)
        if name in LISTED and self.has_array(method, "dtype"):
            _, ids, values = self._lists(method).every()
            return ids if name == "indices" else values
        rows = self._fetch(f"SELECT data FROM {self.table('arrays')} WHERE name = %s",
                           (f"{method}.{name}",))
        if not rows:
            raise IndexFormatError(f"build {self.name} has no array {method}.{name}")
        return read_npy(io.BytesIO(rows[0][0]))

    def has_array(self, method: str, name: str) -> bool:
        if name == "vectors":
            return self._dense_entry(method) is not None
        return bool(self._fetch(f"SELECT 1 FROM {self.table('arrays')} WHERE name = %s",
                                (f"{method}.{name}",)))

    def _dense_entry(self, key: str) -> Mapping | None:
        """The manifest entry of the dense method whose arrays are called `key`."""
        return next((e for m, e in self.methods.items()
                     if array_key(m) == key and "dimension" in e), None)

    def _vectors(self, method: str) -> np.ndarray:
        entry = self._dense_entry(method)
        if entry is None:
            raise IndexFormatError(f"build {self.name} has no array {method}.vectors")
        dimension = int(entry["dimension"])
        conn = self.conn()
        buf = io.BytesIO()
        with self.home.guard(), conn.reading(), conn.cursor().copy(
                f"COPY (SELECT embedding FROM {self.table(method)} ORDER BY chunk) TO STDOUT"
                " (FORMAT BINARY)") as copy:
            for block in copy:
                buf.write(block)
        row = np.dtype([("n", ">i2"), ("len", ">i4"), ("dim", ">i2"), ("unused", ">i2"),
                        ("v", ">f4", (dimension,))])
        body = buf.getvalue()[19:-2]  # COPY header (19 bytes) and trailer (2)
        return np.frombuffer(body, dtype=row)["v"].astype(np.float32)

    def ranker(self, method: str, *, encoder=None):
        """The ranker of a stored method (tfidf, bm25, dense), made once; `encoder`: for a
        dense method, one already in memory to use instead of loading one."""
        if method not in self._rankers:
            spec = method_spec(method)
            if method not in self.methods or spec is None or spec.ranker is None:
                raise not_in_index(method, stored_methods(self.methods))
            self._rankers[method] = self._make_ranker(method, spec.kind, encoder)
        return self._rankers[method]

    def _make_ranker(self, method: str, kind: str, encoder=None):
        entry = self.manifest.entry(method)
        if kind == "dense":
            require_vectors(self, method)
            encoder = encoder or get_encoder(entry["encoder"], threads=THREADS,
                                             server=server_settings(entry, **self.embed),
                                             dimension=entry["dimension"])
            check_encoder(entry, encoder)
            vector_on_path(self.conn())  # else its operators are unknown: one line
            return pg_rank.DenseRanker(
                self.conn, self.table(array_key(method)), encoder,
                exact=self.home.options.get("dense") == "exact",
                ef_search=int(self.home.options.get("ef_search", pg_rank.EF_SEARCH)))
        if kind == "sparse":  # busca's code on the posting rows, whatever `lexical` says
            return SparseRanker(self._lists(method), int(self.manifest.chunks),
                                question_encoder(self))
        weights = "bm25" if method == "bm25" or "k1" in entry else "tfidf"
        if self.home.sql_lexical:
            return self._sql_ranker(method, entry)
        return LexicalRanker(self._lists(method), weights, entry, int(self.manifest.chunks),
                             bound_dtype=np.float32 if weights == "bm25" else np.float64,
                             norms=self.array(method, "norms") if weights == "tfidf" else None)

    def _lists(self, method: str) -> PostingLists:
        """The posting rows of a method, read through the process's cache."""
        return PostingLists(lambda sql, args: self._fetch(sql, args, binary=True),
                            self.table(f"{method}_postings"),
                            (self.home._conninfo, self.home.schema, self.name, method),
                            np.dtype(str(self.array(method, "dtype"))), self.home.cache)

    def _sql_ranker(self, method: str, entry: Mapping) -> pg_rank.LexicalRanker:
        """PostgreSQL ranks (`lexical=sql`): needs the tables such builds write."""
        tables = {part: self.table(f"{method}_{part}") for part in ("terms", "blocks", "forward")}
        row = self._fetch("SELECT to_regclass(%s)", (tables["blocks"],))
        if row[0][0] is None:
            raise IndexFormatError(
                f"build {self.name} has no tables for lexical=sql (it was built without it) —"
                " run \"busca index\" with lexical=sql in the home URL")
        return pg_rank.LexicalRanker(self.conn, tables, method, entry,
                                     int(self.manifest.chunks), find=self.home.find_function())


def _manifest(data) -> Manifest:
    return Manifest.from_json(data)


def _required_parts(manifest: Manifest) -> list[str]:
    """The tables of a build its rankers read: chunks, arrays, and per method its posting
    lists or vectors (the SQL ranker's tables are checked by `_sql_ranker`)."""
    parts = ["chunks", "arrays"]
    for method in manifest.methods:
        spec = method_spec(method)
        if spec is not None and spec.kind == "dense":
            parts.append(array_key(method))
        elif spec is not None and spec.kind in ("lexical", "sparse"):
            parts.append(f"{method}_postings")
    return parts

