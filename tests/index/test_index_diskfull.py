"""Issue 25 item 7: `busca index` on a disk that fills up says so in one line, removes its
partial build and leaves the previous index live.

A full disk is simulated with RLIMIT_FSIZE (the file-size limit, `ulimit -f`) in the `busca`
subprocess, with SIGXFSZ ignored: a write past the limit fails with EFBIG, as it fails with
ENOSPC on a full disk — numpy's `tofile` reports the same short write, and SQLite reports the
failed write (SQLITE_IOERR_WRITE here; SQLITE_FULL, "database or disk is full", on ENOSPC).
The detection of the real ENOSPC and SQLITE_FULL errors is tested on /dev/full and on SQLite's
max_page_count.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from busca.cli import cli
from busca.index.home.diskfull import is_disk_full

REPO = Path(__file__).resolve().parents[2]
ARTICLES = REPO / "fixtures" / "site" / "articles.jsonl"
LIMITED = """
import resource, signal, sys
resource.setrlimit(resource.RLIMIT_FSIZE, (int(sys.argv[1]), resource.RLIM_INFINITY))
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
sys.argv = ["busca", *sys.argv[2:]]
from busca.cli import main
main()
"""
LIMIT = 48 * 1024  # above SQLite's 32 kB shared-memory file, below the build's largest files
MESSAGE = re.compile(r"Error: cannot write the new index to the disk in (.+) \((.+)\): it needs"
                     r" about [\d.]+ [kMG]B of space and [\d.]+ [kMG]B are free; the partial"
                     r" build was removed and the previous index is still live — free some"
                     r' space and run "busca index" again')


def busca(home: Path, *args: str, limit: int | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "BUSCA_NO_SERVE": "1"}
    head = [sys.executable, "-c", LIMITED, str(limit)] if limit else [
        sys.executable, "-m", "busca.cli"]
    return subprocess.run([*head, "--home", str(home), *args], capture_output=True, text=True,
                          timeout=300, env=env)


def indexed(home: Path, source: Path) -> None:
    runner = CliRunner()
    for args in (["add", str(source)], ["index", "-q"]):
        result = runner.invoke(cli, ["--home", str(home), *args], catch_exceptions=False, obj={})
        assert result.exit_code == 0, result.output


def tiny_vocabulary(path: Path) -> Path:
    """800 documents of two words: a chunk table far bigger than the method arrays."""
    path.write_text("".join(json.dumps({
        "url": f"https://tiny.example/a/long/path/to/article-{i:05d}", "title": f"t{i}",
        "text": "alfa beta " * 100 + f"doc{i}"}) + "\n" for i in range(800)), encoding="utf-8")
    return path


@pytest.mark.parametrize("corpus, largest", [
    ("articles", ".npy"),  # numpy's short write in np.save
    ("tiny", "chunks.db"),  # SQLite's failed write in index/text/chunks.py
])
def test_a_full_disk_keeps_the_previous_index_and_says_so_in_one_line(tmp_path, corpus,
                                                                      largest):
    home = tmp_path / "home"
    indexed(home, ARTICLES if corpus == "articles" else tiny_vocabulary(tmp_path / "t.jsonl"))
    live = (home / "CURRENT").read_text().strip()
    query = "doc17" if corpus == "tiny" else "estágio"
    before = busca(home, "search", query, "--json")
    files = sorted((home / live).iterdir(), key=lambda f: f.stat().st_size)
    assert files[-1].name.endswith(largest) and files[-1].stat().st_size > LIMIT

    done = busca(home, "index", "-q", limit=LIMIT)

    assert done.returncode == 1
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert MESSAGE.fullmatch(done.stderr.strip()), done.stderr
    assert MESSAGE.fullmatch(done.stderr.strip())[1] == str(home)
    assert sorted(p.name for p in home.glob("index-*")) == [live]
    assert not list(home.glob("*.tmp-*"))
    after = busca(home, "search", query, "--json")
    assert after.returncode == 0 and after.stdout == before.stdout and '"url"' in after.stdout
    assert busca(home, "index", "-q").returncode == 0  # with room again, the build goes through


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs Linux's /dev/full")
def test_enospc_from_python_and_numpy_is_a_full_disk():
    with open("/dev/full", "wb", buffering=0) as f, pytest.raises(OSError) as written:
        f.write(b"x" * 10)
    with open("/dev/full", "wb") as f, pytest.raises(OSError, match="requested") as short:
        np.arange(100_000).tofile(f)  # what np.save calls for the array's bytes
    assert is_disk_full(written.value) and is_disk_full(short.value)
    assert not is_disk_full(FileNotFoundError(2, "No such file or directory"))


def test_sqlite_full_is_a_full_disk(tmp_path):
    db = sqlite3.connect(tmp_path / "small.db")
    db.execute("PRAGMA max_page_count = 2")
    with pytest.raises(sqlite3.OperationalError, match="full") as full:
        with db:
            db.execute("CREATE TABLE t (x)")
            db.executemany("INSERT INTO t VALUES (?)", [("x" * 1000,)] * 100)
    db.close()
    assert is_disk_full(full.value)
    assert not is_disk_full(sqlite3.OperationalError("no such table: t"))
