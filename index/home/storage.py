"""The map of a local home (`--home DIR`) and its backend: every file and table, and its writer.

    busca.db                  SQLite, opened by LocalHome
      documents, meta         index/home/documents.py (documents; settings and crawl state)
      changes                 index/home/documents.py (the documents' version, by triggers)
      queries                 index/home/queries.py (the query log; what to log: search/querylog.py)
    CURRENT                   here: one line naming the live build, replaced atomically
    index.lock                index/home/buildlock.py: flock held by the build running (its pid and
                              start time inside), so a second build exits with one line
    index-<build>/            here: one build, invisible until CURRENT names it
      manifest.json           here (the record is index/home/manifest.py's Manifest)
      chunks.db               index/text/chunks.py (the build's chunk rows)
      <method>.<array>.npy    here, for the builders lexical/tfidf.py, bm25.py, dense/dense.py
                              (each lists its arrays); never pickled, loaded memory-mapped
      <method>.vocab.txt      here, for the lexical builders: terms in column order
    vectors.sqlite            index/dense/vector_cache.py (vectors of openai:MODEL encoders by text
                              hash, so an interrupted encode resumes; never the key)

A build is written to a new folder (LocalBuildWriter) and published by swapping CURRENT, so an
interrupted build leaves the previous index usable; the next publish removes its leftovers.
LocalHome implements index/backend.py's Home; Index is its Build.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import sqlite3
import threading
import uuid
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from ...crawler.store import StoreError
from ...errors import BuscaError
from .buildlock import LocalBuildLock
from .documents import DB_NAME, Store, guard, read_only_error
from ..text.chunks import ChunkRow, ChunkTable, drop_legacy, write_chunks
from ..text.counting import LazyTerms
from .manifest import FORMAT_VERSION, READS, Manifest
from ..methods import method_spec, not_in_index, stored_methods
from .queries import append_query, create_queries, delete_queries, read_queries
from .vocabulary import Vocabulary

POINTER = "CURRENT"
MANIFEST = "manifest.json"


class IndexNotFound(BuscaError):
    """There is no index in the home folder."""


class HomeNotFound(IndexNotFound):
    """A command that only reads was given a home folder that does not exist."""


class IndexFormatError(BuscaError):
    """The index was written by an incompatible version or is damaged; `previous`: a build
    of another format version's manifest JSON (the settings a rebuild names)."""

    def __init__(self, message: str, previous: dict | None = None):
        super().__init__(message)
        self.previous = previous or {}


def damaged(path: Path, what: str) -> IndexFormatError:
    """The error for a build with a missing or unreadable file: `busca index` rebuilds it."""
    return IndexFormatError(f"the index in {path} is damaged ({what}) — run \"busca index\""
                            " to rebuild it")


class Index:
    """A published local build: its manifest, chunk rows, memory-mapped arrays and rankers."""

    def __init__(self, home: Path, path: Path, manifest: Manifest, *,
                 embed: Mapping | None = None):
        self.home, self.path, self.manifest = Path(home), Path(path), manifest
        self.embed = dict(embed or {})  # the user's openai:MODEL server settings (vectors.py)
        self._arrays: dict[str, np.ndarray] = {}  # immutable data of this build, memoised
        self._rankers: dict = {}
        self._chunks = ChunkTable(self.path)
        self._read: set[str] = {MANIFEST, self._chunks.path.name}  # files the build has read

    def __repr__(self) -> str:
        return f"Index({str(self.path)!r})"

    @property
    def build(self) -> str:
        return self.manifest.build

    @property
    def methods(self) -> Mapping[str, Mapping]:
        return self.manifest.methods

    def array(self, method: str, name: str) -> np.ndarray:
        """The array `<method>.<name>.npy`, memory-mapped."""
        key = f"{method}.{name}"
        if key not in self._arrays:
            self._arrays[key] = load_array(self.path, key)
            self._read.add(f"{key}.npy")
        return self._arrays[key]

    def has_array(self, method: str, name: str) -> bool:
        return (self.path / f"{method}.{name}.npy").exists()

    def terms(self, method: str) -> list[str]:
        self._read.add(f"{method}.vocab.txt")
        return self._counted(method, read_terms(self.path, method))

    def vocabulary(self, method: str) -> Vocabulary:
        """The terms as a compact term -> column look-up (what the rankers hold)."""
        self._read.add(f"{method}.vocab.txt")
        return self._counted(method, read_vocabulary(self.path, method))

    def _counted(self, method: str, terms):
        """`terms`, when as many as the manifest says: a truncated vocabulary file gave
        silently wrong hits (or none)."""
        expected = self.manifest.methods.get(method, {}).get("vocabulary")
        if expected is not None and len(terms) != expected:
            raise damaged(self.path, f"{method}.vocab.txt holds {len(terms):,} terms, the"
                                     f" manifest says {expected:,}")
        return terms

    def check(self) -> None:
        """The damaged-build error if a file this build has read is gone (GET /healthz: a
        server still answers from memory, a restart or `busca search` would not): one listing
        of its folder, no file read."""
        try:
            present = set(os.listdir(self.path))
        except OSError as e:
            raise damaged(self.path, f"its folder cannot be listed: {e.strerror}") from e
        missing = sorted(name for name in [*self._read] if name not in present)
        if missing:
            raise damaged(self.path, f"{missing[0]} is missing")

    def chunks(self, ids: Iterable[int] | None = None) -> list[ChunkRow]:
        """Chunk rows in id order, or in the order of `ids`."""
        try:
            return self._chunks.rows(ids)
        except sqlite3.Error as e:
            raise damaged(self.path, f"chunks.db: {e}") from e

    def chunk_urls(self) -> list[str]:
        """The document URL of each chunk, in id order."""
        try:
            return self._chunks.urls()
        except sqlite3.Error as e:
            raise damaged(self.path, f"chunks.db: {e}") from e

    def documents(self) -> dict[str, str]:
        """url -> content hash of each document the build chunked."""
        try:
            return self._chunks.documents()
        except sqlite3.Error as e:
            raise damaged(self.path, f"chunks.db: {e}") from e

    def ranker(self, method: str, *, encoder=None):
        """The ranker of a stored method (built once per build: arrays and encoder load once);
        `encoder`: for a dense method, one already in memory to use instead of loading one."""
        if method not in self._rankers:
            spec = method_spec(method)
            if method not in self.methods or spec is None or spec.ranker is None:
                raise not_in_index(method, stored_methods(self.methods))
            given = {"encoder": encoder} if encoder is not None and spec.kind == "dense" else {}
            self._rankers[method] = spec.ranker(self, method, **given)
        return self._rankers[method]


class LocalBuildWriter:
    """A build being written into its own folder; readers see it only once published."""

    def __init__(self, home: Path | None, path: Path, *, after_publish=None,
                 lock: LocalBuildLock | None = None):
        self.home, self.path = home, Path(path)
        self.name = self.path.name
        self._after_publish = after_publish or (lambda: None)
        self._lock = lock  # the home's build lock, released when the build ends
        self._published = False

    def save_array(self, method: str, name: str, array: np.ndarray) -> None:
        save_array(self.path, f"{method}.{name}", array)

    def write_terms(self, method: str, terms: list[str]) -> None:
        write_terms(self.path, method, terms)

    def write_chunks(self, rows: Iterable[ChunkRow]) -> None:
        write_chunks(self.path, rows)

    def finish(self, manifest: Manifest) -> Index:
        """Write the manifest; the build can be read, but is not the home's live index."""
        manifest = Manifest.from_json({**manifest.to_json(), "build": self.name,
                                       "format_version": FORMAT_VERSION})
        write_json(self.path / MANIFEST, manifest.to_json())
        return Index(self.home or self.path.parent, self.path, manifest)

    def publish(self, manifest: Manifest) -> Index:
        """Finish the build and make it the live index (one atomic rename)."""
        try:
            index = self.finish(manifest)
            swap_pointer(self.home, self.path)
            self._published = True  # live now: an error after this must not remove it
            remove_stale(self.home)
            self._after_publish()
            return index
        finally:
            self._release()

    def abort(self) -> None:
        if not self._published:
            shutil.rmtree(self.path, ignore_errors=True)
        self._release()

    def _release(self) -> None:
        if self._lock is not None:
            self._lock.release()


class LocalHome(Store):
    """A home folder: the document store (busca.db) plus index builds and the query log.
    A with block that fails on a home this open created, which still holds nothing, leaves
    no home (a first crawl of a site that is down, an add of nothing readable), as a
    PostgreSQL corpus is made by its first write: later commands say it does not exist."""

    def __init__(self, home: str | Path, *, embed: Mapping | None = None):
        folder = Path(home)
        made = _first_missing(folder)  # the folder (and parents) this open creates, if any
        new = not (folder / DB_NAME).exists()
        super().__init__(home)
        self._new, self._made = new and not self.read_only, made
        if not self.read_only:
            with guard(self.path):
                create_queries(self.db)
        self.location = str(self.home)
        self.embed = dict(embed or {})

    def __exit__(self, *exc) -> None:
        unmade = exc[0] is not None and self._new and _holds_nothing(self)
        self.close()
        if unmade:
            _unmake(self.home, self._made)

    def current(self) -> Index:
        return load_index(self.home, embed=self.embed)

    def previous(self) -> Index | None:
        """The live build if it can be read (for reuse by the next build), else None."""
        try:
            return self.current()
        except (IndexNotFound, IndexFormatError):
            return None

    def new_build(self, methods: Sequence[str] = ()) -> LocalBuildWriter:
        """A writer holding the home's build lock (BuildLocked while another build runs); a
        folder holds every method."""
        self._check_writable()
        try:
            lock = LocalBuildLock(self.home)
        except OSError as e:
            raise StoreError(f"cannot write a new index into {self.home}: {e}") from e
        try:
            path = new_build_dir(self.home)
        except OSError as e:
            lock.release()
            raise StoreError(f"cannot write a new index into {self.home}: {e}") from e
        return LocalBuildWriter(self.home, path, after_publish=self._drop_legacy, lock=lock)

    def _drop_legacy(self) -> None:
        with guard(self.path):
            drop_legacy(self.db)

    def set_floors(self, floors: Mapping[str, float],
                   models: Mapping[str, Mapping] | None = None, *, key: str = "floor") -> Index:
        """Store calibrated floors (or another per-method `key`, e.g. a dense model's tuned
        fusion `share`) and answerability models (plain JSON) in the live manifest."""
        self._check_writable()
        index = self.current()
        manifest = index.manifest.with_floors(floors, models, key=key)
        update_manifest(index, {"methods": {m: manifest.entry(m) for m in
                                            {*floors, *(models or {})}}})
        return index

    def log_query(self, **row) -> None:
        """Append to the query log (ReadOnlyHome on a read-only home: check `read_only`)."""
        self._check_writable()
        with guard(self.path):
            append_query(self.db, **row)

    def logged_queries(self, since: str | None = None) -> list[dict]:
        with guard(self.path):
            return read_queries(self.db, since)

    def forget_queries(self, before: str) -> int:
        """Delete the queries logged before `before` (ISO, UTC); how many were deleted."""
        self._check_writable()
        with guard(self.path):
            return delete_queries(self.db, before)

    def _check_writable(self) -> None:
        if self.read_only:
            raise read_only_error(self.home)


DB_FILES = (DB_NAME, f"{DB_NAME}-wal", f"{DB_NAME}-shm", f"{DB_NAME}-journal")


def _first_missing(folder: Path) -> Path | None:
    """The outermost folder of `folder`'s path that does not exist yet, or None."""
    missing = None
    for path in (folder, *folder.parents):
        if path.exists():
            break
        missing = path
    return missing


def _holds_nothing(home: LocalHome) -> bool:
    """Whether the home holds no row (documents, settings, crawl state, logged queries) and
    no build."""
    try:
        tables = [name for (name,) in home.db.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table'") if name != "changes"]
        if any(home.db.execute(f'SELECT EXISTS (SELECT 1 FROM "{name}")').fetchone()[0]
               for name in tables):
            return False
        return not any(path.name == POINTER or path.name.startswith("index-")
                       for path in home.home.iterdir())
    except (sqlite3.Error, OSError):
        return False


def _unmake(home: Path, made: Path | None) -> None:
    """Remove the store of `home`, and the folders from `home` up to `made` that its open
    created (None: none); a folder no longer empty, or a file that cannot go, stays."""
    try:
        for name in DB_FILES:
            (home / name).unlink(missing_ok=True)
        for folder in (home, *home.parents) if made is not None else ():
            folder.rmdir()
            if folder == made:
                break
    except OSError:
        pass


def new_build_dir(home: Path) -> Path:
    """A fresh folder for a build; its name is the build id."""
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S")
    path = Path(home) / f"index-{stamp}-{uuid.uuid4().hex[:8]}"
    path.mkdir(parents=True)
    return path


def current_dir(home: Path) -> Path | None:
    """The live index folder, or None."""
    pointer = Path(home) / POINTER
    try:
        name = pointer.read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as e:  # a folder in its place, damaged, no files left
        if getattr(e, "errno", None) in (errno.EMFILE, errno.ENFILE):
            raise IndexFormatError(f"{pointer} cannot be read ({e.strerror}): this process"
                                   " holds too many open files — raise the limit (ulimit -n)"
                                   " or close what it leaves open") from e
        reason = getattr(e, "strerror", None) or "it is not UTF-8 text"
        raise IndexFormatError(f"{pointer}, which names the live index, cannot be read"
                               f" ({reason}) — remove it and run \"busca index\"") from e
    path = Path(home) / name
    return path if path.is_dir() else None


def load_index(home: str | Path, *, embed: Mapping | None = None) -> Index:
    """The live index of `home`, or IndexNotFound / IndexFormatError; `embed`: the user's
    settings for openai:MODEL servers (url, key, prefixes: index/dense/dense_models.py)."""
    home = Path(home)
    path = current_dir(home)
    if path is None:
        raise IndexNotFound(f'no index in {home} — run "busca index" first')
    return Index(home, path, read_manifest(path), embed=embed)


def read_manifest(path: Path) -> Manifest:
    try:
        data = json.loads((path / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise IndexFormatError(f"the index in {path} is damaged ({e}) — run \"busca index\"") from e
    version = data.get("format_version")
    if version not in READS:
        newer = isinstance(version, int) and version > FORMAT_VERSION  # a pinned-back busca
        raise IndexFormatError(
            f"the index in {path} was made by a newer busca (format version {version}, this"
            f" busca reads {FORMAT_VERSION}) — upgrade busca (pip install -U busca), or"
            f" rebuild it with \"busca index\" (the documents are kept)" if newer else
            f"the index in {path} has format version {version}, this busca reads"
            f" {FORMAT_VERSION} — rebuild it with \"busca index\"",
            previous=data if isinstance(data, dict) else None)
    try:
        return Manifest.from_json(data)
    except TypeError as e:
        raise IndexFormatError(f"the index in {path} is damaged ({e}) — run \"busca index\"") from e


def require_folder(path: str | Path) -> Path:
    """`path`, a file about to be written, if the folder it goes in exists; else
    FileNotFoundError with the one line a command shows (`cannot write PATH: the folder F does
    not exist`, from its filename and strerror): a write never makes folders, where a slip in
    its path would make them anywhere."""
    path = Path(path)
    if not path.parent.is_dir():
        what = "is a file, not a folder" if path.parent.exists() else "does not exist"
        raise FileNotFoundError(errno.ENOENT, f"the folder {path.parent} {what}", str(path))
    return path


def write_json(path: Path, data: dict) -> None:
    """Write JSON to a temporary name, then rename it into place."""
    tmp = path.with_name(path.name + f".tmp-{uuid.uuid4().hex[:8]}")
    _replace(tmp, path, json.dumps(data, ensure_ascii=False, indent=2))


def swap_pointer(home: Path, path: Path) -> None:
    """Make the build in `path` the live index of `home`."""
    pointer = Path(home) / POINTER
    tmp = pointer.with_name(POINTER + f".tmp-{uuid.uuid4().hex[:8]}")
    _replace(tmp, pointer, path.name + "\n")


def _replace(tmp: Path, path: Path, text: str) -> None:
    """Write `text` to `tmp` and rename it to `path`; no `tmp` is left if the write fails."""
    try:
        tmp.write_text(text, encoding="utf-8")
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    os.replace(tmp, path)


def remove_stale(home: Path) -> None:
    """Delete every index folder except the live one (and leftovers of crashed builds)."""
    live = current_dir(home)
    for path in Path(home).glob("index-*"):
        if path.is_dir() and path != live:
            shutil.rmtree(path, ignore_errors=True)


def update_manifest(index: Index, changes: dict) -> Manifest:
    """Merge `changes` into the live manifest (e.g. a calibrated floor) and save it."""
    manifest = Manifest.from_json(_merge(index.manifest.to_json(), changes))
    write_json(index.path / MANIFEST, manifest.to_json())
    index.manifest = manifest
    return manifest


def _merge(base: dict, changes: dict) -> dict:
    out = dict(base)
    for key, value in changes.items():
        out[key] = _merge(out.get(key, {}), value) if isinstance(value, dict) else value
    return out


def save_array(path: Path, name: str, array: np.ndarray) -> None:
    np.save(path / f"{name}.npy", np.ascontiguousarray(array), allow_pickle=False)


_LOADING = threading.Lock()


def read_npy(source, **options) -> np.ndarray:
    """np.load of one .npy (a path or a file object), one at a time in the process: np.load
    reads the header with ast.literal_eval, which CPython 3.11 may fail in two threads at once
    ("SystemError: AST constructor recursion depth mismatch", CPython issue 106905; seen when
    LangChain's `batch` opened one index from two threads). Every index array, local or
    PostgreSQL, is read through here; a memory-mapped load takes microseconds."""
    with _LOADING:
        return np.load(source, allow_pickle=False, **options)


def load_array(path: Path, name: str) -> np.ndarray:
    """The array memory-mapped (`read_npy`)."""
    file = path / f"{name}.npy"
    try:
        return read_npy(file, mmap_mode="r")
    except FileNotFoundError as e:
        raise damaged(path, f"{file.name} is missing") from e
    except (OSError, ValueError, EOFError) as e:  # EOFError: a file of zero bytes
        raise damaged(path, f"cannot read {file.name}: {e}") from e


def write_terms(path: Path, method: str, terms: Sequence[str]) -> None:
    text = terms.lines() if isinstance(terms, LazyTerms) else "\n".join(terms) + "\n"
    (path / f"{method}.vocab.txt").write_text(text, encoding="utf-8", newline="\n")


def read_terms(path: Path, method: str) -> list[str]:
    return _read_vocab_file(path, method, lambda raw: raw.decode("utf-8").split("\n")[:-1])


def read_vocabulary(path: Path, method: str) -> Vocabulary:
    return _read_vocab_file(path, method, Vocabulary)


def _read_vocab_file(path: Path, method: str, parse):
    file = path / f"{method}.vocab.txt"
    try:
        raw = file.read_bytes()
        return parse(raw.replace(b"\r\n", b"\n") if b"\r" in raw else raw)  # (Windows)
    except FileNotFoundError as e:
        raise damaged(path, f"{file.name} is missing") from e
    except (OSError, UnicodeDecodeError) as e:
        raise damaged(path, f"cannot read {file.name}: {e}") from e
