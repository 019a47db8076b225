"""The use cases over one corpus home: what `busca` does, as one object (`busca.open`).

`Corpus` adds, crawls, indexes, searches, builds context, compares, evaluates and calibrates;
its options are keyword arguments with the CLI's names and defaults, gathered into frozen
spec values (`SearchSpec`, `ContextSpec`). The CLI, the shell and `busca serve` parse their
input into the same specs and call the same use cases (`search_build`, `context_build`), so
a search option is one field here, one branch of the use case and one line per front end.
This layer sits above search/ and search/eval/ and below serve/ and the cli; it never prints.

specs.py holds the values, questions.py the question use cases on one build, corpus.py the
`Corpus` object and `open`.
"""

from __future__ import annotations

from ..search.context import Context
from ..search.hits import Hit
from .corpus import Corpus, open
from .documents import Added, Removed
from .evaluate import Calibrated, EvalSpec, compare_runs
from .questions import (WARM_UP, asked, compare_build, context_build, method_names, prepare,
                        reranker, search_build)
from .specs import (HYBRID_AS_SEARCH, METHOD, ContextSpec, IndexSpec, Result, SearchSpec,
                    check_hybrid_only, hybrid_only)
from .stats import Stats

__all__ = ["Added", "Calibrated", "Context", "ContextSpec", "Corpus", "EvalSpec", "Hit", "IndexSpec",
           "Removed", "Result", "SearchSpec", "Stats", "open", "search_build", "context_build",
           "compare_build", "compare_runs", "prepare", "reranker", "HYBRID_AS_SEARCH", "asked",
           "METHOD", "WARM_UP", "check_hybrid_only", "hybrid_only", "method_names"]
