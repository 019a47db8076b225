"""`busca serve` end to end: the real server on 127.0.0.1, used over HTTP.

The API must give the same hits and scores as `busca search --json` for every method (dense
with the real `use` encoder), swap in a rebuilt index with no failed request, keep writes
behind the token, and answer bad input with JSON errors — never a stack trace.
"""

from __future__ import annotations

import http.client
import json
import re
import shutil
import signal
import threading
import time
from urllib.parse import urlsplit

import pytest
import requests
from click.testing import CliRunner

from busca.cli import cli
from conftest import FIXTURES
from serving import Server

TOKEN = "t0ken-for-the-tests-0123456789"
LEXICAL_Q = "Qual a universidade pioneira no Brasil em engenharia de software?"
PARAPHRASE_Q = ("Como o PC consegue rodar vários aplicativos juntos se o processador só faz"
                " uma coisa por vez?")
METHODS = ("tfidf", "bm25", "dense", "hybrid")
HIT_KEYS = ("rank", "score", "url", "title", "chunk_id", "start", "end", "text")


def cli_json(home, *args) -> list[dict]:
    result = CliRunner().invoke(cli, ["--home", str(home), *args], catch_exceptions=False,
                                obj={})
    assert result.exit_code == 0, result.output
    return [json.loads(line) for line in result.stdout.splitlines() if line.strip()]


@pytest.fixture(scope="module")
def server(served_home):
    with Server(served_home, "--no-log") as s:
        yield s


def get(server, path, **params):
    return requests.get(server.url + path.lstrip("/"), params=params, timeout=60)


def raw(server, method: str, target: str, body: bytes | None = None, headers=None):
    """A request whose target is sent byte for byte (no client-side normalisation of ..)."""
    parts = urlsplit(server.url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    conn.putrequest(method, target, skip_accept_encoding=True)
    for key, value in (headers or {}).items():
        conn.putheader(key, value)
    if body is not None and "Transfer-Encoding" not in (headers or {}):
        conn.putheader("Content-Length", str(len(body)))
    conn.endheaders()
    if body is not None:
        conn.send(body)
    response = conn.getresponse()
    data = response.read()
    conn.close()
    return response.status, data


def assert_json_error(response, status: int, words: str = ""):
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json")
    data = response.json()
    assert data["status"] == status and words in data["error"]
    assert "Traceback" not in response.text


@pytest.mark.parametrize("method", METHODS)
def test_api_search_equals_cli_search(server, served_home, method):
    for question in (LEXICAL_Q, PARAPHRASE_Q):
        expected = cli_json(served_home, "search", question, "--method", method, "-k", "5",
                            "--json", "--no-log")
        r = get(server, "/api/search", q=question, method=method, k=5)
        assert r.status_code == 200, r.text
        data = r.json()
        assert data["query"] == question and data["method"] == method
        assert data["took_ms"] >= 0
        assert len(expected) == 5
        assert [{k: h[k] for k in HIT_KEYS} for h in data["hits"]] == \
            [{k: h[k] for k in HIT_KEYS} for h in expected]


def test_min_score_and_no_known_word(server, served_home):
    expected = cli_json(served_home, "search", LEXICAL_Q, "--min-score", "0.3", "--json",
                        "--no-log", "-k", "10")
    data = get(server, "/api/search", q=LEXICAL_Q, min_score=0.3, k=10).json()
    assert [h["chunk_id"] for h in data["hits"]] == [h["chunk_id"] for h in expected]
    assert all(h["score"] >= 0.3 for h in data["hits"]) and data["floor"] == 0.3
    data = get(server, "/api/search", q="xilofone zzzq").json()
    assert data["hits"] == [] and "xilofone" in data["note"]


def test_compare_gives_each_hit_its_rank_under_every_method(server):
    data = get(server, "/api/compare", q=PARAPHRASE_Q, k=3).json()
    assert data["methods"] == list(METHODS)
    deep = {m: [h["chunk_id"] for h in get(server, "/api/search", q=PARAPHRASE_Q, method=m,
                                            k=100).json()["hits"]] for m in METHODS}
    for method, hits in data["columns"].items():
        assert [h["chunk_id"] for h in hits] == deep[method][:3]
        for hit in hits:
            for other in METHODS:
                rank = hit["ranks"][other]
                found = deep[other].index(hit["chunk_id"]) + 1 \
                    if hit["chunk_id"] in deep[other] else None
                assert rank == found, (method, other, hit["chunk_id"])
    ids = [row["chunk_id"] for row in data["rows"]]
    assert len(ids) == len(set(ids)) == len({h["chunk_id"] for c in data["columns"].values()
                                             for h in c})


def test_context_equals_cli_context_and_409_below_the_floor(server, served_home):
    question = "Em qual decreto foi fundado o Ministério da Educação?"
    expected = json.loads(CliRunner().invoke(
        cli, ["--home", str(served_home), "context", question, "--json", "--no-log",
              "--max-chars", "800", "--lang", "en"], catch_exceptions=False, obj={}).stdout)
    r = requests.post(server.url + "api/context", timeout=60,
                      json={"q": question, "max_chars": 800, "lang": "en"})
    assert r.status_code == 200, r.text
    assert r.json()["prompt"] == expected["prompt"]
    assert r.json()["passages"] == expected["passages"]
    r = requests.post(server.url + "api/context", timeout=60,
                      json={"q": question, "min_score": 100})
    assert r.status_code == 409
    assert r.json()["answer"] is None and "100.0000" in r.json()["reason"]


def test_stats_chunk_and_healthz(server, served_home):
    stats = get(server, "/api/stats").json()
    assert (stats["documents"], stats["words"], stats["chunks"]) == (39, 30337, 201)
    assert stats == json.loads(CliRunner().invoke(
        cli, ["--home", str(served_home), "stats", "--json"], obj={}).stdout)
    hit = get(server, "/api/search", q=LEXICAL_Q).json()["hits"][0]
    chunk = get(server, f"/api/chunk/{hit['chunk_id']}").json()
    assert {k: chunk[k] for k in ("url", "title", "start", "end", "text")} == \
        {k: hit[k] for k in ("url", "title", "start", "end", "text")}
    health = get(server, "/healthz").json()
    assert health["status"] == "ok" and health["chunks"] == 201
    assert health["methods"] == list(METHODS)


def test_bad_parameters_are_400_json(server):
    for params, words in (({}, "missing q"), ({"q": "  "}, "empty"),
                          ({"q": "a", "k": "0"}, "between 1 and 100"),
                          ({"q": "a", "k": "abc"}, "whole number"),
                          ({"q": "a", "k": "101"}, "between"),
                          ({"q": "a", "method": "nope"}, "tfidf, bm25, dense, hybrid"),
                          ({"q": "a", "min_score": "nan"}, "finite"),
                          ({"q": "x" * 1001}, "at most 1000")):
        assert_json_error(get(server, "/api/search", **params), 400, words)
    assert_json_error(get(server, "/api/compare", q="a", methods="bm25,nope"), 400, "nope")
    assert_json_error(get(server, "/api/chunk/abc"), 400, "whole number")
    assert_json_error(get(server, "/api/chunk/100000"), 404, "no chunk")
    assert_json_error(get(server, "/nowhere"), 404, "not found")
    assert_json_error(requests.post(server.url + "api/search", timeout=10), 405, "POST")
    post = lambda body: requests.post(server.url + "api/context", data=body, timeout=10)  # noqa: E731
    assert_json_error(post(b"{nope"), 400, "not valid JSON")
    assert_json_error(post(b"[1]"), 400, "JSON object")
    assert_json_error(post(json.dumps({"q": "a", "kk": 3})), 400, "unknown field 'kk'")
    assert_json_error(post(json.dumps({"q": "a", "lang": "fr"})), 400, "pt, en")
    assert_json_error(get(server, "/api/search", q="a", pad="x" * 9000), 414, "query string")


def test_oversized_bodies_are_refused(server):
    big = b'{"q": "' + b"a" * 1_100_000 + b'"}'
    status, data = raw(server, "POST", "/api/context", big,
                       {"Content-Type": "application/json"})
    assert status == 413 and json.loads(data)["status"] == 413
    chunked = b"".join(b"%x\r\n%s\r\n" % (len(part), part)
                       for part in (big[i:i + 65536] for i in range(0, len(big), 65536)))
    status, data = raw(server, "POST", "/api/context", chunked + b"0\r\n\r\n",
                       {"Transfer-Encoding": "chunked"})
    assert status == 413 and b"larger than" in data


@pytest.mark.parametrize("target", [
    "/static/../pyproject.toml", "/static/..%2f..%2fpyproject.toml",
    "/static/%2e%2e/%2e%2e/cli.py", "/../../../../etc/passwd", "/static/..%5c..%5ccli.py",
    "/eval?run=../busca.db", "/eval?run=..%2F..%2Fpyproject.toml", "/api/chunk/..%2f..%2f1",
])
def test_path_traversal_reads_nothing(server, target):
    status, data = raw(server, "GET", target)
    assert status in (400, 404), (status, data[:200])
    assert b"[project]" not in data and b"root:" not in data and b"SQLite" not in data


def test_static_assets_and_security_headers(server):
    r = get(server, "/static/busca.css")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/css")
    page = get(server, "/")
    assert "script-src 'self'" in page.headers["content-security-policy"]
    assert page.headers["x-content-type-options"] == "nosniff"
    assert_json_error(requests.get(server.url + "api/stats", timeout=10,
                                   headers={"Host": "evil.example"}), 400, "Host")


def test_writes_need_the_token(served_home, tmp_path):
    home = tmp_path / "home"
    shutil.copytree(served_home, home)
    with Server(home, "--no-log") as read_only:
        r = requests.post(read_only.url + "api/documents", timeout=10, json={"documents": []})
        assert_json_error(r, 404, "--token")
    doc = {"url": "https://exemplo.example/novo", "title": "Novo artigo",
           "text": "O ornitorrinco bota ovos e amamenta os filhotes."}
    with Server(home, "--token", TOKEN, "--no-log") as s:
        post = lambda path, auth, body: requests.post(  # noqa: E731
            s.url + path, json=body, timeout=120,
            headers={"Authorization": auth} if auth else {})
        for auth in (None, "Bearer wrong", f"Basic {TOKEN}", f"Bearer {TOKEN}x"):
            assert_json_error(post("api/documents", auth, {"documents": [doc]}), 401, "Bearer")
            assert_json_error(post("api/index", auth, {}), 401, "Bearer")
        assert_json_error(post("api/documents", f"Bearer {TOKEN}", {"documents": [{"url": 1}]}),
                          400, "document 1")
        r = post("api/documents", f"Bearer {TOKEN}", {"documents": [doc]})
        assert r.status_code == 200 and r.json()["added"] == 1 and r.json()["documents"] == 40
        before = get(s, "/healthz").json()["build"]
        r = post("api/index", f"Bearer {TOKEN}", {})
        assert r.status_code == 200, r.text
        assert r.json()["documents"] == 40 and r.json()["build"] != before
        hits = get(s, "/api/search", q="ornitorrinco", method="hybrid").json()["hits"]
        assert hits[0]["url"] == doc["url"]
        assert get(s, "/healthz").json()["build"] == r.json()["build"]


def test_index_rebuilt_while_4_clients_query_fails_no_request(served_home, tmp_path):
    home = tmp_path / "home"
    shutil.copytree(served_home, home)
    with Server(home, "--no-log", "--quiet") as s:
        before = get(s, "/healthz").json()["build"]
        stop, results, lock = threading.Event(), [], threading.Lock()

        def client(n: int) -> None:
            session = requests.Session()
            questions = (LEXICAL_Q, PARAPHRASE_Q)
            while not stop.is_set():
                method = METHODS[n % 4] if n % 2 == 0 else "hybrid"
                try:
                    r = session.get(s.url + "api/search", timeout=60,
                                    params={"q": questions[len(results) % 2], "method": method})
                    ok = r.status_code == 200 and len(r.json()["hits"]) == 3
                    outcome = (ok, r.status_code, r.json().get("build"), r.json().get("error"))
                except (requests.RequestException, ValueError) as e:
                    outcome = (False, repr(e), None, None)
                with lock:
                    results.append(outcome)

        threads = [threading.Thread(target=client, args=(n,)) for n in range(4)]
        for t in threads:
            t.start()
        time.sleep(1)
        for _ in range(3):  # a new window size (every chunk re-encoded), then two quick swaps
            rebuilt = CliRunner().invoke(cli, ["--home", str(home), "index", "-q", "--size",
                                               "150", "--overlap", "30"],
                                         catch_exceptions=False, obj={})
            assert rebuilt.exit_code == 0, rebuilt.output
            time.sleep(0.5)
        time.sleep(2)
        stop.set()
        for t in threads:
            t.join(60)
        after = get(s, "/healthz").json()
        failed = [r for r in results if not r[0]]
        assert not failed, failed[:5]
        builds = {r[2] for r in results}
        assert before in builds and after["build"] in builds and after["build"] != before
        assert after["chunks"] == get(s, "/api/stats").json()["chunks"] != 201
        for method in METHODS:  # the swapped-in index answers as the CLI does on it
            expected = cli_json(home, "search", PARAPHRASE_Q, "--method", method, "--json",
                                "--no-log")
            hits = get(s, "/api/search", q=PARAPHRASE_Q, method=method).json()["hits"]
            assert [(h["chunk_id"], h["score"]) for h in hits] == \
                [(h["chunk_id"], h["score"]) for h in expected]


def _added_not_indexed(tmp_path):
    """A corpus with documents and no index yet (`busca serve` without a token creates no
    corpus in a folder that has none: issue 25, item 8)."""
    home, docs = tmp_path / "empty", tmp_path / "docs.jsonl"
    docs.write_text(json.dumps({"url": "https://x.example/1", "title": "Um",
                                "text": "O prazo de entrega é curto."}) + "\n", encoding="utf-8")
    result = CliRunner().invoke(cli, ["--home", str(home), "add", str(docs)], obj={})
    assert result.exit_code == 0, result.output
    return home


def test_no_index_yet_is_503_and_health_still_answers(tmp_path):
    with Server(_added_not_indexed(tmp_path)) as s:
        assert_json_error(get(s, "/api/search", q="prazo"), 503, "busca index")
        health = get(s, "/healthz").json()
        assert health["status"] == "ok" and health["build"] is None
        assert get(s, "/").status_code == 503


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_stops_gracefully_on_a_signal(tmp_path, sig):
    s = Server(_added_not_indexed(tmp_path))
    assert get(s, "/healthz").status_code == 200
    assert s.stop(sig) == 0
    assert any("Finished server process" in line for line in s.stderr), s.stderr
    assert not any("Traceback" in line for line in s.stderr)


def test_text_from_the_site_is_escaped(xss_home):
    from conftest import XSS_TITLE

    with Server(xss_home, "--no-log") as s:
        for method in ("bm25", "compare"):
            page = get(s, "/", q="ornitorrinco <script>alert(1)</script>", method=method).text
            assert "&lt;script&gt;window.__xss = 1&lt;/script&gt;" in page
            assert "&lt;img src=x onerror=" in page and "&lt;/textarea&gt;" in page
            assert "<script>window" not in page and "<img src=x" not in page
            assert "<script>alert" not in page and "&lt;script&gt;alert(1)" in page
            assert 'href="javascript:' not in page and "onmouseover=\"window" not in page
            assert page.count("<script") == 1  # the page's own /static/busca.js
            # a bidi override is left only in a link's target, never in what is read
            page = get(s, "/", q="foto nadando", method=method).text
            assert "\u202e" not in re.sub(r'href="[^"]*"', "", page)
            assert ">https://evil.example/gpj.exe<" in page and "Foto gpj.exe" in page
        hits = get(s, "/api/search", q="ornitorrinco", method="bm25").json()["hits"]
        assert XSS_TITLE in [h["title"] for h in hits]  # JSON keeps the text as it is


def test_eval_page_lists_runs_and_refuses_a_damaged_one(served_home, tmp_path):
    runs = tmp_path / "runs"
    shutil.copytree(served_home / "runs", runs)
    (runs / "broken.json").write_text('{"format": "busca-run", "version": 1, "systems": 3}',
                                      encoding="utf-8")
    with Server(served_home, "--no-log", "--runs", str(runs)) as s:
        page = get(s, "/eval", run="fixture.json")
        assert page.status_code == 200 and "recall@3 by tag" in page.text
        assert "tipo = parafrase" in page.text and 'href="./eval?run=broken.json"' in page.text
        broken = get(s, "/eval", run="broken.json")
        assert broken.status_code == 422 and "damaged run file" in broken.text
        assert "Traceback" not in broken.text
        assert get(s, "/eval", run="missing.json").status_code == 404
        assert "tipo = lexical" in get(s, "/eval").text  # the newest run that can be read
        # a run without any method (it was a 500 for every visitor, the newest one too)
        (runs / "zz-empty.json").write_text('{"format": "busca-run", "version": 1,'
                                            ' "golden": "x", "systems": {}}', encoding="utf-8")
        empty = get(s, "/eval", run="zz-empty.json")
        assert empty.status_code == 422 and "holds no method&#x27;s results" in empty.text
        assert empty.headers["content-type"].startswith("text/html")
        assert "tipo = lexical" in get(s, "/eval").text
        # a method the run lacks, or a run's name where a method goes: said, not replaced
        for query, words in (({"a": "nomethod"}, "a=&#x27;nomethod&#x27; is not a method of the"),
                             ({"b": "fixture.json"}, "b=&#x27;fixture.json&#x27; is not a")):
            wrong = get(s, "/eval", run="fixture.json", **query)
            assert wrong.status_code == 400 and words in wrong.text, wrong.text[-400:]
        assert "warning: only" not in page.text  # 62 answerable questions
        # a run of five questions says five mislead, as busca eval's report does
        golden = json.loads((FIXTURES / "golden" / "golden.json").read_text(encoding="utf-8"))
        few = tmp_path / "few.json"
        few.write_text(json.dumps([q for q in golden if q.get("trecho")][:5]), encoding="utf-8")
        made = CliRunner().invoke(cli, ["--home", str(served_home), "eval", str(few), "-q",
                                        "--methods", "bm25", "--run-out",
                                        str(runs / "few.json")], obj={})
        assert made.exit_code == 0, made.output
        assert "warning: only 5 answerable questions" in get(s, "/eval", run="few.json").text
