"""`busca serve`: the HTTP API and the web page over a corpus home (layer above search/,
below cli.py). Needs the `serve` extra (Starlette + uvicorn)."""

__all__ = ["app", "engine", "server"]
