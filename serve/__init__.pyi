"""Types of the lazy face busca.serve (busca/lazy.py loads the names on first use)."""

from . import access as access
from . import app as app
from . import client as client
from . import discovery as discovery
from . import engine as engine
from . import hosts as hosts
from . import server as server

EXPORTS: dict[str, str]
__all__ = [
    "access",
    "app",
    "client",
    "discovery",
    "engine",
    "hosts",
    "server",
]
