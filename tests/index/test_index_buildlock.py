"""Issue 25 item 6: one build at a time per home. A second `busca index` (or POST /api/index)
while a build runs in another process exits at once with one line naming the running build,
and the previous index keeps answering."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import requests
from click.testing import CliRunner

from busca.cli import cli
from serving import Server

REPO = Path(__file__).resolve().parents[2]
ARTICLES = REPO / "fixtures" / "site" / "articles.jsonl"
TOKEN = "t0ken-for-the-lock-tests-0123456789"
LOCKED = re.compile(r'Error: another "busca index" \(pid (\d+), started \d\d:\d\d:\d\d\) is'
                    r" building this home — wait for it or stop it")

# A build that takes the home's lock and holds it until told to stop (the first process).
HOLDER = """
import contextlib
import sys
from busca.index import builds_by, open_home
named = builds_by(sys.argv[2]) if len(sys.argv) > 2 else contextlib.nullcontext()
with named, open_home(sys.argv[1]) as home:  # named: as busca serve is while it runs
    out = home.new_build()
    print("building", flush=True)
    sys.stdin.readline()
    out.abort()
"""


class Holder:
    """A second Python process holding a build of `home` open (the lock) until closed."""

    def __init__(self, home: str, *by: str):
        self.proc = subprocess.Popen([sys.executable, "-c", HOLDER, home, *by], text=True,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE)
        line = self.proc.stdout.readline()
        assert line == "building\n", (line, self.proc.stderr.read())

    def __enter__(self) -> Holder:
        return self

    def __exit__(self, *exc) -> None:
        self.proc.communicate("done\n", timeout=60)


def busca(home, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "BUSCA_NO_SERVE": "1"}
    return subprocess.run([sys.executable, "-m", "busca.cli", "--home", str(home), *args],
                          capture_output=True, text=True, timeout=300, env=env)


def indexed(home) -> None:
    runner = CliRunner()
    for args in (["add", str(ARTICLES)], ["index", "-q"]):
        result = runner.invoke(cli, ["--home", str(home), *args], catch_exceptions=False, obj={})
        assert result.exit_code == 0, result.output


def assert_locked_by(done: subprocess.CompletedProcess, pid: int) -> None:
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    match = LOCKED.fullmatch(lines[-1])
    assert match and int(match[1]) == pid, lines


def test_a_second_build_exits_naming_the_running_one_and_the_old_index_answers(tmp_path):
    home = tmp_path / "home"
    indexed(home)
    live = (home / "CURRENT").read_text()
    with Holder(str(home)) as holder:
        assert_locked_by(busca(home, "index", "-q"), holder.proc.pid)
        found = busca(home, "search", "estágio obrigatório", "--json")
        assert found.returncode == 0 and '"url"' in found.stdout, found.stderr
        assert (home / "CURRENT").read_text() == live
    assert busca(home, "index", "-q").returncode == 0  # the lock went with the build


def test_two_index_commands_at_once_never_crash(tmp_path):
    """Both started together: each either builds or exits with the one line, never a traceback
    (before the lock, the first one's publish removed the second one's folder)."""
    home = tmp_path / "home"
    indexed(home)
    env = {**os.environ, "BUSCA_NO_SERVE": "1"}
    procs = [subprocess.Popen([sys.executable, "-m", "busca.cli", "--home", str(home), "index",
                               "-q", "--size", str(size), "--overlap", "20"], env=env, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
             for size in (120, 150)]
    outcomes = [(p.wait(300), p.stderr.read()) for p in procs]
    for code, stderr in outcomes:
        assert "Traceback" not in stderr and code in (0, 1), stderr
        if code == 1:
            assert LOCKED.fullmatch(stderr.strip().splitlines()[-1]), stderr
    assert 0 in [code for code, _ in outcomes]
    assert busca(home, "search", "estágio", "--json").returncode == 0


def test_post_api_index_is_a_409_while_another_process_builds(tmp_path):
    home = tmp_path / "home"
    indexed(home)
    with Server(home, "--token", TOKEN, "--no-log", "--quiet") as server, \
            Holder(str(home)) as holder:
        r = requests.post(server.url + "api/index", json={}, timeout=120,
                          headers={"Authorization": f"Bearer {TOKEN}"})
        assert r.status_code == 409, r.text
        assert LOCKED.fullmatch("Error: " + r.json()["error"])
        assert f"(pid {holder.proc.pid}," in r.json()["error"]
        found = requests.get(server.url + "api/search", params={"q": "estágio"}, timeout=60)
        assert found.status_code == 200 and found.json()["hits"]


@pytest.mark.postgres
def test_a_second_postgres_build_exits_naming_the_running_one(pg_home):
    done = busca(pg_home, "add", str(ARTICLES))
    assert done.returncode == 0, done.stderr
    assert busca(pg_home, "index", "-q").returncode == 0
    with Holder(pg_home) as holder:
        assert_locked_by(busca(pg_home, "index", "-q"), holder.proc.pid)
        found = busca(pg_home, "search", "estágio obrigatório", "--json")
        assert found.returncode == 0 and '"url"' in found.stdout, found.stderr
    assert busca(pg_home, "index", "-q").returncode == 0


def test_a_refused_build_waits_for_the_holder_to_record_itself(tmp_path):
    """The holder writes its pid just after taking the lock: a build refused in between reads
    an empty file, or the last build's pid (an ended process). It reads again until the file
    names a live process, or gives up after HOLDER_WAIT (the message then names no pid)."""
    import threading
    import time

    from busca.index.home import buildlock

    ended = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                           capture_output=True, text=True, check=True)
    path = tmp_path / "index.lock"
    path.write_text(f'{{"pid": {ended.stdout.strip()}, "started": "2026-12-02T10:00:00+00:00"}}\n')
    fd = os.open(path, os.O_RDWR)
    try:
        started = time.monotonic()
        assert buildlock._read_holder(fd) == (None, "busca index")  # an ended process
        assert time.monotonic() - started >= buildlock.HOLDER_WAIT
        late = threading.Timer(0.1, lambda: buildlock._write_holder(fd))
        late.start()
        holder, by = buildlock._read_holder(fd)  # written 0.1 s into the wait: named
        late.join()
        assert re.fullmatch(rf"pid {os.getpid()}, started \d\d:\d\d:\d\d", holder or "")
        assert by == "busca index"
    finally:
        os.close(fd)


SERVER_BUILDS = re.compile(r"Error: busca serve \(pid (\d+), started \d\d:\d\d:\d\d\) is"
                           r" building this home's index — wait for it to end \(it goes on"
                           r" serving meanwhile\)")


@pytest.mark.parametrize("backend", ["local", pytest.param("postgres", marks=pytest.mark.postgres)])
def test_a_build_refused_by_a_servers_rebuild_does_not_say_stop_it(backend, tmp_path, request):
    """While busca serve's POST /api/index builds, a `busca index` said 'another "busca
    index" (pid …) is building this home — wait for it or stop it': the pid was the server's,
    and stopping it stopped the server. It names the server now, on both backends."""
    home = tmp_path / "home" if backend == "local" else request.getfixturevalue("pg_home")
    if backend == "local":
        indexed(home)
    else:
        assert busca(home, "add", str(ARTICLES)).returncode == 0
    with Holder(str(home), "busca serve") as holder:
        done = busca(home, "index", "-q")
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    match = SERVER_BUILDS.fullmatch(done.stderr.strip().splitlines()[-1])
    assert match and int(match[1]) == holder.proc.pid, done.stderr


def test_the_name_of_a_processs_builds_comes_back_when_its_server_ends(tmp_path):
    """builds_by names the builds of a process while a server runs in it, then gives the name
    back: an in-process server (a test's, an application's) left every later build of the
    process named "busca serve"."""
    import os

    from busca.index import builds_by
    from busca.index.home import buildlock

    path = tmp_path / "index.lock"
    path.write_text("")
    fd = os.open(path, os.O_RDWR)
    try:
        with builds_by("busca serve"):
            buildlock._write_holder(fd)
            assert buildlock._read_holder(fd)[1] == "busca serve"
        buildlock._write_holder(fd)
        assert buildlock._read_holder(fd)[1] == "busca index"
    finally:
        os.close(fd)
