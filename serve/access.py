"""Who may read what (`busca serve --tokens FILE`, issue #26): the one place where a request's
token becomes the access rule of the library (`search.Visible`), and the engine as that
request may see it (`engine_for`).

The tokens file: one `TOKEN GROUP[,GROUP…]` per line; blank lines and lines starting with `#`
are ignored. A request with `Authorization: Bearer TOKEN` (or HTTP Basic with TOKEN as the
password, which a browser sends after /login) sees the documents of those groups and the
public ones (documents without groups; none with `--private`); a request without
Authorization sees only the public documents; an unknown token is a 401; the write token
(`--token`) sees everything. Every query is restricted before top-k (a filter like the
user's), a forbidden chunk id answers as a missing one, stats count only what the request may
see. Tokens are compared in constant time and never logged nor echoed.

`busca mcp --http --tokens FILE` reads the same file and applies the same rule: `Gate` (ASGI,
before the mcp library's app) turns each HTTP request's Authorization into its rule, and the
MCP tools run on `scoped(engine, access.current())`, the engine as that request may see it.
"""

from __future__ import annotations

import base64
import binascii
import hmac
from contextvars import ContextVar
from dataclasses import dataclass, replace
from pathlib import Path

from ..corpus import ContextSpec, SearchSpec
from ..crawler import BadGroup, check_groups
from ..errors import BuscaError
from ..search.facets import facets
from ..search.hits import StaleIndex
from ..search.filters import Visible, counts, parse_filters, passes, visible_to
from .errors import CHALLENGE, HttpError, body

MIN_TOKEN = 16  # characters, as --token
NOTHING = "nothing found among the documents this request may see"
EXAMPLE = "s3cr3t-token-of-staff-0001 staff,hr"
STATS = ("chunker", "build", "busca_version")  # figures a restricted request sees as they are
# what a method's entry says of every document: its figures (sizes, and the windows a dense
# or sparse model encoded, reused, cached, truncated) and an openai:MODEL's `probe`, the
# text of the home's shortest window
CORPUS_WIDE = ("vocabulary", "avgdl", "encoded", "reused", "cached", "truncated",
               "group_vectors", "groups_encoded", "same_pass", "per_chunk", "probe")
# the rule of the MCP request being served (set by Gate; the mcp library hands a request's
# context variables to the tool call it carries)
_RULE: ContextVar = ContextVar("busca_access_rule")
_UNSET = object()


class BadTokens(BuscaError):
    """A tokens file that cannot be read or used (one line naming the line and the fix)."""


class Unauthorized(HttpError):
    """A request whose Authorization names no token of this server."""

    def __init__(self):
        super().__init__(401, "unknown token: send Authorization: Bearer <a token of the"
                              " --tokens file>, or no Authorization to see the public"
                              " documents", CHALLENGE)


@dataclass(frozen=True)
class Reader:
    """One read token and the groups it may see."""

    token: bytes
    groups: frozenset[str]


@dataclass(frozen=True)
class Access:
    """The readers of a server, whether documents without groups are hidden (`private`), and
    the write token, which sees everything."""

    readers: tuple[Reader, ...]
    private: bool = False
    writer: bytes | None = None

    def rule(self, authorization: str) -> Visible | None:
        """The rule of a request with this Authorization header (None: it sees everything);
        Unauthorized for a token no reader has."""
        given = presented(authorization)
        if given is None:
            return visible_to((), private=self.private)
        if self.writer is not None and hmac.compare_digest(given, self.writer):
            return None
        found = None
        for reader in self.readers:  # every token compared, in constant time
            if hmac.compare_digest(given, reader.token):
                found = reader
        if found is None:
            raise Unauthorized()
        return visible_to(found.groups, private=self.private)

    def case_slips(self, stored: set[str]) -> list[tuple[str, str]]:
        """(a readers' group, a stored group) pairs that differ only in case, the readers'
        spelling on no document: names compare exactly, so its readers see none of them."""
        given = {name for reader in self.readers for name in reader.groups} - set(stored)
        return [(name, kept) for name in sorted(given) for kept in sorted(stored)
                if name.casefold() == kept.casefold()]

    def current(self) -> Visible | None:
        """The rule of the MCP request being served (Gate set it); outside one, that of a
        request without Authorization (the public documents)."""
        rule = _RULE.get(_UNSET)
        return self.rule("") if rule is _UNSET else rule


def presented(authorization: str) -> bytes | None:
    """The token of `Authorization: Bearer T` or of HTTP Basic (T the password); None when
    there is no header; Unauthorized when it is neither."""
    scheme, _, value = authorization.strip().partition(" ")
    if not scheme:
        return None
    if scheme.lower() == "bearer" and value.strip():
        return value.strip().encode("latin-1", "replace")
    if scheme.lower() == "basic":
        try:
            decoded = base64.b64decode(value.strip(), validate=True)
        except (binascii.Error, ValueError):
            raise Unauthorized() from None
        _, colon, password = decoded.partition(b":")
        if colon and password:
            return password
    raise Unauthorized()


def load(path: str | Path, *, private: bool = False, writer: str | None = None) -> Access:
    """The Access of a tokens file (a local or PostgreSQL home alike); BadTokens naming the
    problem (never a token)."""
    try:
        text = Path(path).read_text(encoding="utf-8-sig")  # a BOM (Notepad) is no token
    except (OSError, UnicodeDecodeError) as e:
        raise BadTokens(f"cannot read the tokens file {path}: {getattr(e, 'strerror', 0) or e}"
                        ) from None
    readers: dict[bytes, int] = {}
    groups: list[frozenset[str]] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if line.strip() and not line.strip().startswith("#"):
            token, names = _line(f"{path} line {number}", line, readers, writer)
            readers[token] = number
            groups.append(names)
    if not readers:
        raise BadTokens(f"{path}: no tokens in it; write one TOKEN GROUP[,GROUP…] per line,"
                        f" e.g. {EXAMPLE}")
    return Access(tuple(Reader(t, g) for t, g in zip(readers, groups)), private,
                  writer.encode() if writer else None)


def _line(where: str, line: str, seen: dict[bytes, int],
          writer: str | None) -> tuple[bytes, frozenset[str]]:
    parts = line.split()
    if len(parts) != 2:
        raise BadTokens(f"{where}: write TOKEN GROUP[,GROUP…] (a token, a space, its groups"
                        f" without spaces), e.g. {EXAMPLE}")
    token, names = parts
    if len(token) < MIN_TOKEN:
        raise BadTokens(f"{where}: the token is shorter than {MIN_TOKEN} characters; make one"
                        " with: python3 -c 'import secrets; print(secrets.token_urlsafe())'")
    if token.encode() in seen:
        raise BadTokens(f"{where}: the same token as line {seen[token.encode()]}; give each"
                        " reader its own token")
    if writer is not None and hmac.compare_digest(token.encode(), writer.encode()):
        raise BadTokens(f"{where}: this is the --token (write) token; a read token must"
                        " differ from it")
    try:
        return token.encode(), frozenset(check_groups(names))
    except BadGroup as e:
        raise BadTokens(f"{where}: {e}") from None


class Scoped:
    """The engine (serve/engine.py) as a request that may see only `rule` sees it: every
    query restricted before top-k; a forbidden chunk is a missing one; the counts of stats
    are those of the visible documents."""

    def __init__(self, engine, rule: Visible):
        self.engine, self.rule = engine, rule

    def __getattr__(self, name: str):
        return getattr(self.engine, name)

    def _filters(self, spec, options: dict) -> tuple:
        return (self.rule, *parse_filters(options.pop("filters", spec.filters)))

    def search(self, query: str, spec: SearchSpec | None = None, /, **options):
        spec = spec or SearchSpec()
        found = self.engine.search(query, spec, filters=self._filters(spec, options), **options)
        return found if found.hits else replace(found, note=NOTHING)

    def context(self, question: str, spec: ContextSpec | None = None, /, **options):
        spec = spec or ContextSpec()
        found, build = self.engine.context(question, spec, filters=self._filters(spec, options),
                                           **options)
        return (found if found.answered else replace(found, reason=NOTHING)), build

    def compare(self, query: str, **options):
        filters = (self.rule, *parse_filters(options.pop("filters", ())))
        comparison, build = self.engine.compare(query, filters=filters, **options)
        notes = {m: NOTHING for m, hits in comparison.columns.items() if not hits}
        return replace(comparison, notes=notes), build

    def facets(self, filters: tuple = ()) -> dict:
        """The facet counts of the documents this request may see that pass `filters`."""
        return self.engine.facets((self.rule, *filters))

    def chunk(self, chunk_id: int):
        try:
            hit = self.engine.chunk(chunk_id)
        except StaleIndex:  # names its document's URL: only to who may see the document
            if not self._admits_source(chunk_id):
                return None
            raise
        return hit if hit is not None and self.rule.admits(hit.meta) else None

    def _admits_source(self, chunk_id: int) -> bool:
        """Whether this request may see the document in the store that chunk_id was cut
        from (none: a document gone from the store is missing to a restricted reader)."""
        def work(live):
            [row] = live.index.chunks([chunk_id])
            document = self.engine.home().get(row.url)
            return document is not None and self.rule.admits(document.meta)

        return self.engine.run(work)

    def stats(self) -> dict:
        """The build's figures with the counts of what this request may see (the documents,
        their chunks and facets); figures over every document left out."""
        figures = self.engine.stats()
        if figures.get("index", "") is None:  # no build yet: the documents it may see
            return self._unindexed()

        def work(live):
            home = self.engine.home()
            documents, chunks = counts(live.index, home, (self.rule,))
            return documents, chunks, facets(home, filters=(self.rule,))

        documents, chunks, shown = self.engine.run(work)
        methods = {m: {k: v for k, v in entry.items() if k not in CORPUS_WIDE}
                   for m, entry in figures.get("methods", {}).items()}
        return {"documents": documents, "chunks": chunks, "methods": methods,
                **{k: figures[k] for k in STATS if k in figures},
                **({"facets": shown} if shown else {}), "restricted": True}

    def _unindexed(self) -> dict:
        """The figures before the first index: the documents it may see, their facets."""
        home = self.engine.home()
        shown = facets(home, filters=(self.rule,))
        seen = sum(1 for r in home.records() if passes(r, (self.rule,)))
        return {"documents": seen, "index": None,
                **({"facets": shown} if shown else {}), "restricted": True}


def scoped(engine, rule: Visible | None):
    """The engine as a request with this rule sees it (None: everything, the engine itself)."""
    return engine if rule is None else Scoped(engine, rule)


def engine_for(request):
    """The engine as this request may see it (serve/engine.py's Engine itself when the server
    has no --tokens or the request bears the write token); Unauthorized for an unknown
    token."""
    engine, access = request.app.state.engine, getattr(request.app.state, "access", None)
    if access is None:
        return engine
    return scoped(engine, access.rule(request.headers.get("authorization", "")))


class Gate:
    """ASGI middleware of `busca mcp --http --tokens`: each HTTP request's Authorization
    becomes the rule of the tool calls it carries (`Access.current`); an unknown token is a
    401 with serve's JSON body before the MCP session sees the request."""

    def __init__(self, app, access: Access):
        self.app, self.access = app, access

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":  # the lifespan: the library's session manager
            return await self.app(scope, receive, send)
        given = next((v for k, v in scope["headers"] if k == b"authorization"), b"")
        try:
            rule = self.access.rule(given.decode("latin-1"))
        except Unauthorized as e:
            return await _refused(e)(scope, receive, send)
        mark = _RULE.set(rule)
        try:
            await self.app(scope, receive, send)
        finally:
            _RULE.reset(mark)


def _refused(error: Unauthorized):
    from starlette.responses import JSONResponse

    return JSONResponse(body(401, str(error)), status_code=401, headers=error.headers)


def unsigned(request) -> str | None:
    """What a request without a token sees on a server with --tokens, said to a browser
    beside a link to /login (None: the request sent a token, or the server has no tokens)."""
    access = getattr(request.app.state, "access", None)
    if access is None or presented(request.headers.get("authorization", "")) is not None:
        return None
    return "no document without a token" if access.private else "public documents only"


def whole(request):
    """The engine for a page that shows the home as it is (/eval: saved runs cite every
    document); 403 for a request that may see less."""
    engine = engine_for(request)
    if isinstance(engine, Scoped):
        raise HttpError(403, "with --tokens, the eval page answers only the write token:"
                             " sign in at /login with it as the password (a browser signed in"
                             " with a read token: a private window), or send Authorization:"
                             " Bearer <the --token>")
    return engine


def login(request):
    """GET /login: the browser's way in: 401 with an HTTP Basic challenge until it sends a
    known token as the password, then back to the page."""
    from starlette.responses import RedirectResponse

    from .html import error_page, local

    access = getattr(request.app.state, "access", None)
    if access is not None:
        challenge = {"WWW-Authenticate": 'Basic realm="busca", charset="UTF-8"'}
        if presented(request.headers.get("authorization", "")) is None:
            return error_page(401, "this server shows its documents to the tokens of its"
                                   " --tokens file: sign in with one as the password (any user"
                                   " name), or go back to / for the public ones", **challenge)
        try:
            access.rule(request.headers["authorization"])
        except Unauthorized:
            return error_page(401, "unknown token: sign in with a token of this server's"
                                   " --tokens file as the password (any user name)",
                              **challenge)
    return RedirectResponse(local("/"), status_code=303)  # relative: under a proxy's sub-path too
