"""The busca command's entry point: the command line loaded under a Ctrl-C guard.

Loading the command line takes a few tenths of a second (click, the commands' modules); a
Ctrl-C that landed then printed Python's KeyboardInterrupt traceback, before the handler of
`cli.main` existed. Here it is one line and exit 130, as every interrupted command ends.
"""

from __future__ import annotations

import sys

INTERRUPTED = "Error: interrupted while busca was starting; nothing was done"


def main() -> None:
    """Console-script entry point (pyproject.toml: busca = "busca.entry:main")."""
    try:
        from .cli import main as run
    except KeyboardInterrupt:
        sys.stderr.write(INTERRUPTED + "\n")
        sys.exit(130)
    run()
