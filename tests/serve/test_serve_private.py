"""What the real `busca serve` (127.0.0.1) tells a network client about the server machine:
its messages name the home's files relative to the home ("runs/NAME.json", "index-…"), never
the absolute folders of the home, its runs or the golden set a run names (the server's log on
stderr keeps them); and a run naming a golden set that is no regular file, or one too large,
never hangs or swells the eval page (serve/errors.py `public`, serve/runview.py)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

pytest.importorskip("starlette")
requests = pytest.importorskip("requests")

from click.testing import CliRunner  # noqa: E402
from conftest import FIXTURES, REPO  # noqa: E402
from serving import Server  # noqa: E402

from busca.cli import cli  # noqa: E402

TOKEN = "private-paths-token-0123456789"
GOLDEN = FIXTURES / "golden" / "golden.json"


def _invoke(home, *args: str):
    result = CliRunner().invoke(cli, ["--home", str(home), *args], obj={})
    assert result.exit_code == 0, result.output
    return result


def _private(text: str, *folders: Path) -> list[str]:
    """The server's absolute folders that `text` names."""
    return [str(f) for f in folders if str(f) in text or str(f.resolve()) in text]


@pytest.fixture(scope="module")
def base(tmp_path_factory) -> Path:
    return tmp_path_factory.getbasetemp()


@pytest.fixture(scope="module")
def home(tmp_path_factory) -> Path:
    home = tmp_path_factory.mktemp("private") / "home"
    _invoke(home, "add", str(FIXTURES / "site" / "articles.jsonl"))
    _invoke(home, "index", "-q", "--methods", "bm25")
    _invoke(home, "eval", str(GOLDEN), "-q", "--run-out", str(home / "runs" / "r1.json"))
    runs = home / "runs"
    (runs / "broken.json").write_text('{"format": "busca-run", "version": 1, "questions": [',
                                      encoding="utf-8")
    return home


@pytest.fixture(scope="module")
def server(home):
    with Server(home, "--no-log", "--token", TOKEN) as s:
        yield s


@pytest.fixture(scope="module")
def empty(tmp_path_factory):
    """A server over a home of documents not indexed yet, with an empty --runs folder
    elsewhere."""
    root = tmp_path_factory.mktemp("private-empty")
    _invoke(root / "home", "add", str(FIXTURES / "site" / "articles.jsonl"))
    (root / "runs").mkdir()
    with Server(root / "home", "--no-log", "--runs", str(root / "runs")) as s:
        yield s, root


def test_a_home_without_an_index_is_named_without_its_folder(empty, base):
    """Before: every answer said `no index in /tmp/…/home — run "busca index" first`, and
    the eval page `no saved runs in /tmp/…/runs: save one with … --run-out /tmp/…/runs/…`."""
    server, root = empty
    answers = {path: requests.get(server.url + path, timeout=60) for path in
               ("healthz", "api/search?q=prazo&method=bm25", "api/stats", "", "eval",
                "api/chunk/0", "api/compare?q=prazo")}
    answers["api/context"] = requests.post(server.url + "api/context", json={"q": "prazo"},
                                           timeout=60)
    for path, answer in answers.items():
        assert not _private(answer.text, root, base, REPO), (path, answer.text)
    assert answers["api/search?q=prazo&method=bm25"].status_code == 503
    assert 'run \\"busca index\\" first' in answers["api/search?q=prazo&method=bm25"].text
    assert "run &quot;busca index&quot; first" in answers[""].text
    assert "busca index" in answers["healthz"].json()["problem"]
    assert "no saved runs" in answers["eval"].text and "--run-out" in answers["eval"].text
    log = "".join(server.stderr)
    assert str(root / "home") in log  # the log keeps the detail


def test_the_log_keeps_what_a_client_was_told_less_of(tmp_path):
    """Before: with -q (no access log) the server's log said nothing of a 503 `no index in
    the server's home` or a 422 `broken.json:1:53: invalid JSON …`, so its
    operator could not see which folder they were about; now each error answer `public`
    shortened is one line of the log with the message as it was (busca mcp --http's too)."""
    from test_mcp_access import mcp_http

    home, runs = tmp_path / "home", tmp_path / "runs"
    _invoke(home, "add", str(FIXTURES / "site" / "articles.jsonl"))
    runs.mkdir()
    (runs / "broken.json").write_text('{"format": "busca-run", "version": 1, "questions": [',
                                      encoding="utf-8")
    with Server(home, "-q", "--no-log", "--runs", str(runs)) as server:
        found = requests.get(server.url + "api/search?q=prazo&method=bm25", timeout=60)
        page = requests.get(server.url, params={"q": "prazo"}, timeout=60)
        broken = requests.get(server.url + "eval", params={"run": "broken.json"}, timeout=60)
        bad = requests.get(server.url + "api/search", params={"q": "prazo", "k": "0"},
                           timeout=60)
    assert (found.status_code, page.status_code, broken.status_code) == (503, 503, 422)
    lines = "".join(server.stderr).splitlines()
    assert [line for line in lines if f"503 GET /api/search: no index in {home}" in line]
    assert [line for line in lines if f"503 GET /: no index in {home}" in line]
    assert [line for line in lines if f"422 GET /eval: {runs / 'broken.json'}:1:" in line]
    assert bad.status_code == 400 and not [line for line in lines if "400 GET" in line]
    assert "Traceback" not in "".join(lines)
    log = tmp_path / "mcp.log"
    with mcp_http(home, log=log) as port:
        text = _tool_search(port)
    assert str(home) not in text and "the server's home" in text, text
    assert f"tool search: Error executing tool search: no index in {home}" in \
        log.read_text(encoding="utf-8")


def _tool_search(port: int) -> str:
    """The text of the search tool's answer of the busca mcp --http on `port`."""
    from test_mcp_hosts import INITIALIZE, _message, post

    host = f"127.0.0.1:{port}"
    _, headers, _ = post(port, host, INITIALIZE)
    session = {"Mcp-Session-Id": headers["mcp-session-id"], "Mcp-Protocol-Version": "2025-06-18"}
    post(port, host, {"jsonrpc": "2.0", "method": "notifications/initialized"}, session)
    _, _, data = post(port, host, {
        "jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "search", "arguments": {"question": "prazo"}}}, session)
    return _message(data)["result"]["content"][0]["text"]


def test_a_damaged_build_is_named_relative_to_the_home(tmp_path, base):
    """Before: `the index in /tmp/…/home/index-… is damaged (bm25.scores.npy is missing)`."""
    home = tmp_path / "home"
    _invoke(home, "add", str(FIXTURES / "site" / "articles.jsonl"))
    _invoke(home, "index", "-q", "--methods", "bm25")
    with Server(home, "--no-log") as server:
        build = next(home.glob("index-*"))
        (build / "bm25.scores.npy").unlink()
        health = requests.get(server.url + "healthz", timeout=60).json()
        assert health["status"] == "degraded" and build.name in health["problem"], health
        (build / "manifest.json").write_text('{"format_version": 999}', encoding="utf-8")
        found = requests.get(server.url + "api/search?q=prazo&method=bm25", timeout=60)
        assert found.status_code == 503 and build.name in found.json()["error"], found.text
        for text in (json.dumps(health), found.text):
            assert not _private(text, home, base), text


def test_the_eval_page_names_runs_not_the_server_s_folders(server, home, base):
    """Before: the 404 of an unknown run said `no saved run named 'x' in /tmp/…/runs`, a run
    that fails to parse `/tmp/…/runs/broken.json:1:53: invalid JSON`, and the run's line
    `golden /work/…/fixtures/golden/golden.json`."""
    shown = requests.get(server.url + "eval", params={"run": "r1.json"}, timeout=60)
    missing = requests.get(server.url + "eval", params={"run": "nope"}, timeout=60)
    broken = requests.get(server.url + "eval", params={"run": "broken.json"}, timeout=60)
    assert (shown.status_code, missing.status_code, broken.status_code) == (200, 404, 422)
    assert "golden golden.json" in shown.text
    assert "no saved run named &#x27;nope&#x27;" in missing.text
    assert "broken.json:1:" in broken.text and "invalid JSON" in broken.text
    for answer in (shown, missing, broken):
        assert not _private(answer.text, home, base, GOLDEN.parent, REPO), answer.text


def test_an_mcp_tool_error_over_http_names_no_server_folder(tmp_path):
    """busca mcp --http's tools said `no index in /tmp/…/home` to a client of the network
    (over stdio, the local user's own client, the message still names the home)."""
    pytest.importorskip("mcp")
    from test_mcp_hosts import INITIALIZE, _message, post
    from test_mcp_access import mcp_http

    home = tmp_path / "home"
    _invoke(home, "add", str(FIXTURES / "site" / "articles.jsonl"))
    with mcp_http(home) as port:
        host = f"127.0.0.1:{port}"
        status, headers, data = post(port, host, INITIALIZE)
        assert status == 200, data
        session = {"Mcp-Session-Id": headers["mcp-session-id"],
                   "Mcp-Protocol-Version": "2025-06-18"}
        post(port, host, {"jsonrpc": "2.0", "method": "notifications/initialized"}, session)
        status, _, data = post(port, host, {
            "jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "search", "arguments": {"question": "prazo"}}}, session)
    result = _message(data)["result"]
    text = result["content"][0]["text"]
    assert result["isError"] and "busca index" in text, result
    assert not _private(text, tmp_path), text


def _run_naming(home: Path, name: str, golden: str) -> str:
    """A copy of the run r1 (its .trec and .qrels too) whose golden set is `golden`."""
    runs = home / "runs"
    data = json.loads((runs / "r1.json").read_text(encoding="utf-8"))
    data["golden"] = golden
    (runs / f"{name}.json").write_text(json.dumps(data), encoding="utf-8")
    for suffix in (".trec", ".qrels"):
        (runs / f"{name}{suffix}").write_bytes((runs / f"r1{suffix}").read_bytes())
    return f"{name}.json"


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_run_naming_a_fifo_as_its_golden_set_does_not_hang_the_page(server, home):
    """Before: the page opened the FIFO and waited for ever (and every /eval behind it)."""
    fifo = home.parent / "golden.fifo"
    os.mkfifo(fifo)
    name = _run_naming(home, "fifo", str(fifo))
    answer = requests.get(server.url + "eval", params={"run": name}, timeout=20)
    assert answer.status_code == 200, answer.text
    assert "the golden set named in the run could not be read" in answer.text


def test_a_golden_set_larger_than_the_cap_is_not_read(home, monkeypatch):
    """Reading is bounded: a golden set above MAX_GOLDEN is never read; the page shows the
    run without the golden set's tags."""
    from busca.serve import runview

    name = _run_naming(home, "capped", str(GOLDEN))
    assert runview.load(home / "runs", name).tags_from == str(GOLDEN)
    os.utime(home / "runs" / name, ns=(1, 1))  # a new mtime: not the cached view
    monkeypatch.setattr(runview, "MAX_GOLDEN", GOLDEN.stat().st_size - 1)
    assert runview.load(home / "runs", name).tags_from == ""


def test_a_run_file_larger_than_the_cap_is_a_one_line_error(home, monkeypatch):
    """A run's .trec above MAX_RUN is refused with a one-line 422, not read whole."""
    from busca.search.eval.runs import RunError
    from busca.serve import runview
    from busca.serve.errors import status_of

    name = _run_naming(home, "big", str(GOLDEN))
    trec = home / "runs" / "big.trec"
    monkeypatch.setattr(runview, "MAX_RUN", trec.stat().st_size - 1)
    os.utime(home / "runs" / name, ns=(2, 2))
    with pytest.raises(RunError) as refused:
        runview.load(home / "runs", name)
    assert status_of(refused.value) == 422 and "\n" not in str(refused.value)
    assert "big.trec" in str(refused.value) and str(home) not in str(refused.value)


@pytest.mark.postgres
def test_a_postgres_home_s_url_and_password_are_never_shown(pg_home):
    """Before: /eval on a postgresql:// home said `no saved runs in postgresql:/USER:PASSWORD@…`
    (its runs folder, the URL taken as a path, the password in clear), and every 503 named
    the URL (`no index in postgresql://USER:***@HOST:PORT/DB?corpus=…`). The log keeps the
    URL, its password hidden."""
    from urllib.parse import urlsplit

    home = pg_home
    if urlsplit(home).password is None:  # a server that trusts 127.0.0.1 ignores it
        home = home.replace("@", ":pw-in-the-url@", 1)
    password, host = urlsplit(home).password or "\0", urlsplit(home).hostname
    _invoke(home, "add", str(FIXTURES / "site" / "articles.jsonl"))
    with Server(home, "--no-log", "-q") as server:
        answers = [requests.get(server.url + path, timeout=60) for path in
                   ("eval", "healthz", "api/search?q=prazo&method=bm25", "")]
    log = "".join(server.stderr)
    assert "503 GET /api/search: no index in postgresql://" in log, log
    assert f"@{host}" in log and password not in log, log
    assert "no saved runs" in answers[0].text and answers[2].status_code == 503
    for answer in answers:
        assert password not in answer.text and "postgresql:" not in answer.text, answer.text
        assert f"@{host}" not in answer.text, answer.text
