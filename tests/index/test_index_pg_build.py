"""Builds on PostgreSQL: one transaction (a killed build leaves the old one live and nothing of
itself), incremental rebuilds, dense vectors in pgvector (HNSW close to exact search)."""

from __future__ import annotations

import json
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import psycopg
import pytest
from click.testing import CliRunner

from busca.cli import cli
from busca.crawler.store import Document
from busca.index import open_home

pytestmark = pytest.mark.postgres

REPO = Path(__file__).resolve().parents[2]
ARTICLES = REPO / "fixtures" / "site" / "articles.jsonl"
GOLDEN = REPO / "fixtures" / "golden" / "golden.json"


def busca(home, *args) -> str:
    result = CliRunner().invoke(cli, ["--home", str(home), *args], catch_exceptions=False,
                                obj={})
    assert result.exit_code == 0, result.output
    return result.stdout


def tables_of(home_url: str) -> set[str]:
    with open_home(home_url) as home:
        rows = home.conn().execute("SELECT tablename FROM pg_tables WHERE schemaname = %s",
                                   (home.schema,)).fetchall()
    return {r[0] for r in rows}


def _wait_for_copy(conn, process, seconds: float = 120) -> bool:
    """True once some session of this database is COPYing (the build's upload)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and process.poll() is None:
        busy = conn.execute("SELECT count(*) FROM pg_stat_activity WHERE datname ="
                            " current_database() AND state = 'active' AND query ILIKE 'COPY%%'"
                            " AND pid <> pg_backend_pid()").fetchone()[0]
        if busy:
            return True
        time.sleep(0.02)
    return False


def test_sigkill_during_a_build_leaves_the_previous_build_searchable(
        postgres_server_url, synthetic_corpus):
    docs, questions = synthetic_corpus
    url = f"{postgres_server_url}?corpus=kill_{random.getrandbits(32):x}"
    busca(url, "add", str(ARTICLES))
    busca(url, "index", "--quiet")
    before = busca(url, "search", "estágio obrigatório", "--method", "bm25", "--json",
                   "--no-log")
    tables = tables_of(url)
    busca(url, "add", str(docs))  # 10,500 more documents: a build of several seconds
    command = [sys.executable, "-c", "from busca.cli import main; main()", "--home", url,
               "index", "--quiet"]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    with psycopg.connect(postgres_server_url, autocommit=True) as conn:
        caught = _wait_for_copy(conn, process)
        process.send_signal(signal.SIGKILL)
        process.wait()
        assert caught, "the build ended before it could be killed"
        # the server notices the dead client and rolls its transaction back
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and conn.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
                " AND pid <> pg_backend_pid() AND backend_type = 'client backend'"
                " AND query ILIKE 'COPY%%'").fetchone()[0]:
            time.sleep(0.1)
    assert busca(url, "search", "estágio obrigatório", "--method", "bm25", "--json",
                 "--no-log") == before
    assert tables_of(url) == tables  # nothing of the killed build remains
    busca(url, "index", "--quiet")
    assert json.loads(busca(url, "stats", "--json"))["documents"] == 39 + 10_500


def test_incremental_rebuild_rechunks_and_reencodes_only_changed_documents(pg_home, fake):
    busca(pg_home, "add", str(ARTICLES))
    first = json.loads(busca(pg_home, "index", "--quiet", "--dense", "fake") and
                       busca(pg_home, "stats", "--json"))
    assert first["methods"]["dense"]["reused"] == 0
    assert first["methods"]["dense"].get("groups") is None  # pgvector: window vectors only
    with open_home(pg_home) as home:
        doc = next(iter(home.documents()))
        home.put(Document(doc.url, doc.title, doc.text + " Uma frase nova no fim do texto.",
                          doc.source, doc.modified))
    encoded_before = len(fake.encoded)
    busca(pg_home, "index", "--quiet")
    with open_home(pg_home) as home:
        second = home.current().manifest
        changed = [r for r in home.current().chunks() if r.url == doc.url]
    assert second.rechunked_documents == 1
    dense = second.entry("dense")
    assert dense["encoded"] == len(fake.encoded) - encoded_before <= len(changed)
    assert dense["reused"] == second.chunks - dense["encoded"] > 0


def test_two_builds_kept_older_dropped(pg_home):
    busca(pg_home, "add", str(ARTICLES))
    names = []
    for _ in range(3):
        busca(pg_home, "index", "--quiet")
        with open_home(pg_home) as home:
            names.append(home.current().name)
    tables = tables_of(pg_home)
    assert not any(t.startswith(names[0]) for t in tables)
    assert any(t.startswith(names[1]) for t in tables)
    assert any(t.startswith(names[2]) for t in tables)


def test_dense_hnsw_top10_close_to_exact_and_exact_matches_local(
        tmp_path, postgres_server_url, synthetic_corpus, fake):
    docs, questions = synthetic_corpus
    url = f"{postgres_server_url}?corpus=dense_{random.getrandbits(32):x}"
    local = tmp_path / "home"
    for home in (local, url):
        busca(home, "add", str(docs))
        # window vectors on both sides: a PostgreSQL home stores no sentence groups
        busca(home, "index", "--quiet", "--methods", "bm25", "--dense", "fake",
              "--dense-groups", "0")
    found, wanted = 0, 0
    with open_home(local) as a, open_home(url) as b, open_home(url + "&dense=exact") as c:
        local_dense = a.current().ranker("dense")
        hnsw, exact = b.current().ranker("dense"), c.current().ranker("dense")
        for query in questions[:100]:
            ids_l, scores_l = local_dense.top(query, 10)
            ids_e, scores_e = exact.top(query, 10)
            assert np.allclose(scores_l, scores_e, atol=1e-6)
            assert len(set(ids_l) ^ set(ids_e)) <= 2  # float32 ties at the 10th place at most
            ids_h, scores_h = hnsw.top(query, 10)
            # a hit counts when it scores at least the exact 10th score (equal scores tie)
            found += int((scores_h >= scores_e[-1] - 1e-6).sum())
            wanted += len(ids_e)
    assert found / wanted >= 0.99


def test_dense_eval_recall_hnsw_within_001_of_exact(pg_home, fake):
    busca(pg_home, "add", str(ARTICLES))
    busca(pg_home, "index", "--quiet", "--dense", "fake")
    recall = {}
    for mode in ("hnsw", "exact"):
        report = json.loads(busca(f"{pg_home}&dense={mode}", "eval", str(GOLDEN), "--json"))
        recall[mode] = report["summary"]["dense"]["recall@10"]["mean"]
    assert abs(recall["hnsw"] - recall["exact"]) <= 0.01


READER = """
import json, sys, time
from busca.index import open_home
from busca.search import search
url, stop, queries = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
done, failed, builds = 0, [], set()
with open_home(url) as home:
    while True:
        for query in queries:
            try:
                build = home.current()  # what a server does per request: the live build
                hits = search(build, home, query, method="bm25", k=10)
                assert hits, query
                done += 1
                builds.add(build.manifest.build)
            except Exception as e:
                failed.append(f"{type(e).__name__}: {e}")
        import os
        if os.path.exists(stop):
            break
print(json.dumps({"done": done, "failed": failed[:5], "builds": len(builds)}))
"""


def test_two_readers_answer_every_request_while_a_third_process_reindexes(
        tmp_path, pg_home):
    """(busca serve is not on main yet: two reader processes stand in for two servers.)"""
    busca(pg_home, "add", str(ARTICLES))
    busca(pg_home, "index", "--quiet")
    queries = [q["pergunta"] for q in json.loads(GOLDEN.read_text(encoding="utf-8"))][:20]
    stop = tmp_path / "stop"
    readers = [subprocess.Popen([sys.executable, "-c", READER, pg_home, str(stop),
                                 json.dumps(queries)], stdout=subprocess.PIPE, text=True)
               for _ in range(2)]
    time.sleep(2)
    for size in (150, 200, 120):  # three rebuilds: the first build's tables get dropped
        indexer = subprocess.run([sys.executable, "-c", "from busca.cli import main; main()",
                                  "--home", pg_home, "index", "--quiet", "--size", str(size),
                                  "--overlap", "20"], capture_output=True, text=True)
        assert indexer.returncode == 0, indexer.stderr
    stop.touch()
    results = [json.loads(r.communicate(timeout=120)[0]) for r in readers]
    for result in results:
        assert result["failed"] == [] and result["done"] > 20
        assert result["builds"] >= 2  # it answered across a swap


def test_a_killed_builds_array_folder_is_removed_by_the_next_build(pg_home):
    import tempfile

    from busca.index.postgres.build import SPOOL

    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True).stdout.strip()
    orphan = Path(tempfile.gettempdir()) / f"{SPOOL}{dead}-test"
    orphan.mkdir()
    with open_home(pg_home) as home:
        home.new_build().abort()
    assert not orphan.exists()
