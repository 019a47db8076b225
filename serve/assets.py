"""The page's assets, shipped in the package (serve/static/) and served by name only.

Only the names in ASSETS are served: no path from a request ever reaches the file system,
so `/static/../…` and encoded variants are a plain 404.
"""

from __future__ import annotations

from functools import cache
from importlib import resources

from starlette.requests import Request
from starlette.responses import Response

from .errors import HttpError

ASSETS = {
    "busca.css": "text/css; charset=utf-8",
    "busca.js": "text/javascript; charset=utf-8",
    "favicon.svg": "image/svg+xml",
}


@cache
def read(name: str) -> bytes:
    """The bytes of a shipped asset."""
    return resources.files(__package__).joinpath("static", name).read_bytes()


def asset(request: Request) -> Response:
    """GET /static/{name}"""
    name = request.path_params["name"]
    if name not in ASSETS:
        raise HttpError(404, f"not found: /static/{name[:80]}")
    return Response(read(name), media_type=ASSETS[name],
                    headers={"Cache-Control": "public, max-age=3600"})
