"""Build an index from a home's documents: chunk every document, build each method, publish.

Every write goes through the home's BuildWriter (index/backend.py), so readers see the old
build until the new one is published, and a build that dies leaves the old one live; one
stopped by a full disk is removed and reported in one line (index/home/diskfull.py).
"""

from __future__ import annotations

import logging
import tempfile
from contextlib import closing
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from itertools import islice
from pathlib import Path

from ..version import __version__
from ..errors import BuscaError
from .lexical.bm25 import check_options as check_bm25_options
from .text.analyzers import default_bm25_analyzer, language_marks
from .text.chunking import OVERLAP, SIZE, BadWindow, check_window
from .dense.dense import previous_models
from .dense.dense_models import DenseModel
from .home.diskfull import DiskFull, disk_full_error, folder_size, is_disk_full
from .home.manifest import Manifest, previous_entry
from .methods import DEFAULT, SPARSE, UnknownMethod, check_methods, method_spec, with_dense
from .text.stream import BATCH_DOCS, chunk_documents
from .text.titles import chunk_titles, kept_titles, titled_texts, with_titles

log = logging.getLogger(__name__)

UnknownMethodError = UnknownMethod  # the name build errors had before the registry moved

Progress = Callable[[str, int, int], None]

ANSWERABLE = "answerable"  # a method's answerability model (search/answerable.py ENTRY)

# Manifest keys that change what a method's scores mean: a calibrated floor survives a
# rebuild (e.g. after a crawl added articles) only when none of them changed.
SETTINGS = ("analyzer", "analyzer_version", "weighting", "k1", "b", "encoder", "version",
            "dimension", "titles", "groups", "sparse", "lift", "coord")


class NothingToIndex(BuscaError):
    """The store has no document."""


def build_index(home, *, size: int = SIZE, overlap: int = OVERLAP,
                methods: Sequence[str] = DEFAULT, options: dict | None = None,
                on_progress: Progress | None = None) -> Manifest:
    """Chunk the home's documents, build `methods` and publish the new build."""
    check_window(size, overlap)
    check_methods(methods)
    options = options or {}
    previous = home.previous()  # first: a home read from a standby now reads the primary
    if "bm25" in methods:  # a bad k1 or a missing stemmer fails before any work; the
        # analyzer is chosen once (a fallback from pt is warned about once)
        options = kept_bm25(previous, options)
        if options.get("bm25_analyzer") is None:  # neither asked for nor kept: the default
            _english_warning(home)
        options = {**options, "bm25_analyzer": check_bm25_options(options)}
    if SPARSE in methods:  # the dense pass leaves its latents here (index/lexical/sparse.py)
        options = {**options, "sparse_sink": {"latents": {}, "version": None}}
    progress = on_progress or (lambda stage, done, total: None)
    total = home.count()
    if total == 0:
        raise NothingToIndex("nothing to index: run busca crawl or busca add first")
    chunker = {"kind": "words", "size": size, "overlap": overlap}
    if options.get("titles") is None:  # not asked: as the previous build did
        options = {**options, "titles": kept_titles(previous, methods)}
    before = previous if previous is not None and previous.manifest.chunker == chunker else None
    from_counts = _counted(methods)
    out = home.new_build(methods)  # a home that cannot take a build fails before any work
    try:
        chunked = chunk_documents(
            _documents(home), size=size, overlap=overlap, reusable=_reusable_rows(before),
            total=total, count=bool(from_counts), keep_texts=len(from_counts) < len(methods),
            workers=options.get("workers"), analyzers=_analyzers(from_counts, options),
            on_progress=progress)
        if not chunked.chunks:
            raise NothingToIndex("nothing to index: every document in the store is empty")
        titles = _titles(home, chunked, options.get("titles") or ())
        entries = _build_methods(methods, chunked, out, options, previous, progress, titles)
        _keep_floors(entries, before)
        manifest = Manifest(build=out.name, chunker=chunker, documents=total,
                            chunks=chunked.chunks, methods=entries, words=chunked.words,
                            rechunked_documents=chunked.rechunked, busca_version=__version__)
        return out.publish(manifest).manifest
    except BaseException as e:
        full = is_disk_full(e)
        written = folder_size(getattr(out, "path", None)) if full else 0
        out.abort()
        if full:
            raise _no_space(e, out, previous, written) from e
        raise


SAMPLE_DOCS, SAMPLE_CHARS = 200, 20_000  # what a first bm25 build reads for the language


def _english_warning(home) -> None:
    """A line on stderr when bm25's analyzer is nobody's choice (a first build), the default
    is pt and the documents read as English: pt stems them as Portuguese, keeps "the" and
    "of" as words, and the context prompt speaks Portuguese (search/context.py)."""
    if default_bm25_analyzer() != "pt":
        return
    with closing(home.documents()) as documents:
        english, portuguese = language_marks(d.text[:SAMPLE_CHARS]
                                             for d in islice(documents, SAMPLE_DOCS))
    if english >= 20 and english > 3 * portuguese:
        log.warning("the documents read as English (%d English words such as \"the\" to %d"
                    " Portuguese ones such as \"de\"), but bm25 analyzes them as Portuguese:"
                    " run busca index --analyzer en (the prompt then speaks English too)",
                    english, portuguese)


def _no_space(error: BaseException, out, previous, written: int) -> DiskFull:
    """The one line for a build stopped by a full disk, its partial build already removed:
    the space a build needs is about the previous build's size, at least what was written."""
    path = getattr(out, "path", None)  # a local build's folder; else the temporary folder
    folder = Path(path).parent if path is not None else Path(tempfile.gettempdir())
    needed = max(written, folder_size(getattr(previous, "path", None)))
    return disk_full_error(error, folder, needed=needed, previous_live=previous is not None)


def _documents(home):
    """The home's documents as the build reads them: URL ranges that the tokenising workers
    read themselves when the store offers them, else its Documents."""
    ranges = getattr(home, "document_ranges", None)
    found = ranges(BATCH_DOCS) if ranges is not None else None
    return found if found is not None else home.documents()


def _build_methods(methods, chunked, out, options, previous, progress, titles) -> dict:
    """Build every method and write the chunk rows. The methods built from the shared counts
    run in threads of their own (their numpy and compiled loops let go of the GIL) while this
    thread writes the chunk rows, then builds the others (dense) one after the other.
    `titles`: the chunks' titles for the methods that index them (options["titles"])."""
    counted = [m for m in methods if m in _counted(methods)]
    titled = set(options.get("titles") or ())
    counts = {False: chunked.counts}
    if titled & set(counted):
        counts[True] = with_titles(chunked.counts, titles)
    entries = {}
    with ThreadPoolExecutor(max(1, len(counted))) as pool:
        if counted:
            progress(f"building {', '.join(counted)}", 0, chunked.chunks)
        running = {m: pool.submit(method_spec(m).build_counts, counts[m in titled], out,
                                  options=options) for m in counted}
        out.write_chunks(chunked.rows())
        for method in sorted(methods, key=lambda m: m == SPARSE):  # after the dense pass
            if method in running:
                entries[method] = running[method].result()
            else:
                progress(f"building {method}", 0, chunked.chunks)
                texts = titled_texts(chunked.texts, titles) if method in titled \
                    else chunked.texts
                entries[method] = method_spec(method).build(texts, out, options=options,
                                                            previous=previous,
                                                            on_progress=progress)
            if method in titled:
                entries[method]["titles"] = True
    return entries


def _titles(home, chunked, titled) -> list[str]:
    """Each chunk's document title, when some method indexes titles."""
    if not titled:
        return []
    return chunk_titles(home, chunked.urls, (n for a in chunked.per_doc for n in a))


def _analyzers(counted: set[str], options: Mapping) -> tuple[str, ...]:
    """The analyzers that the methods built from the shared counts map the vocabulary through
    (tfidf keeps java terms unless told): chunk_documents works their term maps out while it
    finishes merging the counts. A method that indexes titles maps the counts with titles
    added (`with_titles`), whose vocabulary is another: none is asked for it."""
    titled = set(options.get("titles") or ())
    return tuple({options.get(f"{m}_analyzer") for m in counted if m not in titled} - {None})


def _counted(methods: Sequence[str]) -> set[str]:
    return {m for m in methods if method_spec(m).build_counts is not None}


def window_for(home, size: int | None = None, overlap: int | None = None) -> tuple[int, int]:
    """The word window of a build: each value given, else the previous build's (a rebuild
    after a crawl keeps the windows the user chose), else SIZE and OVERLAP; BadWindow
    saying whose the value not given is when the two do not fit."""
    before = home.previous()
    chunker = before.manifest.chunker if before is not None else {}
    if chunker.get("kind") != "words":
        chunker = {}
    origin = "the previous build's" if chunker else "the default"
    size_from, overlap_from = ("" if size is not None else origin,
                               "" if overlap is not None else origin)
    if size is None:
        size = int(chunker.get("size", SIZE))
    if overlap is None:
        overlap = int(chunker.get("overlap", OVERLAP))
    if overlap >= size:
        raise BadWindow(size, overlap, size_from=size_from, overlap_from=overlap_from)
    check_window(size, overlap)
    return size, overlap


def methods_for(home, methods: Sequence[str], *, dense: str | None = None,
                sparse: bool | None = None,
                ) -> tuple[list[str], list[DenseModel], str | None, dict]:
    """The methods a build needs (the dense/hybrid/sparse rule of index/methods.py), its dense
    models, the --dense list kept from the previous build (None when --dense was given or
    there is none) and the previous build's dense entries by model name (their server
    settings). Kept models keep the previous build's `sparse` unless `sparse` says."""
    before = home.previous()
    previous, entries = previous_models(before)
    kept = previous if dense is None else None
    if sparse is None and kept:
        sparse = SPARSE in before.manifest.methods
    names, models = with_dense(methods, dense, kept, sparse=sparse)
    return names, models, kept, entries


def kept_bm25(previous, options: dict) -> dict:
    """`options` with bm25's k1, b and analyzer that were not asked for taken from the
    previous build, as its window, titles and dense models are (a plain `busca index` after a
    crawl reset an `--analyzer en --k1 2` index to pt, 1.2 without a word)."""
    entry = previous_entry(previous, "bm25")
    kept = {key: entry[field] for key, field in (("bm25_k1", "k1"), ("bm25_b", "b"),
                                                 ("bm25_analyzer", "analyzer"))
            if options.get(key) is None and entry.get(field) is not None}
    return {**options, **kept}


def settings_flags(previous: Mapping, after) -> list[str]:
    """The busca index options that build again with the settings of `previous` (the JSON
    manifest of a build of another format version, which no build reads to keep them) that
    the build `after` lacks: its windows, lexical methods, bm25's analyzer, k1 and b, its
    dense models."""
    chunker, methods = previous.get("chunker"), previous.get("methods")
    chunker = chunker if isinstance(chunker, dict) and chunker.get("kind") == "words" else {}
    methods = methods if isinstance(methods, dict) else {}
    flags = [f"--{key} {chunker[key]}" for key in ("size", "overlap")
             if isinstance(chunker.get(key), int) and chunker[key] != after.chunker.get(key)]
    lexical = [m for m in methods if ":" not in m and m in ("tfidf", "bm25")]
    if lexical and set(lexical) != {m for m in after.methods if m in ("tfidf", "bm25")}:
        flags.append(f"--methods {','.join(lexical)}")
    old, new = methods.get("bm25"), after.methods.get("bm25") or {}
    for key, flag in (("analyzer", "--analyzer"), ("k1", "--k1"), ("b", "--b")):
        if isinstance(old, dict) and old.get(key) not in (None, "", new.get(key)):
            flags.append(f"{flag} {old[key]}")
    models = [_model_flag(m, entry) for m, entry in methods.items()
              if (m == "dense" or m.startswith("dense:")) and isinstance(entry, dict)
              and isinstance(entry.get("encoder"), str) and m not in after.methods]
    if models:
        flags.append(f"--dense {','.join(models)}")
    return flags


def _model_flag(method: str, entry: Mapping) -> str:
    """A dense model as --dense names it: ENCODER, or NAME=ENCODER."""
    name = entry.get("name") or method.partition(":")[2] or entry["encoder"]
    return entry["encoder"] if name == entry["encoder"] else f"{name}={entry['encoder']}"


def _keep_floors(entries: dict, before) -> None:
    """Carry calibrated floors (and a dense model's tuned fusion share) over to methods built
    with the same settings as before, and an answerability model when every method it reads
    was (marked `kept_from`: the build it was calibrated on)."""
    for method, entry in entries.items():
        old = before.manifest.entry(method) if before is not None else {}
        for key in ("floor", "share"):
            if old.get(key) is not None and _same(old, entry):
                entry[key] = old[key]
        model = old.get(ANSWERABLE)
        if model and all(_same(before.manifest.entry(m), entries.get(m))
                         for m in _reads(method, model)):
            entry[ANSWERABLE] = {**model, "kept_from": model.get("kept_from")
                                 or before.manifest.build}


def dropped_calibration(before, after) -> tuple[list[str], list[str]]:
    """(methods whose calibrated floor, methods whose answerability model) the manifest
    `before` had and `after` lost: `_keep_floors` drops them when their settings changed."""
    old = before.methods if before is not None else {}
    floors, models = [], []
    for method, entry in old.items():
        new = after.methods.get(method) or {}
        if entry.get("floor") is not None and new.get("floor") is None:
            floors.append(method)
        if entry.get(ANSWERABLE) and not new.get(ANSWERABLE):
            models.append(method)
    return floors, models


def _same(old: Mapping, new: Mapping | None) -> bool:
    """Whether a method was built again with the settings that give its scores meaning."""
    return bool(old) and new is not None and all(old.get(k) == new.get(k) for k in SETTINGS)


def _reads(method: str, model: Mapping) -> set[str]:
    """The methods whose rankings an answerability model reads (search/answerable.py): a
    shared model's base `methods`; a method's own model, the method and its agreement pair."""
    if model.get("shared"):
        return set(model.get("methods") or ())
    return {method, *model.get("agreement", ())}


def _reusable_rows(before) -> dict:
    """url -> (doc sha256, rows) of the previous build (None: nothing to reuse). A damaged
    previous build (e.g. a deleted file) is not reused: every document is chunked again."""
    if before is None:
        return {}
    try:
        rows = before.chunks()
    except BuscaError as e:
        log.warning("not reusing the previous index: %s", e)
        return {}
    by_url: dict = {}
    for row in rows:
        by_url.setdefault(row.url, (row.doc_sha256, []))[1].append(row)
    return by_url
