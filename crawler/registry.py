"""The sources busca can read a site through, registered in one place.

Each source is one module with `read(ctx, found) -> events`; detectors are functions
`detect(start) -> Discovery | None` (found.py). `STEPS` is the order `--source auto` tries
them in: platform markers in the start page first (cheap and specific), then the WordPress
API, sitemaps, a linked feed, and last the site's own links. A forced `--source NAME` runs
only that source's steps, strictly (a missing source is an error that names another one).

The table itself (`SOURCE_TABLE`, `STEPS`) is in defaults.py, which imports nothing, so the
command line lists the names without loading requests; the modules are imported when a
crawl needs them.
"""

from __future__ import annotations

import importlib

from .defaults import BUILTIN, SOURCE_TABLE, STEPS, Source

_BY_NAME = {s.name: s for s in SOURCE_TABLE}


def source(name: str) -> Source:
    """The registered source called `name`; KeyError if there is none."""
    return _BY_NAME[name]


def detectors(name: str = "auto", *, skip: tuple[str, ...] = ()):
    """(source name, detect function) in the order to try for `--source name`."""
    for step, module, function in STEPS:
        if (name in ("auto", step)) and step not in skip:
            yield step, getattr(importlib.import_module(module), function)


def reader(name: str):
    """The `read(ctx, found)` function of source `name`."""
    entry = _BY_NAME[name]
    module = importlib.import_module(entry.module)
    return getattr(module, f"read_{name}" if entry.module == BUILTIN else "read")
