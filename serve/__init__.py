"""`busca serve`: the HTTP API and the web page over a corpus home (layer above search/,
below cli.py). The server needs the `serve` extra (Starlette + uvicorn); `discovery` (the
record a running server leaves in its home), `client` (how `busca search` and `busca
context` ask it) and `hosts` (the Host names it answers) need only the standard library.
Names load on first use (busca/lazy.py).
"""

from ..lazy import face

EXPORTS = {
    "access": ".access:",
    "app": ".app:",
    "client": ".client:",
    "discovery": ".discovery:",
    "engine": ".engine:",
    "hosts": ".hosts:",
    "server": ".server:",
}
__all__ = sorted(EXPORTS)
face(__name__)
