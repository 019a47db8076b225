"""The map of a PostgreSQL home: every table, its columns and its one writer; created here.

A home is a URL, `postgresql://user@host:port/database` (or `postgres://`), with an optional
`?corpus=NAME` (default `busca`): each corpus is one PostgreSQL schema, so several corpora share
a database without mixing. Tables of schema `<corpus>`:

    busca_meta (key, value jsonb)   format_version, live build        here, build.py
    documents                       url, title, text, source, meta... index/postgres/store.py
    settings (key, value jsonb)     crawl state, settings             index/postgres/store.py
    changes (id, version)           the documents' version            here (its trigger writes it)
    queries                         the query log                     index/postgres/home.py
    builds (name, manifest json)    one row per published build       index/postgres/build.py
                                    (json keeps the manifest's key order, which jsonb sorts:
                                    busca stats prints as a local home does; corpora made
                                    before kept jsonb and read the same)
  one set per build `<b>` (written in the build's one transaction by index/postgres/build.py;
  a name over PostgreSQL's 63 bytes is shortened with a hash, `short_name`):
    <b>_chunks                      chunk rows: id, url, position, start, end, doc_sha256
    <b>_<m>_postings                per term of lexical method m: term, term_id (the local
                                    column), df, idf, bound, and its posting list, the local
                                    CSR column slice: ids and vals as bytea packed by
                                    index/postgres/lists.py, stored out of line, not compressed
    <b>_dense                       per chunk: text hash, pgvector embedding (+ HNSW index)
    <b>_arrays (name, data bytea)   the method's other arrays as .npy bytes (idf, norms, ...)
  and, only for builds made with `?lexical=sql` (ranking inside PostgreSQL, index/postgres/rank.py):
    <b>_<m>_terms                   per term: term, term_id, df, idf, bound, tops (the first
                                    val of each of its blocks)
    <b>_<m>_blocks                  a term's postings, best val first, in blocks of 256, 512,
                                    1024, ... postings: term_id, block, chunks int4[], vals float4[]
    <b>_<m>_forward                 per chunk: norm, term ids int4[], vals float4[] (exact scoring)

`vals` are busca's own numbers: bm25 impacts (float32, index/lexical/bm25.py), tfidf raw counts in
`postings` and `forward`, count / chunk norm in `blocks` (the key that orders a term's postings).

Layout: with `?partitions=N` (N > 1) every table that grows with the corpus is hash-
partitioned into N partitions by its distribution key — the key Citus would distribute it by
(docs/postgres.md): `documents` by url (when the corpus is created), `<b>_chunks` by id,
`<b>_<m>_postings` and `_terms` by term, `_blocks` by term_id, `_forward` and `<b>_dense` by
chunk; the small tables (busca_meta, settings, builds, queries, `<b>_arrays`) stay whole.
Readers issue the same statements on either layout.

The documents' `meta` (jsonb, with a GIN index) came without a format version: a corpus made
before it is given the column in place by its first write (ALTER TABLE … ADD COLUMN IF NOT
EXISTS meta jsonb, add_meta) and reads as without metadata until then.

Format versions: 1 had only the SQL ranking tables; 2 (this busca) adds `postings`. A corpus
of an older version keeps its documents and is refused for searching with a one-line hint to
run `busca index`, whose build moves it to this version; a newer version is refused.
"""

from __future__ import annotations

import hashlib
import re
from urllib.parse import parse_qsl, quote, unquote, urlencode, urlsplit

from ...errors import BuscaError
from ..home.storage import HomeNotFound, IndexFormatError

FORMAT_VERSION = 3  # 3: builds whose pt analyzer accents plain suffixes (index/home/manifest.py)
READS = (2, 3)  # read whole (a 2's builds are asked as they were built)
OLDER_VERSIONS = (1,)  # their documents, settings and query log are read as they are
SCHEMES = ("postgresql", "postgres")
DEFAULT_CORPUS = "busca"
# busca's own home URL parameters besides corpus (index/postgres/home.py reads them), with their
# values (None: a whole number; str: any text, checked by its reader)
OPTIONS = {"dense": ("hnsw", "exact"), "lexical": ("busca", "sql"), "ef_search": None,
           "cache_mb": None, "read": str, "read_wait": None, "partitions": None,
           "answer_wait": None}
EXAMPLES = {"ef_search": 200, "cache_mb": 256, "read_wait": 10, "partitions": 8,
            "answer_wait": 30}
OPTION_MOST = {"ef_search": 1000}  # pgvector's range of hnsw.ef_search is 1..1000
# the distribution key of each table that grows with the corpus (index/postgres/build.py)
DISTRIBUTION = {"documents": "url", "chunks": "id", "postings": "term", "terms": "term",
                "blocks": "term_id", "forward": "chunk", "dense": "chunk"}
_NAME = re.compile(r"^[a-z_][a-z0-9_]{0,39}$")
RESERVED = re.compile(r"^(pg_.*|information_schema)$")  # PostgreSQL's own schemas
_WHOLE = re.compile(r"[0-9]+")  # ASCII digits only (str.isdigit also takes "²")
MAX_IDENTIFIER = 63  # bytes: PostgreSQL cuts longer names (NAMEDATALEN - 1)
HIDDEN = "***"  # a password in a message

BASE_TABLES = """
CREATE TABLE IF NOT EXISTS {s}.busca_meta (key text PRIMARY KEY, value jsonb NOT NULL);
CREATE TABLE IF NOT EXISTS {s}.settings (key text PRIMARY KEY, value jsonb NOT NULL);
CREATE TABLE IF NOT EXISTS {s}.queries (
    id bigserial PRIMARY KEY, at text NOT NULL, command text NOT NULL, query text NOT NULL,
    method text NOT NULL, k integer NOT NULL, scores jsonb NOT NULL, floor float8,
    answered boolean NOT NULL, seconds float8 NOT NULL);
CREATE TABLE IF NOT EXISTS {s}.builds (
    name text PRIMARY KEY, manifest json NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now());
"""

CHUNKS = """CREATE TABLE {t} (id int4 PRIMARY KEY, url text NOT NULL, position int4 NOT NULL,
    start int4 NOT NULL, "end" int4 NOT NULL, doc_sha256 text NOT NULL)"""
POSTINGS = """CREATE TABLE {t} (term text NOT NULL, term_id int4 NOT NULL, df int4 NOT NULL,
    idf float8 NOT NULL, bound float8 NOT NULL, ids bytea NOT NULL, vals bytea NOT NULL)"""
POSTINGS_STORAGE = ("ALTER TABLE {t} ALTER COLUMN ids SET STORAGE EXTERNAL,"
                    " ALTER COLUMN vals SET STORAGE EXTERNAL")  # out of line, not compressed
POSTINGS_KEYS = ["ALTER TABLE {t} ADD PRIMARY KEY (term)"]
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
DOCUMENTS = """CREATE TABLE IF NOT EXISTS {t} (
    url text PRIMARY KEY, title text NOT NULL, text text NOT NULL,
    source text NOT NULL DEFAULT '', modified text, sha256 text NOT NULL,
    fetched_at text NOT NULL, meta jsonb)"""
# the documents' metadata: a column added in place to a corpus made before it, and its GIN
# index (jsonb_ops: `meta ?| keys`, the filters' pre-selection, index/postgres/store.py)
META_COLUMN = "ALTER TABLE {t} ADD COLUMN IF NOT EXISTS meta jsonb"
META_INDEX = "CREATE INDEX IF NOT EXISTS documents_meta ON {t} USING gin (meta)"
HAS_META = """SELECT EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = to_regclass(%s)
    AND attname = 'meta' AND NOT attisdropped)"""


def create_table(cur, ddl: str, table: str, part: str, partitions: int = 0) -> None:
    """Run `ddl` (a CREATE TABLE of `table`, quoted); with partitions > 1, as a table hash-
    partitioned by the distribution key of `part` (DISTRIBUTION) into that many partitions,
    named `<table>_p<i>`."""
    if partitions <= 1:
        cur.execute(ddl)
        return
    cur.execute(f"{ddl} PARTITION BY HASH ({DISTRIBUTION[part]})")
    schema, name = table[:-1].split('"."', 1)
    for i in range(partitions):
        child = f'{schema}"."{short_name(f"{name}_p{i}")}"'
        cur.execute(f"CREATE TABLE {child} PARTITION OF {table}"
                    f" FOR VALUES WITH (MODULUS {partitions}, REMAINDER {i})")


class PostgresError(BuscaError):
    """The PostgreSQL home cannot be reached, read or written."""


class PostgresFormatError(PostgresError):
    """The database holds a busca schema of another format version."""


class CorpusNotFound(PostgresError, HomeNotFound):
    """A command that only reads named a corpus the database does not hold."""


class PostgresDamaged(PostgresFormatError):
    """The live build (or the build pointer) was changed by hand: a table or rows gone, a
    column of another type; `busca index` makes a new build."""


class PostgresOldFormat(PostgresFormatError, IndexFormatError):
    """The corpus was indexed by an older busca: its documents are read, its builds are not
    (an IndexFormatError: `busca index` rebuilds instead of reusing them)."""


def is_postgres(location) -> bool:
    """True for a `postgresql://` or `postgres://` URL."""
    return isinstance(location, str) and location.split("://", 1)[0].lower() in SCHEMES


def parse_location(url: str) -> tuple[str, str]:
    """(libpq URL without busca's own parameters, corpus schema name)."""
    parts = _split(url)
    params = parse_qsl(parts.query, keep_blank_values=True)
    corpus = DEFAULT_CORPUS
    kept = []
    if [key for key, _ in params].count("corpus") > 1:
        raise PostgresError("?corpus= is given twice in the home URL: give one corpus")
    for key, value in params:
        if key == "corpus":
            corpus = value
        else:
            kept.append((key, value))
    if not _NAME.match(corpus):
        raise PostgresError(f"bad corpus name {corpus!r} in the home URL: use lowercase letters,"
                            " digits and _, starting with a letter or _ (at most 40), e.g."
                            " ?corpus=blog")
    if RESERVED.match(corpus):
        raise PostgresError(f"bad corpus name {corpus!r} in the home URL: pg_* and"
                            " information_schema are PostgreSQL's own schemas — use another"
                            " name, e.g. ?corpus=blog")
    return _without(parts, kept), corpus


def read_options(url: str) -> tuple[str, dict]:
    """(the URL without busca's query options, those options), each value checked."""
    parts = _split(url)
    options, kept = {}, []
    for key, value in parse_qsl(parts.query, keep_blank_values=True):
        if key in OPTIONS:
            options[key] = value
        else:
            kept.append((key, value))
    for key, allowed in OPTIONS.items():
        if key in options and allowed is not str:
            _check_option(key, options[key], allowed)
    return _without(parts, kept), options


def _check_option(key: str, value: str, allowed) -> None:
    """PostgresError naming the fix unless `value` is one of `allowed` (None: a whole number
    of ASCII digits, at most OPTION_MOST[key])."""
    if allowed is not None:
        if value not in allowed:
            raise PostgresError(f"{key}={value} in the home URL: use "
                                + " or ".join(f"{key}={a}" for a in allowed))
        return
    example = f"e.g. {key}={EXAMPLES[key]}"
    if re.fullmatch(r"-[0-9]+", value):
        raise PostgresError(f"{key}={value} in the home URL must not be negative: use a whole"
                            f" number, {example}")
    if not _WHOLE.fullmatch(value):
        raise PostgresError(f"{key}={value} in the home URL: use a whole number, {example}")
    most = OPTION_MOST.get(key)
    if most is not None and int(value) > most:
        raise PostgresError(f"{key}={value} in the home URL: at most {most} (pgvector's"
                            f" limit), {example}")


def _split(url: str):
    """urlsplit, with a malformed URL as one line (which does not repeat the URL: it may hold
    a password)."""
    try:
        parts = urlsplit(url)
    except ValueError as e:  # e.g. "Invalid IPv6 URL": a "[" without its "]"
        raise PostgresError(f"a malformed PostgreSQL URL ({e}) — check its host part, e.g."
                            " postgresql://user@host:5432/rag?corpus=blog, or"
                            " postgresql://user@[::1]:5432/rag") from None
    if _raw_credentials(parts):
        raise PostgresError(
            "the user or password in the PostgreSQL URL holds a character that must be"
            " percent-encoded (@ as %40, / as %2F, ? as %3F, # as %23, % as %25:"
            ' urllib.parse.quote(password, safe="") does it) — or leave the password out of'
            " the URL and set PGPASSWORD or ~/.pgpass")
    return parts


def _raw_credentials(parts) -> bool:
    """Whether the URL's user or password holds an @, /, ?, # or % left unencoded: libpq
    (and urlsplit) would cut the URL elsewhere, take part of the password for a host or a
    database, and echo it in its messages."""
    netloc = parts.netloc
    if "@" in parts.fragment or netloc.count("@") > 1 or any(
            "@" in p.partition("=")[0] for p in parts.query.split("&")):
        return True  # a # or ? in the password, or two @
    if "@" in parts.path:  # a / in the password (a database name may hold an @ itself)
        try:
            parts.port
        except ValueError:
            return True
        if "@" not in netloc:
            return True
    return bool(re.search(r"%(?![0-9A-Fa-f]{2})", netloc.rpartition("@")[0]))


def _without(parts, kept: list) -> str:
    """The URL with only the `kept` parameters, percent-encoded as libpq decodes them (a space
    as %20: libpq does not read "+" as a space, e.g. in options=-c%20name%3Dvalue)."""
    return _unsplit(parts._replace(query=urlencode(kept, quote_via=quote)))


def _unsplit(parts) -> str:
    """The URL of urlsplit's `parts`, keeping `//` when the host part is empty
    (`postgresql:///db?host=/run/postgresql`, which urlunsplit turns into `postgresql:/db`)."""
    url = f"{parts.scheme}://{parts.netloc}{parts.path}"
    return url + (f"?{parts.query}" if parts.query else "") + (
        f"#{parts.fragment}" if parts.fragment else "")


def redact(url: str) -> str:
    """The URL without its passwords, for every message: the host part's, every `password=`
    parameter's, and those of a `read=` URL inside it; anything else (a local home's path)
    as given."""
    if "://" not in url:
        return url
    try:
        parts = urlsplit(url)
        password = parts.password
        raw = _raw_credentials(parts)
    except ValueError:  # malformed: hide whatever could be a password
        return re.sub(r"(://[^/@:]*:)[^/@]*@", rf"\1{HIDDEN}@",
                      re.sub(r"(?i)(password=)[^&]*", rf"\1{HIDDEN}", url))
    if raw:  # everything up to the last @ may be the password
        return re.sub(r"(?s)^([^:]*://).*@", rf"\1{HIDDEN}@", url)
    netloc = parts.netloc
    if password is not None:
        user, _, hosts = netloc.rpartition("@")
        netloc = f"{user.split(':', 1)[0]}:{HIDDEN}@{hosts}"
    query = "&".join(_redact_parameter(p) for p in parts.query.split("&")) if parts.query else ""
    return _unsplit(parts._replace(netloc=netloc, query=query))


def _redact_parameter(parameter: str) -> str:
    """One `key=value` of a query string, its value hidden when it is a password or a URL
    holding one (the rest as written)."""
    key, sep, value = parameter.partition("=")
    name = unquote(key.replace("+", " ")).strip().lower()
    if sep and name == "password":
        return f"{key}={HIDDEN}"
    if sep and name == "read":
        inner = unquote(value.replace("+", " "))
        hidden = redact(inner)
        return parameter if hidden == inner else f"{key}={quote(hidden, safe='')}"
    return parameter


def quoted(schema: str, name: str = "") -> str:
    """`"schema"."name"` (names are checked or made by busca, never taken from a query)."""
    return f'"{schema}"' + (f'."{name}"' if name else "")


CORPORA = """SELECT n.nspname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE c.relname = 'busca_meta' AND c.relkind = 'r'"""
SHOWN_CORPORA = 10


def corpora(conn) -> list[str]:
    """The corpora of the database: schemas holding a `busca_meta` table (catalogs only, which
    every role may read)."""
    return [row[0] for row in conn.execute(CORPORA + " ORDER BY 1").fetchall()]


def corpus_exists(conn, schema: str) -> bool:
    """Whether the corpus `schema` exists (catalogs only)."""
    return bool(conn.execute(CORPORA + " AND n.nspname = %s", (schema,)).fetchone())


def missing_corpus(conn, schema: str, where: str) -> CorpusNotFound:
    """The one-line error for a read of a corpus that does not exist (nothing is created)."""
    names = corpora(conn)
    listed = ", ".join(names[:SHOWN_CORPORA]) + (f" and {len(names) - SHOWN_CORPORA} more"
                                                  if len(names) > SHOWN_CORPORA else "")
    there = f"its corpora: {listed}" if names else "it holds none yet"
    return CorpusNotFound(
        f"no corpus {schema!r} in {where} ({there}) — check ?corpus= in --home (or BUSCA_HOME),"
        ' or crawl or add documents into it and run "busca index" first')


def create_base(conn, schema: str, partitions: int = 0) -> None:
    """Create the schema and its base tables (once, serialised; `documents` hash-partitioned
    when partitions > 1), then check the format."""
    s = quoted(schema)
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (f"busca:{schema}",))
        _refuse_foreign(conn, schema)
        if not conn.execute("SELECT 1 FROM pg_namespace WHERE nspname = %s",
                            (schema,)).fetchone():  # IF NOT EXISTS needs CREATE on the database
            conn.execute(f"CREATE SCHEMA {s}")  # even when the schema exists
        conn.execute(BASE_TABLES.format(s=s))
        if conn.execute("SELECT to_regclass(%s) IS NULL", (f"{s}.documents",)).fetchone()[0]:
            create_table(conn, DOCUMENTS.format(t=quoted(schema, "documents")),
                         quoted(schema, "documents"), "documents", partitions)
            conn.execute(META_INDEX.format(t=quoted(schema, "documents")))
        if not has_changes(conn, schema):
            conn.execute(CHANGES.format(s=s, t=quoted(schema, "documents")))
        conn.execute(f"INSERT INTO {s}.busca_meta (key, value) VALUES ('format_version', %s::jsonb)"
                     " ON CONFLICT (key) DO NOTHING", (str(FORMAT_VERSION),))
    check_format(conn, schema, builds=False)


FOREIGN = """SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = %s AND c.relkind IN ('r', 'p', 'v', 'm', 'f') ORDER BY 1 LIMIT 6"""


def _refuse_foreign(conn, schema: str) -> None:
    """PostgresError when `schema` holds tables or views and no busca corpus: an
    application's schema (busca would add its columns to a `documents` table of its own, then
    fail on it); an empty or new schema becomes the corpus."""
    if corpus_exists(conn, schema):
        return
    names = [row[0] for row in conn.execute(FOREIGN, (schema,)).fetchall()]
    if names:
        shown = ", ".join(names[:5]) + (" …" if len(names) > 5 else "")
        raise PostgresError(f"the schema {schema!r} already holds tables that are not a busca"
                            f" corpus ({shown}); busca keeps each corpus in a schema of its own"
                            " — choose another ?corpus= name, e.g. ?corpus=busca")


# `changes.version`: a random value drawn again by a statement-level trigger in the
# transaction of every statement that writes `documents` (ENABLE ALWAYS: on a logical
# replica's apply too; as its owner: a role that may write documents need not write it;
# the schema is the trigger's table's, never a name written in: a renamed corpus keeps
# working); search/filters.py caches the filters' masks by it.
CHANGES = """CREATE TABLE IF NOT EXISTS {s}.changes (
    id int PRIMARY KEY CHECK (id = 1), version text NOT NULL);
INSERT INTO {s}.changes VALUES (1, md5(random()::text || clock_timestamp()::text))
    ON CONFLICT (id) DO NOTHING;
CREATE OR REPLACE FUNCTION {s}.busca_documents_changed() RETURNS trigger LANGUAGE plpgsql
    SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS
    $$BEGIN EXECUTE format('UPDATE %I.changes SET version = %L', TG_TABLE_SCHEMA,
    md5(random()::text || clock_timestamp()::text)); RETURN NULL; END$$;
DROP TRIGGER IF EXISTS busca_documents_changed ON {t};
CREATE TRIGGER busca_documents_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON {t}
    FOR EACH STATEMENT EXECUTE PROCEDURE {s}.busca_documents_changed();
ALTER TABLE {t} ENABLE ALWAYS TRIGGER busca_documents_changed"""
HAS_CHANGES = """SELECT EXISTS (SELECT 1 FROM pg_trigger WHERE tgrelid = to_regclass(%s)
    AND tgname = 'busca_documents_changed')"""


VERSIONED = HAS_CHANGES + " AND has_table_privilege(to_regclass(%s), 'SELECT')"


def versioned(conn, schema: str) -> bool:
    """Whether this role can read the corpus's `changes.version` (kept, and granted to it: a
    role granted its tables before `changes` existed reads the documents each time)."""
    return bool(conn.execute(VERSIONED, (quoted(schema, "documents"),
                                         quoted(schema, "changes"))).fetchone()[0])


def has_changes(conn, schema: str) -> bool:
    """Whether the corpus keeps `changes.version` (its trigger exists; catalogs only)."""
    return bool(conn.execute(HAS_CHANGES, (quoted(schema, "documents"),)).fetchone()[0])


def track_changes(conn, schema: str) -> None:
    """Give a corpus made before `changes` the table and its trigger, together (once,
    serialised like create_base); left as it is when this role may not (it must own
    `documents` and create in the schema): its searches then read the documents each time."""
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (f"busca:{schema}",))
        may = conn.execute(MAY_TRACK, (schema, quoted(schema, "documents"))).fetchone()
        if has_changes(conn, schema) or not (may and may[0]):
            return
        conn.execute(CHANGES.format(s=quoted(schema), t=quoted(schema, "documents")))


MAY_TRACK = """SELECT pg_has_role(c.relowner, 'MEMBER') AND has_schema_privilege(%s, 'CREATE')
    FROM pg_class c WHERE c.oid = to_regclass(%s)"""


def has_meta(conn, schema: str) -> bool:
    """Whether the corpus's documents have their `meta` column (catalogs only)."""
    return bool(conn.execute(HAS_META, (quoted(schema, "documents"),)).fetchone()[0])


def add_meta(conn, schema: str) -> None:
    """Give the documents of a corpus made before metadata their `meta` column and its index
    (once, serialised like create_base; the role must own the table)."""
    table = quoted(schema, "documents")
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (f"busca:{schema}",))
        conn.execute(META_COLUMN.format(t=table))
        conn.execute(META_INDEX.format(t=table))


def check_format(conn, schema: str, *, builds: bool = True) -> None:
    """PostgresFormatError unless the schema holds this busca's format version (an older one
    is accepted when `builds` is False: its documents, settings and query log are the same);
    PostgresOldFormat, with the rebuild hint, for an older one whose builds are to be read."""
    row = conn.execute(f"SELECT value FROM {quoted(schema)}.busca_meta"
                       " WHERE key = 'format_version'").fetchone()
    if row is None:
        raise PostgresFormatError(
            f"the corpus {schema!r} in this database has no format version (the row"
            f" 'format_version' of its busca_meta is missing) — if a busca of this version made"
            f" it, restore it: INSERT INTO {quoted(schema)}.busca_meta VALUES"
            f" ('format_version', '{FORMAT_VERSION}')")
    version = row[0]
    if version in READS or (version in OLDER_VERSIONS and not builds):
        return
    if version in OLDER_VERSIONS:
        raise PostgresOldFormat(
            f"the corpus {schema!r} in this database was indexed by an older busca (format"
            f" version {version}, this busca reads {FORMAT_VERSION}) — run \"busca index\" to"
            " rebuild it (its documents are kept)")
    raise PostgresFormatError(
        f"the corpus {schema!r} in this database has format version {version}, this busca"
        f" reads {FORMAT_VERSION} — use a busca of that version, or another ?corpus= name")


def set_format(conn, schema: str) -> None:
    """Record this busca's format version (a build does, in its transaction)."""
    conn.execute(f"UPDATE {quoted(schema)}.busca_meta SET value = %s::jsonb"
                 " WHERE key = 'format_version'", (str(FORMAT_VERSION),))


def damaged(schema: str, build: str, problem: str) -> PostgresDamaged:
    """The one line for a live build changed by hand, naming the fix."""
    return PostgresDamaged(
        f"the live build {build} of the corpus {schema!r} is damaged ({problem}) — run"
        ' "busca index" to make a new build (the documents are kept)')


def build_table(schema: str, build: str, part: str) -> str:
    """The quoted name of one table of a build, e.g. part = "bm25_terms" (shortened to fit
    PostgreSQL's 63 bytes: `short_name`)."""
    return quoted(schema, short_name(f"{build}_{part}"))


def legacy_table(schema: str, build: str, part: str) -> str:
    """The name busca used before `short_name`: PostgreSQL cut it at 63 bytes when it created
    the table, and cuts it the same way when reading."""
    return quoted(schema, f"{build}_{part}")


def short_name(name: str) -> str:
    """`name` if it fits in MAX_IDENTIFIER bytes, else its head and a hash of the whole name
    (PostgreSQL would cut it, and two long names with the same head would collide)."""
    if len(name.encode()) <= MAX_IDENTIFIER:
        return name
    digest = hashlib.sha256(name.encode()).hexdigest()[:10]
    head = name.encode()[:MAX_IDENTIFIER - len(digest) - 1].decode(errors="ignore")
    return f"{head}_{digest}"
