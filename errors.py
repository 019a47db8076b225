"""The one error base: every error a user can fix derives from BuscaError.

Library code raises a narrow subclass whose message is one line naming the problem and the
fix; cli.py catches BuscaError once, prints the message and exits 1.
"""

from __future__ import annotations


class BuscaError(Exception):
    """A problem the user can fix; the message names it and the fix, on one line."""
