"""HTTP errors of the server: what status each library error becomes, and the JSON body.

Every error answer is `{"error": message, "status": code}`; a message is the library's one
line (it names the problem and the fix). Anything unexpected is a 500 whose body says only
"internal error" — the traceback goes to the log on stderr, never to the client.
"""

from __future__ import annotations

from ..crawler.store import StoreError
from ..errors import BuscaError
from ..index import build as index_build
from ..index import encoders
from ..index.storage import IndexFormatError, IndexNotFound
from ..search import context as answer_context
from ..search import core, fusion
from ..search import dense as search_dense
from ..search.runs import RunError


class HttpError(BuscaError):
    """A request the server refuses, with its HTTP status."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


class BadParameter(HttpError):
    """A query parameter or body field that is missing, malformed or out of range."""

    def __init__(self, message: str):
        super().__init__(400, message)


class BuildRunning(HttpError):
    """A second rebuild was asked for while one runs."""

    def __init__(self):
        super().__init__(409, "an index build is already running; try again when it ends")


# library error -> status; the first matching class wins (subclasses before bases)
STATUSES: tuple[tuple[type[BaseException], int], ...] = (
    (IndexNotFound, 503), (IndexFormatError, 503), (StoreError, 503),
    (encoders.EncoderError, 503),
    (core.UnknownMethod, 400), (search_dense.NoVectors, 400), (search_dense.EmptyQuery, 400),
    (fusion.FusionError, 400), (answer_context.ContextTooSmall, 400),
    (answer_context.TemplateError, 400), (index_build.UnknownMethodError, 400),
    (core.StaleIndex, 409), (index_build.NothingToIndex, 409), (RunError, 422),
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


def body(status: int, message: str, **extra) -> dict:
    """The JSON body of an error answer."""
    return {"error": message, "status": status, **extra}
