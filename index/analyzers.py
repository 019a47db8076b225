"""Analyzers: text -> list of terms. Each index stores the name of the one it used."""

from __future__ import annotations

import re
from collections.abc import Callable

# Runs of characters for which str.isalnum() is true: Python's \w minus the underscore,
# the same set as Java's [\p{L}\p{N}].
_ALNUM_RUN = re.compile(r"[^\W_]+")


def java_terms(text: str) -> list[str]:
    """Lowercase, then every maximal run of Unicode letters or digits (Java parity)."""
    return _ALNUM_RUN.findall(text.lower())


ANALYZERS: dict[str, Callable[[str], list[str]]] = {"java": java_terms}


class UnknownAnalyzer(ValueError):
    """An analyzer name that busca does not know."""


def get_analyzer(name: str) -> Callable[[str], list[str]]:
    """The analyzer called `name`, or an error listing the known ones."""
    try:
        return ANALYZERS[name]
    except KeyError:
        known = ", ".join(sorted(ANALYZERS))
        raise UnknownAnalyzer(f"unknown analyzer {name!r}; known analyzers: {known}") from None
