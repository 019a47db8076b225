"""The map of a PostgreSQL home: every table, its columns and its one writer; created here.

A home is a URL, `postgresql://user@host:port/database` (or `postgres://`), with an optional
`?corpus=NAME` (default `busca`): each corpus is one PostgreSQL schema, so several corpora share
a database without mixing. Tables of schema `<corpus>`:

    busca_meta (key, value jsonb)   format_version, live build        index/pg_schema.py, pg_build.py
    documents                       url, title, text, source, ...     index/pg_store.py
    settings (key, value jsonb)     crawl state, settings             index/pg_store.py
    queries                         the query log                     index/postgres.py
    builds (name, manifest jsonb)   one row per published build       index/pg_build.py
  one set per build `<b>` (written in the build's one transaction by index/pg_build.py):
    <b>_chunks                      chunk rows: id, url, position, start, end, doc_sha256
    <b>_<m>_terms                   per term of lexical method m: term, term_id (column), df,
                                    idf, bound, tops (the first val of each of its blocks)
    <b>_<m>_blocks                  a term's postings, best val first, in blocks of 256, 512,
                                    1024, ... postings: term_id, block, chunks int4[], vals float4[]
    <b>_<m>_forward                 per chunk: norm, term ids int4[], vals float4[] (exact scoring)
    <b>_dense                       per chunk: text hash, pgvector embedding (+ HNSW index)
    <b>_arrays (name, data bytea)   the method's other arrays as .npy bytes (idf, norms, ...)

`vals` are busca's own numbers: bm25 impacts (float32, index/bm25.py), tfidf raw counts in
`forward` and count / chunk norm in `blocks` (the key that orders a term's postings).
"""

from __future__ import annotations

import re
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from ..errors import BuscaError

FORMAT_VERSION = 1
SCHEMES = ("postgresql", "postgres")
DEFAULT_CORPUS = "busca"
_NAME = re.compile(r"^[a-z_][a-z0-9_]{0,39}$")

BASE_TABLES = """
CREATE TABLE IF NOT EXISTS {s}.busca_meta (key text PRIMARY KEY, value jsonb NOT NULL);
CREATE TABLE IF NOT EXISTS {s}.documents (
    url text PRIMARY KEY, title text NOT NULL, text text NOT NULL,
    source text NOT NULL DEFAULT '', modified text, sha256 text NOT NULL,
    fetched_at text NOT NULL);
CREATE TABLE IF NOT EXISTS {s}.settings (key text PRIMARY KEY, value jsonb NOT NULL);
CREATE TABLE IF NOT EXISTS {s}.queries (
    id bigserial PRIMARY KEY, at text NOT NULL, command text NOT NULL, query text NOT NULL,
    method text NOT NULL, k integer NOT NULL, scores jsonb NOT NULL, floor float8,
    answered boolean NOT NULL, seconds float8 NOT NULL);
CREATE TABLE IF NOT EXISTS {s}.builds (
    name text PRIMARY KEY, manifest jsonb NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now());
"""

CHUNKS = """CREATE TABLE {t} (id int4 PRIMARY KEY, url text NOT NULL, position int4 NOT NULL,
    start int4 NOT NULL, "end" int4 NOT NULL, doc_sha256 text NOT NULL)"""
TERMS = """CREATE TABLE {t} (term text NOT NULL, term_id int4 NOT NULL, df int4 NOT NULL,
    idf float8 NOT NULL, bound float8 NOT NULL, tops float4[] NOT NULL)"""
TERMS_KEYS = ["ALTER TABLE {t} ADD PRIMARY KEY (term)"]
BLOCKS = """CREATE TABLE {t} (term_id int4 NOT NULL, block int4 NOT NULL, chunks int4[] NOT NULL,
    vals float4[] NOT NULL)"""
BLOCKS_KEYS = ["ALTER TABLE {t} ADD PRIMARY KEY (term_id, block)"]
FORWARD = """CREATE TABLE {t} (chunk int4 NOT NULL, norm float8 NOT NULL, terms int4[] NOT NULL,
    vals float4[] NOT NULL)"""
FORWARD_KEYS = ["ALTER TABLE {t} ADD PRIMARY KEY (chunk)"]
DENSE = "CREATE TABLE {t} (chunk int4 NOT NULL, hash bytea NOT NULL, embedding vector({d}))"
DENSE_KEYS = ["ALTER TABLE {t} ADD PRIMARY KEY (chunk)",
              "CREATE INDEX ON {t} USING hnsw (embedding vector_cosine_ops)"
              " WITH (m = {m}, ef_construction = {ef})"]
ARRAYS = "CREATE TABLE {t} (name text PRIMARY KEY, data bytea NOT NULL)"


class PostgresError(BuscaError):
    """The PostgreSQL home cannot be reached, read or written."""


class PostgresFormatError(PostgresError):
    """The database holds a busca schema of another format version."""


def is_postgres(location) -> bool:
    """True for a `postgresql://` or `postgres://` URL."""
    return isinstance(location, str) and location.split("://", 1)[0].lower() in SCHEMES


def parse_location(url: str) -> tuple[str, str]:
    """(libpq URL without busca's own parameters, corpus schema name)."""
    parts = urlsplit(url)
    params = parse_qsl(parts.query, keep_blank_values=True)
    corpus = DEFAULT_CORPUS
    kept = []
    for key, value in params:
        if key == "corpus":
            corpus = value
        else:
            kept.append((key, value))
    if not _NAME.match(corpus):
        raise PostgresError(f"bad corpus name {corpus!r} in the home URL: use lowercase letters,"
                            " digits and _ (at most 40), e.g. ?corpus=blog")
    return urlunsplit(parts._replace(query=urlencode(kept))), corpus


def redact(url: str) -> str:
    """The URL without its password, for messages."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(":" + parts.password + "@", ":***@")
    return urlunsplit(parts._replace(netloc=netloc))


def quoted(schema: str, name: str = "") -> str:
    """`"schema"."name"` (names are checked or made by busca, never taken from a query)."""
    return f'"{schema}"' + (f'."{name}"' if name else "")


def create_base(conn, schema: str) -> None:
    """Create the schema and its base tables (once, serialised), then check the format."""
    s = quoted(schema)
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (f"busca:{schema}",))
        conn.execute(f"CREATE SCHEMA IF NOT EXISTS {s}")
        conn.execute(BASE_TABLES.format(s=s))
        conn.execute(f"INSERT INTO {s}.busca_meta (key, value) VALUES ('format_version', %s::jsonb)"
                     " ON CONFLICT (key) DO NOTHING", (str(FORMAT_VERSION),))
    check_format(conn, schema)


def check_format(conn, schema: str) -> None:
    """PostgresFormatError unless the schema holds this busca's format version."""
    row = conn.execute(f"SELECT value FROM {quoted(schema)}.busca_meta"
                       " WHERE key = 'format_version'").fetchone()
    version = row[0] if row else None
    if version != FORMAT_VERSION:
        raise PostgresFormatError(
            f"the corpus {schema!r} in this database has format version {version}, this busca"
            f" reads {FORMAT_VERSION} — use a busca of that version, or another ?corpus= name")


def build_table(schema: str, build: str, part: str) -> str:
    """The quoted name of one table of a build, e.g. part = "bm25_terms"."""
    return quoted(schema, f"{build}_{part}")
