"""Package faces that import their modules on first use, so that `import busca.cli` and a
command load only what that command needs: `busca search` never imports the crawler's HTTP and
HTML stack, scikit-learn or the evaluation code.

A face lists its names in `EXPORTS` (name -> relative module; "module#other" exports that
module's `other` under the name; a value ending in ":" exports that submodule itself) and
calls `face(__name__)`. A submodule named like one of the face's
functions (crawler/crawl.py and `crawl`) does not replace the function when it is imported.
"""

from __future__ import annotations

import importlib
import sys
from types import ModuleType


class _Face(ModuleType):
    def __getattr__(self, name: str):
        where = self.__dict__["EXPORTS"].get(name)
        if where is None:
            raise AttributeError(f"module {self.__name__!r} has no attribute {name!r}")
        if where.endswith(":"):
            value = importlib.import_module(where[:-1], self.__name__)
        else:
            module, _, attribute = where.partition("#")
            value = getattr(importlib.import_module(module, self.__name__), attribute or name)
        self.__dict__[name] = value  # the next look-up is a plain attribute
        return value

    def __setattr__(self, name: str, value) -> None:
        where = self.__dict__.get("EXPORTS", {}).get(name)
        if isinstance(value, ModuleType) and where and not where.endswith(":"):
            return  # the import system binding a submodule over an exported function
        super().__setattr__(name, value)

    def __dir__(self) -> list[str]:
        return sorted(set(self.__dict__) | set(self.__dict__["EXPORTS"]))


def face(package: str) -> None:
    """Make `package` (a module defining EXPORTS) load its names on first use."""
    sys.modules[package].__class__ = _Face
