"""The on-disk index format, written and read only here.

A corpus home holds:
- `busca.db` — the SQLite store (documents, chunk rows of each build, settings);
- `CURRENT` — one line naming the live index folder (replaced atomically);
- `index-<build>/` — one index build:
  - `manifest.json` — `format_version`, busca version, build id, chunker parameters, corpus
    figures (documents, words, chunks) and one entry per method (`methods.<name>`) with its
    parameters, vocabulary size and calibrated `floor`;
  - `<method>.<array>.npy` — the method's arrays (never pickled), loaded memory-mapped;
  - `<method>.vocab.txt` — a lexical method's terms, one per line, in column order.

A build is written to a new folder and `CURRENT` is swapped to it at the end, so an
interrupted build leaves the previous index usable.
"""

from __future__ import annotations

import json
import os
import shutil
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

FORMAT_VERSION = 1
POINTER = "CURRENT"
MANIFEST = "manifest.json"


class IndexNotFound(Exception):
    """There is no index in the home folder."""


class IndexFormatError(Exception):
    """The index was written by an incompatible version or is damaged."""


@dataclass
class Index:
    """A loaded index folder: its manifest and lazily memory-mapped arrays."""

    home: Path
    path: Path
    manifest: dict
    _arrays: dict = field(default_factory=dict, repr=False)

    @property
    def build(self) -> str:
        return self.manifest["build"]

    @property
    def methods(self) -> dict:
        return self.manifest["methods"]

    def array(self, method: str, name: str) -> np.ndarray:
        """The array `<method>.<name>.npy`, memory-mapped."""
        key = f"{method}.{name}"
        if key not in self._arrays:
            self._arrays[key] = load_array(self.path, key)
        return self._arrays[key]

    def terms(self, method: str) -> list[str]:
        return read_terms(self.path, method)


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
    path = Path(home) / name
    return path if path.is_dir() else None


def load_index(home: str | Path) -> Index:
    """The live index of `home`, or IndexNotFound / IndexFormatError."""
    home = Path(home)
    path = current_dir(home)
    if path is None:
        raise IndexNotFound(f'no index in {home} — run "busca index" first')
    manifest = read_manifest(path)
    return Index(home, path, manifest)


def read_manifest(path: Path) -> dict:
    try:
        manifest = json.loads((path / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise IndexFormatError(f"the index in {path} is damaged ({e}) — run \"busca index\"") from e
    version = manifest.get("format_version")
    if version != FORMAT_VERSION:
        raise IndexFormatError(
            f"the index in {path} has format version {version}, this busca reads"
            f" {FORMAT_VERSION} — rebuild it with \"busca index\""
        )
    return manifest


def write_json(path: Path, data: dict) -> None:
    """Write JSON to a temporary name, then rename it into place."""
    tmp = path.with_name(path.name + f".tmp-{uuid.uuid4().hex[:8]}")
    tmp.write_text(json.dumps(data, ensure_ascii=False, indent=2), encoding="utf-8")
    os.replace(tmp, path)


def publish(home: Path, path: Path, manifest: dict) -> None:
    """Write the manifest of a finished build and make it the live index."""
    manifest = {"format_version": FORMAT_VERSION, **manifest, "build": path.name}
    write_json(path / MANIFEST, manifest)
    pointer = Path(home) / POINTER
    tmp = pointer.with_name(POINTER + f".tmp-{uuid.uuid4().hex[:8]}")
    tmp.write_text(path.name + "\n", encoding="utf-8")
    os.replace(tmp, pointer)


def remove_stale(home: Path) -> None:
    """Delete every index folder except the live one (and leftovers of crashed builds)."""
    live = current_dir(home)
    for path in Path(home).glob("index-*"):
        if path.is_dir() and path != live:
            shutil.rmtree(path, ignore_errors=True)


def update_manifest(index: Index, changes: dict) -> dict:
    """Merge `changes` into the live manifest (e.g. a calibrated floor) and save it."""
    manifest = _merge(index.manifest, changes)
    write_json(index.path / MANIFEST, manifest)
    index.manifest = manifest
    return manifest


def _merge(base: dict, changes: dict) -> dict:
    out = dict(base)
    for key, value in changes.items():
        out[key] = _merge(out.get(key, {}), value) if isinstance(value, dict) else value
    return out


def save_array(path: Path, name: str, array: np.ndarray) -> None:
    np.save(path / f"{name}.npy", np.ascontiguousarray(array), allow_pickle=False)


def load_array(path: Path, name: str) -> np.ndarray:
    file = path / f"{name}.npy"
    try:
        return np.load(file, mmap_mode="r", allow_pickle=False)
    except (OSError, ValueError) as e:
        raise IndexFormatError(f"cannot read {file} ({e}) — rebuild with \"busca index\"") from e


def write_terms(path: Path, method: str, terms: list[str]) -> None:
    (path / f"{method}.vocab.txt").write_text("\n".join(terms) + "\n", encoding="utf-8")


def read_terms(path: Path, method: str) -> list[str]:
    text = (path / f"{method}.vocab.txt").read_text(encoding="utf-8")
    return text.split("\n")[:-1]
