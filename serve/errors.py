"""HTTP errors of the server: what status each library error becomes, and the JSON body.

Every error answer is `{"error": message, "status": code}`; a message is the library's one
line (it names the problem and the fix). A problem on the server's side — no index yet, the
database down or refusing the role — is a 503 (busca serve connects again when the database
is back). Anything unexpected is a 500 whose body says only
"internal error" — the traceback goes to the log on stderr, never to the client; an error
a client is told less of (`public`) is one line of that log as it was (`told`).
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path

from .. import index as indexing
from .. import search as searching
from ..crawler import StoreError
from ..errors import BuscaError
from ..index.dense.embedding_api import public_url
from ..index.dense.encoders import ST_PREFIX
from ..index.postgres.schema import redact
from ..search.eval import RunError


log = logging.getLogger(__name__)

# the challenge of every 401 (RFC 6750 §3): a token goes in Authorization: Bearer
CHALLENGE = {"WWW-Authenticate": 'Bearer realm="busca"'}


class HttpError(BuscaError):
    """A request the server refuses, with its HTTP status and the headers of its answer."""

    def __init__(self, status: int, message: str, headers: dict[str, str] | None = None):
        super().__init__(message)
        self.status, self.headers = status, dict(headers or {})


class BadParameter(HttpError):
    """A query parameter or body field that is missing, malformed or out of range."""

    def __init__(self, message: str):
        super().__init__(400, message)


class BuildRunning(HttpError):
    """A second rebuild was asked for while one runs."""

    def __init__(self):
        super().__init__(409, "an index build is running; try again when it ends")


# library error -> status, when not 400 (every other BuscaError is the caller's to fix)
STATUSES: tuple[tuple[type[BaseException], int], ...] = (
    (indexing.IndexNotFound, 503), (indexing.IndexFormatError, 503), (StoreError, 503),
    (indexing.EncoderError, 503), (indexing.BackendUnavailable, 503),
    (indexing.RerankError, 400),  # --rerank's own options
    (indexing.EmbeddingServerError, 503),  # the user's embedding or re-ranking server:
    #                                        away, refusing busca's key, or answering garbage
    (indexing.PostgresError, 503),  # the database is down, or the role may not do it
    (searching.StaleIndex, 409), (indexing.NothingToIndex, 409), (indexing.BuildLocked, 409),
    (RunError, 422), (indexing.DiskFull, 507),
)


def status_of(error: BaseException) -> int | None:
    """The HTTP status of a known error, None for anything unexpected."""
    if isinstance(error, HttpError):
        return error.status
    for kind, status in STATUSES:
        if isinstance(error, kind):
            return status
    if isinstance(error, BuscaError):
        return 400
    return None


HOME = "the server's home"
DATABASE = "the server's database"
RUNS = "the runs folder"
SERVER = "the model server"


def public(message: object, home, runs: Path | None = None,
           servers: Iterable[str] = ()) -> str:
    """`message` as a network client may read it: the server's folders it names (the home,
    `runs`) named relative to them (`index-…`, `r1.json`), or as "the server's home"; a
    postgresql:// home as "the server's database"; the user's model servers (`servers`, their
    URLs) unnamed: "the embedding server at URL" as "the embedding server" (the library's
    messages name them for the local user; the log on stderr keeps them). An error that
    carries its own client wording (`public`: PostgresDenied, whose GRANT names roles and
    objects) is told in that wording."""
    text = _client_wording(message)
    for url in servers:
        text = _unnamed(text, url)
    names = [(form, DATABASE if "://" in form else HOME) for form in _forms(home)]
    names += [(form, RUNS) for form in _forms(runs)] if runs is not None else []
    for form, name in sorted(names, key=lambda n: len(n[0]), reverse=True):
        if "://" in form:
            text = text.replace(form, name)
            continue
        # a file under the folder: its name relative to it; then the folder itself (not
        # /srv/home2 or /srv/home.json for the home /srv/home, nor a URL's path /srv/…)
        start = r"(?<![\w./:-])" + re.escape(form.rstrip(os.sep))
        text = re.sub(start + re.escape(os.sep) + r"(?=[\w.-])", "", text)
        text = re.sub(start + r"(?![\w-]|\.\w)", name, text)
    return text


def for_engine(engine, message: object, runs: Path | None = None) -> str:
    """`public` for a client of `engine` (busca serve, busca mcp --http): its home, its model
    servers, and `runs`, the runs folder a server shows."""
    return public(message, engine.location, runs, engine.model_servers())


def for_client(request, message: object) -> str:
    """`for_engine` for a request of busca serve: its engine, its runs folder."""
    state = request.app.state
    return for_engine(state.engine, message, getattr(state, "runs", None))


def error_for_client(request, error: object, status: int) -> str:
    """`for_client` of an error answered to `request` with `status`; the message as it is goes
    to the log when the client is told less (`told`)."""
    shown = for_client(request, error)
    told(error, shown, f"{status} {request.method} {shown_path(request.url.path)}")
    return shown


def told(error: object, shown: str, what: str) -> None:
    """When `shown`, what a client was told of `error` (`public`), is not its whole message:
    the message as it is to the server's log on stderr (one line, no traceback, passwords
    hidden), so that its operator sees which folder, URL or GRANT it was about. `what`
    names the answer (`503 GET /api/search`, `tool search`)."""
    text = str(error)
    if shown != text:
        log.warning("%s: %s", _one_line(what), _one_line(_URL.sub(lambda m: redact(m[0]), text)))


_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s'\"()]+")


def _one_line(text: str) -> str:
    """`text` on one line, its control characters written as escapes (a client's path)."""
    return re.sub(r"[\x00-\x1f\x7f]", lambda m: repr(m[0])[1:-1], text)


SHOWN_PATH = 80  # characters of a request path an error message repeats


def shown_path(path: str) -> str:
    """`path` cut to its first SHOWN_PATH characters and "…": the client sent the path, so
    repeating it whole only lets a 60 KB request line come back as a 60 KB error body."""
    return path if len(path) <= SHOWN_PATH else path[:SHOWN_PATH] + "…"


def _client_wording(message: object) -> str:
    """`message`'s text, with the error it is or wraps (an MCP tool error's cause) that has a
    `public` wording told in that wording instead."""
    text, seen, error = str(message), set(), message
    while isinstance(error, BaseException) and id(error) not in seen:
        seen.add(id(error))
        wording = getattr(error, "public", None)
        if isinstance(wording, str) and wording:
            whole = str(error)
            for form in (whole, " ".join(whole.split())):
                if form and form in text:
                    return text.replace(form, wording)
            return wording
        if isinstance(error, BuscaError):  # busca's own error, told as it is
            break
        error = error.__cause__ or error.__context__
    return text


def public_methods(methods: Mapping[str, dict]) -> dict[str, dict]:
    """Each method's manifest entry as a network client may read it (GET /api/stats, MCP's
    stats, POST /api/index): a sentence-transformers model named by its folder's name, not
    its path; an openai:MODEL's server settings without its URL (`busca stats` shows both)."""
    shown = {}
    for method, entry in methods.items():
        entry = dict(entry)
        encoder = entry.get("encoder")
        if isinstance(encoder, str) and encoder.startswith(ST_PREFIX):
            entry["encoder"] = ST_PREFIX + Path(encoder[len(ST_PREFIX):].rstrip("/\\")).name
        if isinstance(entry.get("server"), dict):
            entry["server"] = {k: v for k, v in entry["server"].items() if k != "url"}
        shown[method] = entry
    return shown


def _unnamed(text: str, url: str) -> str:
    """`text` without the model server `url` in any form a message writes it (as given,
    without its password, without its path or query; with any path after it): " at URL"
    dropped, any other mention SERVER (a longer host name or port is another server's)."""
    forms = set()
    for form in (url, public_url(url)):
        forms |= {form, re.split(r"[?#]", form)[0], re.match(r"[^/]*//[^/?#]*", form)[0]
                  if "//" in form else form}
    for form in sorted({f.rstrip("/") for f in forms if f.rstrip("/")}, key=len, reverse=True):
        pattern = r"( at )?" + re.escape(form) + r"(?![\w:-]|\.\w)(?:[/?#][^\s'\"()]*)?"
        text = re.sub(pattern, lambda m: "" if m[1] else SERVER, text, flags=re.IGNORECASE)
    return text


def _forms(location) -> set[str]:
    """How messages may write `location`: a URL as given and without its password, a folder
    absolute (as given, with ~ expanded, and with its links resolved)."""
    text = str(location)
    if "://" in text:
        return {text, redact(text)}
    path = Path(os.path.expanduser(text))
    return {str(form) for form in (path.absolute(), path.resolve())
            if str(form) != os.sep} | ({text} if os.path.isabs(text) else set())


def body(status: int, message: str, **extra) -> dict:
    """The JSON body of an error answer."""
    return {"error": message, "status": status, **extra}
