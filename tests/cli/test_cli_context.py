"""The `context`, `misses` and `log` commands, and the query-log hook of `search`."""

import json

import pytest

from busca.cli import cli
from busca.index.home import storage
from busca.search.eval import golden as golden_module
from busca.search import querylog
from busca.index import LocalHome
from conftest import ENGLISH_DOCS, write_jsonl

REFUND = ("Reembolso. Quando o cliente cancela a assinatura dentro do período de garantia, o"
          " valor pago é devolvido integralmente. O prazo para o estorno aparecer na fatura é"
          " de até 7 dias úteis após a confirmação do cancelamento. Pedidos cancelados depois"
          " da garantia não geram devolução.")
DOCS = [
    {"url": "https://loja.example/reembolso/", "title": "Política de reembolso", "text": REFUND},
    {"url": "https://loja.example/suporte/", "title": "Suporte",
     "text": "O atendimento funciona de segunda a sexta, das 9h às 18h, pelo chat do painel."},
    {"url": "https://loja.example/boleto/", "title": "Pagamentos",
     "text": "Pagamentos por boleto compensam em até três dias úteis. Todo pedido aprovado gera"
             " uma nota fiscal enviada por e-mail."},
]


@pytest.fixture
def indexed(run, tmp_path):
    assert run("add", str(write_jsonl(tmp_path / "docs.jsonl", DOCS))).exit_code == 0
    assert run("index", "--size", "12", "--overlap", "4", "-q").exit_code == 0
    return run


def _logged(home):
    with LocalHome(home) as store:
        return querylog.logged(store)


# --- busca context ------------------------------------------------------------------------

def test_context_prints_a_cited_prompt(indexed):
    result = indexed("context", "qual o prazo do estorno do reembolso?", "-k", "5")
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert out.startswith("Responda usando apenas os trechos abaixo.")
    assert "[fonte: https://loja.example/reembolso/] Política de reembolso\n" in out
    assert "7 dias úteis" in out
    assert out.count("O prazo para o estorno aparecer na fatura") == 1  # windows overlap
    assert out.endswith("Pergunta: qual o prazo do estorno do reembolso?\n")


def test_context_json_spans_map_back_to_the_stored_text(indexed, home):
    result = indexed("context", "prazo do estorno", "--json", "-k", "5")
    assert result.exit_code == 0
    data = json.loads(result.stdout)
    assert data["answered"] and data["prompt"].startswith("Responda")
    with LocalHome(home) as store:
        for p in data["passages"]:
            text = store.get(p["url"]).text
            assert p["title"] == store.get(p["url"]).title
            for span in p["spans"]:
                assert text[span["start"]:span["end"]] == span["text"]
            assert p["score"] == max(h["score"] for h in p["hits"])


def test_context_in_english(indexed):
    out = indexed("context", "prazo do estorno", "--lang", "en").stdout
    assert out.startswith("Answer using only the passages below.")
    assert "\n\nPassages:\n\n[fonte: https://loja.example/reembolso/]" in out
    assert out.endswith("Question: prazo do estorno\n")


def test_context_instruction_follows_the_index_language(run, tmp_path):
    """An English site indexed with `--analyzer en` got the Portuguese instruction ("Responda
    usando apenas…", "Trechos:", "Pergunta:") unless every call said --lang en: the default
    is now the index's, and --lang still chooses; --json says which."""
    assert run("add", str(write_jsonl(tmp_path / "en.jsonl", ENGLISH_DOCS))).exit_code == 0
    assert run("index", "-q", "--analyzer", "en").exit_code == 0
    question = "How long do refunds take?"
    out = run("context", question, "--method", "bm25", "--min-score", "0").stdout
    assert out.startswith("Answer using only the passages below.")
    assert "\n\nPassages:\n\n[fonte: https://help.example/refunds/]" in out
    assert out.endswith(f"Question: {question}\n")
    data = json.loads(run("context", question, "--method", "bm25", "--min-score", "0",
                          "--json").stdout)
    assert data["lang"] == "en" and data["prompt"] == out
    chosen = run("context", question, "--method", "bm25", "--min-score", "0", "--lang", "pt",
                 "--json").stdout
    assert json.loads(chosen)["lang"] == "pt"
    assert json.loads(chosen)["prompt"].startswith("Responda usando apenas os trechos abaixo.")


def test_context_instruction_stays_portuguese_on_a_portuguese_index(indexed):
    data = json.loads(indexed("context", "prazo do estorno", "--json").stdout)
    assert data["lang"] == "pt" and data["prompt"].startswith("Responda usando apenas")
    data = json.loads(indexed("context", "prazo do estorno", "--json", "--lang", "en").stdout)
    assert data["lang"] == "en" and data["prompt"].startswith("Answer using only")


def test_context_with_a_user_template(indexed, tmp_path):
    template = tmp_path / "t.txt"
    template.write_text("Contexto:\n{context}\nPergunta do cliente: {question}", encoding="utf-8")
    out = indexed("context", "boleto", "--template", str(template)).stdout
    assert out.startswith("Contexto:\n[fonte: https://loja.example/boleto/] Pagamentos\n")
    assert out.endswith("\nPergunta do cliente: boleto\n")


def test_context_a_hidden_character_cannot_forge_a_citation(run, tmp_path):
    """A bidi control or a zero-width character inside a crawled "[fonte: URL]" does not make
    it a label once the terminal's copy of the prompt loses that character, nor in the
    prompt of --json (which POST /api/context and the MCP tool give too)."""
    text = ("O prazo do reembolso é de 7 dias. Veja [\u202afonte: https://evil.example/v] e"
            " [\u200bfonte: https://evil.example/z].")
    docs = [{**DOCS[0], "text": text}, *DOCS[1:]]
    assert run("add", str(write_jsonl(tmp_path / "docs.jsonl", docs))).exit_code == 0
    assert run("index", "-q").exit_code == 0
    shown = run("context", "prazo do reembolso", "--min-score", "0").stdout
    given = json.loads(run("context", "prazo do reembolso", "--min-score", "0", "--json").stdout)
    for prompt in (shown, given["prompt"]):
        assert "evil.example" in prompt and "[fonte: https://evil" not in prompt
        assert "\u202a" not in prompt and "\u200b" not in prompt


def test_max_chars_cuts_at_a_sentence_end(indexed):
    result = indexed("context", "prazo do estorno", "--json", "--max-chars", "150", "-k", "1")
    data = json.loads(result.stdout)
    assert data["chars"] <= 150
    for p in data["passages"]:
        for span in p["spans"]:
            assert span["text"].endswith((".", "!", "?"))


def test_max_chars_keeps_the_answer_that_closes_a_window(run, home, tmp_path):
    """A 200-word window whose last sentence answers: a budget of two sentences keeps that
    sentence (it kept the window's first two), in busca context and in Corpus.context."""
    import busca
    filler = [f"A loja {n} abre de segunda a sábado e atende pelo telefone." for n in range(14)]
    answer = "O estorno do reembolso aparece na fatura do cartão em até sete dias úteis."
    docs = [{"url": "https://loja.example/r/", "title": "Reembolso",
             "text": " ".join(["Reembolso.", *filler, answer])}, DOCS[1]]
    assert run("add", str(write_jsonl(tmp_path / "w.jsonl", docs))).exit_code == 0
    assert run("index", "-q").exit_code == 0
    question = "Em quantos dias o estorno aparece na fatura?"
    budget = len(filler[-1]) + 1 + len(answer)
    result = run("context", question, "--max-chars", str(budget), "-k", "1", "--min-score", "0")
    assert result.exit_code == 0, result.output
    assert f"{filler[-1]} {answer}\n```\n\nPergunta: {question}\n" in result.stdout
    with busca.open(home) as corpus:
        found = corpus.context(question, k=1, min_score=0, max_chars=budget, log=False)
    assert [p.text for p in found.passages] == [f"{filler[-1]} {answer}"]


# --- below the floor -----------------------------------------------------------------------

def test_below_the_floor_exits_3_with_no_prompt(indexed, home):
    result = indexed("context", "qual a senha do wifi do escritório?", "--min-score", "0.99")
    assert result.exit_code == 3
    assert result.stdout == ""
    assert "não encontrei" in result.stderr and "0.9900" in result.stderr
    result = indexed("context", "xilofone", "--json")
    assert result.exit_code == 3
    assert "não encontrei" in result.stderr and "xilofone" in result.stderr


def test_nothing_found_speaks_the_prompts_language(run, tmp_path):
    """An English index's refusal said "não encontrei (nothing found)" on stderr, in
    busca context and the shell's :context alike: it follows the prompt's language now
    (the index's, or --lang / :lang)."""
    assert run("add", str(write_jsonl(tmp_path / "en.jsonl", ENGLISH_DOCS))).exit_code == 0
    assert run("index", "-q", "--analyzer", "en").exit_code == 0
    result = run("context", "xylophone", "--method", "bm25")
    assert (result.exit_code, result.stdout) == (3, "")
    assert result.stderr.startswith("nothing found: none of the query's words")
    assert "não encontrei" not in result.stderr and "xylophone" in result.stderr
    result = run("context", "refunds", "--method", "bm25", "--min-score", "99")
    assert result.exit_code == 3 and result.stderr.startswith("nothing found: no passage")
    chosen = run("context", "xylophone", "--method", "bm25", "--lang", "pt")
    assert chosen.stderr.startswith("não encontrei (nothing found): ")
    shell = run("shell", "--method", "bm25", input=":context xylophone\n:lang pt\n:context\n")
    assert "\nnothing found: none of the query's words" in "\n" + shell.stdout
    assert "não encontrei" in shell.stdout.split("nothing found: none", 1)[1]


def test_json_below_the_floor_is_json_that_says_why(indexed):
    """A program reading --json always gets JSON: nothing found is the context's JSON with
    its reason and no prompt (it printed nothing), as the shell's --json :context; exit 3
    and the stderr line stay."""
    for args, words in ((("qual a senha do wifi do escritório?", "--min-score", "0.99"),
                         "no passage scores 0.9900 or more"),
                        (("xilofone",), "xilofone")):
        result = indexed("context", *args, "--json")
        assert result.exit_code == 3 and "não encontrei" in result.stderr
        data = json.loads(result.stdout)
        assert (data["answered"], data["passages"], data["prompt"]) == (False, [], None)
        assert words in data["reason"] and data["question"] == args[0]
        shell = indexed("shell", "--json", *args[1:],
                        input=f":context {args[0]}\n")
        assert json.loads(shell.stdout.splitlines()[-1]) == data


def test_the_calibrated_floor_refuses_without_an_option(indexed, home):
    index = storage.load_index(home)
    storage.update_manifest(index, {"methods": {"tfidf": {"floor": 0.99}}})
    result = indexed("context", "prazo do estorno")
    assert (result.exit_code, result.stdout) == (3, "")
    assert "calibrated floor 0.9900" in result.stderr and "não encontrei" in result.stderr
    assert indexed("context", "prazo do estorno", "--min-score", "0").exit_code == 0


# --- bad input -----------------------------------------------------------------------------

def test_template_without_a_placeholder_is_a_usage_error(indexed, tmp_path):
    template = tmp_path / "t.txt"
    template.write_text("Só a pergunta: {question}", encoding="utf-8")
    result = indexed("context", "boleto", "--template", str(template))
    assert result.exit_code == 2
    assert "no {context}" in result.stderr and "Traceback" not in result.output


def test_max_chars_too_small_for_one_sentence(indexed):
    result = indexed("context", "prazo do estorno", "--max-chars", "5")
    assert result.exit_code == 2 and result.stdout == ""
    assert "too small for even one sentence" in result.stderr


def test_unknown_method_and_empty_question(indexed):
    result = indexed("context", "boleto", "--method", "nope")
    assert result.exit_code == 1 and "it has: tfidf" in result.stderr
    result = indexed("context", "   ")
    assert result.exit_code == 2 and "the question is empty" in result.stderr
    assert _logged_count(indexed) == 0


HYBRID_Q = "Qual a universidade pioneira no Brasil em engenharia de software?"


def test_context_takes_hybrids_options_as_search_does(run, fake, home):
    """--fusion, --window, --rrf-k and --weights, as busca search takes them (context had
    none), ranked as Corpus.context ranks with them; refused with a method that fuses
    nothing, by the same rule and words as search."""
    import busca
    from conftest import FIXTURES

    assert run("add", str(FIXTURES / "site" / "articles.jsonl")).exit_code == 0
    assert run("index", "-q", "--dense", "fake").exit_code == 0
    options = ["--fusion", "rrf", "--window", "20", "--rrf-k", "10",
               "--weights", "bm25=1,dense=0.5"]
    result = run("context", HYBRID_Q, "--method", "hybrid", "--json", "--no-log",
                 "--no-serve", "--min-score", "0", *options)
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    with busca.open(home) as corpus:
        found = corpus.context(HYBRID_Q, method="hybrid", min_score=0, log=False,
                               fusion="rrf", window=20, rrf_k=10, weights="bm25=1,dense=0.5")
        default = corpus.context(HYBRID_Q, method="hybrid", min_score=0, log=False)
    assert data == found.to_json(prompt=found.prompt()) and found.answered
    assert [p["score"] for p in data["passages"]] != [p.score for p in default.passages]
    for method in ("bm25", "dense:fake"):
        refused = run("context", HYBRID_Q, "--method", method, "--fusion", "rrf")
        assert refused.exit_code == 2 and refused.stdout == ""
        assert f"--fusion only applies to --method hybrid (this search uses {method})" \
            in refused.stderr
    both = run("context", HYBRID_Q, "--method", "bm25", "--window", "9", "--weights",
               "bm25=1,dense=1")
    assert both.exit_code == 2
    assert "--weights, --window only apply to --method hybrid" in both.stderr


def _logged_count(run):
    return int(run("log").stdout.split("(")[1].split()[0])


# --- the query log -------------------------------------------------------------------------

def test_search_and_context_are_logged_unless_no_log(indexed, home):
    indexed("search", "boleto")
    indexed("search", "boleto", "--min-score", "0.99")
    indexed("search", "xilofone")
    indexed("context", "boleto")
    indexed("context", "boleto", "--no-log")
    indexed("search", "boleto", "--no-log")
    entries = _logged(home)
    assert [(e.command, e.query, e.answered) for e in entries] == [
        ("search", "boleto", True), ("search", "boleto", False), ("search", "xilofone", False),
        ("context", "boleto", True)]
    assert entries[1].floor == 0.99 and entries[1].scores[0] < 0.99
    assert entries[2].scores == ()


def test_log_off_stops_logging(indexed, home):
    assert indexed("log", "off").stdout == "query log: off (0 queries logged)\n"
    indexed("search", "boleto")
    assert _logged(home) == []
    indexed("log", "on")
    indexed("search", "boleto")
    assert indexed("log").stdout == "query log: on (1 queries logged)\n"


def test_a_log_write_that_fails_never_fails_the_search(indexed, home):
    """A full disk (or a lock held past the timeout) under the query log: the visitor still
    gets the answer, with a note that the question was not logged (it failed the search)."""
    import sqlite3

    db = sqlite3.connect(home / "busca.db")
    db.execute("CREATE TRIGGER full BEFORE INSERT ON queries"
               " BEGIN SELECT RAISE(FAIL, 'database or disk is full'); END")
    db.commit()
    db.close()
    for command in ("search", "context"):
        result = indexed(command, "boleto")
        assert result.exit_code == 0, result.output
        assert "boleto" in result.stdout.lower()
        note = result.stderr.splitlines()[-1]
        assert note.startswith(f"note: {command} did not log this question: ")
        assert note.endswith("database or disk is full") and "Traceback" not in result.stderr
    db = sqlite3.connect(home / "busca.db")
    db.execute("DROP TRIGGER full")
    db.commit()
    db.close()
    assert _logged(home) == []


def test_log_prune_keeps_only_the_last_days(indexed, home):
    indexed("search", "boleto")
    with LocalHome(home) as store:
        store.log_query(command="search", query="velha", method="tfidf", k=3, scores=[],
                        floor=None, answered=False, seconds=0.1, at="2020-01-01T00:00:00+00:00")
    result = indexed("log", "--prune", "30")
    assert result.exit_code == 0
    assert result.stdout == "query log: on (1 queries logged; 1 older than 30 days removed)\n"
    assert [e.query for e in _logged(home)] == ["boleto"]
    assert indexed("log", "off", "--prune", "0").stdout == (
        "query log: off (0 queries logged; 1 older than 0 days removed)\n")
    bad = indexed("log", "--prune", "-1")
    assert bad.exit_code == 2 and "--prune" in bad.stderr


def test_log_json_carries_the_state_the_count_and_the_pruned(indexed, home):
    """`busca log` had no --json: a cron job parsed "query log: on (1 queries logged; …)".
    Its JSON carries what the line says (querylog.LogState, one library call)."""
    indexed("search", "boleto")
    with LocalHome(home) as store:
        store.log_query(command="search", query="velha", method="tfidf", k=3, scores=[],
                        floor=None, answered=False, seconds=0.1, at="2020-01-01T00:00:00+00:00")
    shown = indexed("log", "--json")
    assert shown.exit_code == 0 and shown.stderr == ""
    assert json.loads(shown.stdout) == {"enabled": True, "queries": 2, "pruned": None}
    pruned = indexed("log", "off", "--prune", "30", "--json")
    assert pruned.exit_code == 0
    assert json.loads(pruned.stdout) == {"enabled": False, "queries": 1, "pruned": 1}
    assert [e.query for e in _logged(home)] == ["boleto"]


def test_misses_lists_the_failures_most_frequent_first(indexed):
    for _ in range(2):
        indexed("context", "qual a senha do wifi?", "--min-score", "0.5")
    indexed("search", "xilofone")
    indexed("context", "prazo do estorno")
    out = indexed("misses").stdout.splitlines()
    assert out[0].split() == ["count", "best", "last", "asked", "(UTC)", "question"]
    assert out[1].split()[0] == "2" and out[1].endswith("qual a senha do wifi?")
    assert out[2].split()[:2] == ["1", "—"] and out[2].endswith("xilofone")
    assert len(out) == 3
    lines = [json.loads(line) for line in indexed("misses", "--json").stdout.splitlines()]
    assert [(m["question"], m["count"], m["reason"]) for m in lines] == [
        ("qual a senha do wifi?", 2, "low scores"), ("xilofone", 1, "nothing found")]
    assert indexed("misses", "--since", "2999-01-01").stdout.startswith("no missed questions")


def test_misses_golden_writes_a_skeleton_that_eval_asks_to_fill(indexed, tmp_path):
    indexed("context", "qual a senha do wifi?", "--min-score", "0.5")
    indexed("search", "quando compensa o boleto", "--min-score", "0.99")
    path = tmp_path / "golden.json"
    result = indexed("misses", "--golden", str(path), "--json")
    assert result.exit_code == 0 and "wrote 2 questions" in result.stderr
    assert result.stdout == ""  # the file is the result: --json's stdout is never prose
    dash = indexed("misses", "--golden", "-")
    assert dash.exit_code == 2 and "'-' is no file name" in dash.stderr  # it wrote ./-
    none = indexed("misses", "--since", "2999-01-01", "--golden", str(tmp_path / "n.json"))
    assert "no missed questions in the query log since 2999-01-01 00:00;" in none.stderr
    items = json.loads(path.read_text(encoding="utf-8"))
    assert items == [{"pergunta": "quando compensa o boleto", "trecho": ""},
                     {"pergunta": "qual a senha do wifi?", "trecho": ""}]
    with pytest.raises(golden_module.GoldenError, match="empty; fill it in"):
        golden_module.load_golden(path)
    again = indexed("misses", "--golden", str(path))
    assert again.exit_code == 1 and "already exists" in again.stderr
    _fill(path)
    golden = golden_module.load_golden(path)
    assert [(q.text, q.answerable) for q in golden.questions] == [
        ("quando compensa o boleto", True), ("qual a senha do wifi?", False)]


def _fill(path):
    trechos = {"quando compensa o boleto": "compensam em até três dias úteis",
               "qual a senha do wifi?": None}  # the site cannot answer it
    items = json.loads(path.read_text(encoding="utf-8"))
    for item in items:
        item["trecho"] = trechos[item["pergunta"]]
    path.write_text(json.dumps(items, ensure_ascii=False), encoding="utf-8")


@pytest.mark.skipif("eval" not in cli.commands, reason="busca eval is not there yet")
def test_misses_golden_round_trips_into_busca_eval(indexed, tmp_path):
    indexed("search", "quando compensa o boleto", "--min-score", "0.99")
    indexed("context", "qual a senha do wifi?", "--min-score", "0.5")
    path = tmp_path / "golden.json"
    indexed("misses", "--golden", str(path))
    unfilled = indexed("eval", str(path))
    assert unfilled.exit_code == 1 and "fill it in" in unfilled.stderr
    _fill(path)
    result = indexed("eval", str(path), "--json", "-q")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert (data["info"]["answerable"], data["info"]["unanswerable"]) == (1, 1)
    assert data["summary"]["tfidf"]["recall@3"]["mean"] == 1
