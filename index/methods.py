"""The one registry of ranking methods: what builds each one and what ranks it locally.

A method is `lexical` (term weights computed by busca: tfidf, bm25), `dense` (chunk vectors)
or `fused` (hybrid: search/fusion.py fuses the ranked lists of the others; it stores only
settings). The names here are the names users type, in the order `busca` lists them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ..errors import BuscaError
from .bm25 import build as bm25_build, build_counts as bm25_counts
from .dense import build as dense_build, build_hybrid
from .encoders import check_name, default_encoder
from .lexical import Bm25Scorer, TfidfScorer
from .tfidf import build as tfidf_build, build_counts as tfidf_counts
from .vectors import DenseScorer

DEFAULT = ("tfidf", "bm25")  # what `busca index` builds without --methods
LEXICAL = ("bm25", "tfidf")  # the first one an index has is hybrid's default lexical side
HYBRID = "hybrid"
DENSE = "dense"


class UnknownMethod(BuscaError, ValueError):
    """A method busca cannot build, or that an index was not built with."""


@dataclass(frozen=True)
class Method:
    """How one method is built (`build(texts, out, *, options, previous, on_progress)`, or
    `build_counts(counts, out, *, options, on_progress)` from the shared tokenising pass) and
    ranked on a local home (`ranker(build, method)`; None: fused by the search layer)."""

    name: str
    kind: str  # "lexical" | "dense" | "fused"
    build: Callable
    build_counts: Callable | None = None
    ranker: Callable | None = None


METHODS: dict[str, Method] = {
    "tfidf": Method("tfidf", "lexical", tfidf_build, tfidf_counts, TfidfScorer),
    "bm25": Method("bm25", "lexical", bm25_build, bm25_counts, Bm25Scorer),
    DENSE: Method(DENSE, "dense", dense_build, None, DenseScorer),
    HYBRID: Method(HYBRID, "fused", build_hybrid),
}


def check_methods(methods: Sequence[str]) -> None:
    """Refuse an empty list, unknown names, and a hybrid without its components."""
    unknown = [m for m in methods if m not in METHODS]
    if unknown or not methods:
        what = f"unknown method {unknown[0]!r}" if unknown else "no method to build"
        raise UnknownMethod(f"{what}; known methods: {', '.join(METHODS)}")
    if HYBRID in methods and not (DENSE in methods and set(LEXICAL) & set(methods)):
        raise UnknownMethod("hybrid needs dense vectors and a lexical method:"
                            " busca index --methods tfidf,bm25 --dense use")


def with_dense(methods: Sequence[str], dense_name: str | None,
               previous: str | None) -> tuple[list[str], str | None]:
    """The dense/hybrid rule: `methods` plus dense and hybrid when an encoder is asked for
    (`dense_name`), or kept from the previous build's encoder (`previous`) when none is named;
    `"none"` drops them. Returns the methods and the encoder to use (None: no vectors)."""
    names = [m for m in methods if dense_name != "none" or m not in (DENSE, HYBRID)]
    encoder = dense_name
    if encoder is None:
        encoder = previous or (default_encoder() if DENSE in names else None)
    if not encoder or encoder == "none":
        return names, None
    check_name(encoder)  # fail before chunking, not after an hour of it
    wanted = (DENSE, HYBRID) if set(LEXICAL) & set(names) else (DENSE,)
    return names + [m for m in wanted if m not in names], encoder
