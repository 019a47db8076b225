"""busca: crawl a site into a local index and search it from the terminal, or from Python:
`busca.open(location)` gives a `Corpus` with every use case (docs/python.md).

The names load on first use (PEP 562), so `import busca` and the command line stay fast.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from . import errors as errors
    from .corpus import Corpus as Corpus
    from .search.compare import Comparison as Comparison
    from .corpus import ContextSpec as ContextSpec
    from .corpus import EvalSpec as EvalSpec
    from .corpus import IndexSpec as IndexSpec
    from .corpus import Result as Result
    from .corpus import SearchSpec as SearchSpec
    from .corpus import open as open
    from .crawler.store import Document as Document
    from .search.context import Context as Context
    from .search.eval.golden import Golden as Golden
    from .search.eval.golden import load_golden as load_golden
    from .search.hits import Hit as Hit
    from .version import __version__ as __version__

# name -> module that defines it (relative to this package); "module:" is the module itself
EXPORTS = {
    "Comparison": ".search.compare",
    "Context": ".search.context",
    "ContextSpec": ".corpus",
    "Corpus": ".corpus",
    "Document": ".crawler.store",
    "errors": ".errors:",
    "EvalSpec": ".corpus",
    "Golden": ".search.eval.golden",
    "Hit": ".search.hits",
    "IndexSpec": ".corpus",
    "load_golden": ".search.eval.golden",
    "open": ".corpus",
    "Result": ".corpus",
    "SearchSpec": ".corpus",
    "__version__": ".version",
}
__all__ = ["__version__", *EXPORTS]


if not TYPE_CHECKING:  # type checkers see the imports above, and a typo as an error

    def __getattr__(name: str) -> Any:
        """A public name, imported from its module on first use."""
        where = EXPORTS.get(name)
        if where is None:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        if where.endswith(":"):
            value = importlib.import_module(where[:-1], __name__)
        else:
            value = getattr(importlib.import_module(where, __name__), name)
        globals()[name] = value
        return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(EXPORTS))
