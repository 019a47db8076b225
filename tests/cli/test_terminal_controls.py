"""Crawled text never drives the terminal: every command that prints a site's or a file's
text runs on a real pseudo-terminal over a home whose titles, URLs and texts hold OSC 0,
OSC 52 (BEL- and ST-terminated), CSI, C1 controls and bidi overrides. The bytes read from the
pty hold none of them, the normal text arrives, and the store keeps every character.
"""

from __future__ import annotations

import json
import os
import pty
import re
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest

from busca.index.home.documents import Store

BUSCA = [sys.executable, "-c", "from busca.cli import main; main()"]
QUESTION = "ornitorrinco filhotes"
HOSTILE_TITLE = "Orni\x1b]0;pwned-title\x07torrinco \u202eevil\u202c"
HOSTILE_TEXT = ("O ornitorrinco\x1b]52;c;cHduZWQtY2xpcA==\x1b\\ bota ovos\x9b31m e\x9d0;c1\x9c"
                " amamenta \x1b[2J\x1b[H os filhotes \u2066isolado\u2069 na Austrália.\r\n"
                "O ornitorrinco\x07 vive\x7f em rios \x1bPdcs\x1b\\ \x1b_apc\x07 \x1bc limpos.")
DOCS = [
    {"url": "https://ok.example/orni\x1b]0;pwned-url\x07tor", "title": HOSTILE_TITLE,
     "text": HOSTILE_TEXT},
    {"url": "https://ok.example/equidna", "title": "Equidna \u202dlro\u202c",
     "text": "A equidna também bota ovos, como o ornitorrinco\x1b]0;pwned-equidna\x1b\\."},
    {"url": "https://ok.example/gato", "title": "Gato", "text": "O gato mia e dorme no sofá."},
]
# what must never reach the terminal: escape introducers of strings, BEL, ST, C1 controls,
# bidi overrides and isolates, DEL, the screen clear, and the payloads of the OSC strings
FORBIDDEN = [b"\x1b]", b"\x07", b"\x1b\\", b"\x1bP", b"\x1b_", b"\x1bc", b"\x1b[2J",
             b"\x1b[H", b"\x7f", *(chr(c).encode() for c in range(0x80, 0xa0)),
             *(chr(c).encode() for c in (*range(0x202a, 0x202f), *range(0x2066, 0x206a)))]
PAYLOADS = [b"pwned", b"cHduZWQ"]  # gone with their sequence (unless shown escaped, as \x1b)
# the hostile URL as a citation writes it: its controls percent-encoded, inert
CITED = b"https://ok.example/orni%1B%5D0;pwned-url%07tor"
SGR = re.compile(rb"\x1b\[[0-9;]*m")  # busca's own colours (only with colour on)


@pytest.fixture(scope="module")
def hostile(tmp_path_factory) -> Path:
    """A lexical home over DOCS, the query log on, one hostile question logged as a miss."""
    home = tmp_path_factory.mktemp("controls") / "home"
    source = home.parent / "docs.jsonl"
    source.write_text("".join(json.dumps(d) + "\n" for d in DOCS), encoding="utf-8")
    for args in (["add", str(source)], ["index", "-q"], ["log", "on"],
                 ["search", "xyzzy\x1b]1;pwnedquestion\x07 \x9bwq\u202equi"]):
        subprocess.run([*BUSCA, "--home", str(home), *args], capture_output=True, timeout=120)
    return home


def env_for(tmp_path: Path, home: Path, colour: bool) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "BUSCA_HISTORY")}
    env.update(HOME=str(tmp_path), BUSCA_HOME=str(home), TERM="dumb", PAGER="cat",
               COLUMNS="100")
    if not colour:
        env["NO_COLOR"] = "1"
    else:  # TERM=dumb has no colour; unset, readline still draws no escapes of its own
        del env["TERM"]
    return env


def on_pty(args: list[str], env: dict, lines: list[str] = (), prompt: bytes = b"",
           timeout: float = 120) -> bytes:
    """Every byte `busca ARGS` writes to a pseudo-terminal (stdout and stderr); each of
    `lines` is typed after the next `prompt`, then Ctrl-D."""
    master, slave = pty.openpty()
    proc = subprocess.Popen([*BUSCA, *args], stdin=slave, stdout=slave, stderr=slave, env=env,
                            start_new_session=True)
    os.close(slave)
    out, typed, deadline = b"", 0, time.monotonic() + timeout
    pending = [*lines, "\x04"] if lines else []
    try:
        while time.monotonic() < deadline:
            if pending and out.count(prompt) > typed:
                os.write(master, pending.pop(0).encode() + (b"" if not pending else b"\r"))
                typed += 1
            if not select.select([master], [], [], 0.5)[0]:
                if proc.poll() is not None:
                    break
                continue
            try:
                chunk = os.read(master, 65536)
            except OSError:  # the process ended and closed its side
                break
            if not chunk:
                break
            out += chunk
        assert proc.wait(timeout=30) in (0, 1, 2, 3), out
    finally:
        if proc.poll() is None:
            proc.kill()
        os.close(master)
    return out


def assert_inert(out: bytes, *, colour: bool, payloads: bool = True) -> None:
    out = out.replace(CITED, b"")  # busca context's label: the payload shown as text
    for sequence in FORBIDDEN + (PAYLOADS if payloads else []):
        assert sequence not in out, (sequence, out)
    rest = SGR.sub(b"", out) if colour else out
    assert b"\x1b" not in rest, out  # no escape but busca's own colours
    assert b"Traceback" not in out


@pytest.mark.parametrize("colour", [False, True])
@pytest.mark.parametrize("args", [
    ["search", QUESTION, "--no-log"],
    ["search", QUESTION, "--no-log", "--method", "bm25", "-k", "2"],
    ["compare", QUESTION],
    ["context", QUESTION, "--no-log"],
], ids=["search", "search-bm25", "compare", "context"])
def test_commands_print_the_text_without_its_controls(hostile, tmp_path, args, colour):
    out = on_pty(["--home", str(hostile), *args], env_for(tmp_path, hostile, colour))
    assert_inert(out, colour=colour)
    text = SGR.sub(b"", out).decode("utf-8")
    assert "Ornitorrinco evil" in text and "https://ok.example/orni" in text
    assert "amamenta" in text and "isolado" in text and "filhotes" in text
    assert CITED in out or args[0] != "context"  # the URL cited, its controls encoded


def test_the_shell_prints_answers_compare_and_context_without_controls(hostile, tmp_path):
    out = on_pty(["--home", str(hostile), "shell", "--no-log"],
                 env_for(tmp_path, hostile, colour=True),
                 lines=[QUESTION, ":compare", ":context", "xyzzy"], prompt=b"busca:tfidf> ")
    assert_inert(out, colour=True)
    text = SGR.sub(b"", out).decode("utf-8")
    assert text.count("Ornitorrinco evil") >= 2  # the hits and the compare table
    assert "[fonte: https://ok.example/orni" in text  # the :context prompt
    # the question without a known word: one line, as busca search says it
    assert "no hits: none of the query's words occurs in the index: xyzzy" in text


def test_misses_and_errors_quoting_file_text_are_inert(hostile, tmp_path):
    env = env_for(tmp_path, hostile, colour=False)
    out = on_pty(["--home", str(hostile), "misses"], env)
    assert_inert(out, colour=False)
    assert "xyzzy wqqui" in out.decode("utf-8")
    bad = tmp_path / "lixo\x1b]0;pwned-file\x07.jsonl"
    bad.write_text("{not json\n", encoding="utf-8")
    out = on_pty(["--home", str(tmp_path / "other"), "add", str(bad)], env)
    assert_inert(out, colour=False)
    assert "skipped" in out.decode("utf-8") and "invalid JSON" in out.decode("utf-8")
    template = tmp_path / "modelo\x1b]0;pwned-template\x07.txt"
    template.write_text("Responda\x1b]52;c;cHduZWQ=\x07 com {context}\n\n{question}\n",
                        encoding="utf-8")
    out = on_pty(["--home", str(hostile), "context", QUESTION, "--no-log", "--template",
                  str(template)], env)
    assert_inert(out, colour=False)
    assert "Responda com" in out.decode("utf-8")
    golden = tmp_path / "perguntas\x1b]0;pwned-golden\x07\u202e.json"
    golden.write_text("[]", encoding="utf-8")
    out = on_pty(["--home", str(hostile), "eval", str(golden)], env)  # an empty golden set
    assert_inert(out, colour=False)
    assert "Error: " in out.decode("utf-8") and "perguntas.json: " in out.decode("utf-8")
    absent = tmp_path / "falta\x1b]52;c;cHduZWQ=\x1b\\.json"  # click shows it escaped: \x1b
    out = on_pty(["--home", str(hostile), "eval", str(absent)], env)
    assert_inert(out, colour=False, payloads=False)
    assert "does not exist" in out.decode("utf-8")


def test_a_question_of_bytes_that_are_not_utf8_is_logged_without_a_traceback(hostile, tmp_path):
    args = [sys.executable.encode(), b"-c", b"from busca.cli import main; main()", b"--home",
            bytes(hostile), b"search", b"ornitorrinco \x9b\x1b]0;pwned-raw\x07"]
    done = subprocess.run(args, capture_output=True, timeout=120,
                          env=env_for(tmp_path, hostile, colour=False))
    assert done.returncode == 0 and b"Traceback" not in done.stderr, done.stderr
    assert b"\x1b]" not in done.stdout and b"Ornitorrinco evil" in done.stdout
    logged = subprocess.run([*BUSCA, "--home", str(hostile), "misses", "--below", "1000",
                             "--json"], capture_output=True, text=True, timeout=120)
    assert any(json.loads(line)["question"].startswith("ornitorrinco \ufffd\x1b]0;")
               for line in logged.stdout.splitlines()), logged.stdout


def test_the_store_and_json_keep_every_character(hostile, tmp_path):
    with Store(hostile) as store:
        for doc in DOCS:
            kept = store.get(doc["url"])
            assert (kept.title, kept.text) == (doc["title"], doc["text"])
    done = subprocess.run([*BUSCA, "--home", str(hostile), "search", QUESTION, "--json",
                           "--no-log"], capture_output=True, timeout=120,
                          env=env_for(tmp_path, hostile, colour=False))
    hits = [json.loads(line) for line in done.stdout.splitlines()]
    assert DOCS[0]["title"] in [h["title"] for h in hits]
    assert DOCS[0]["url"] in [h["url"] for h in hits]
    assert b"\\u001b]0;pwned-title\\u0007" in done.stdout  # JSON-escaped, as before


@pytest.mark.parametrize("text,shown", [
    ("a\x1b]0;title\x07b", "ab"), ("a\x1b]52;c;Zm9v\x1b\\b", "ab"), ("\x1b[31mred\x1b[0m", "red"),
    ("x\x9b31my\x9d0;t\x9cz", "x31my0;tz"), ("\u202eevil\u202c \u2066i\u2069", "evil i"),
    ("tab\tnew\nline\r\x00\x7f", "tab\tnew\nline"), ("\x1b]0;never ended", "0;never ended"),
    ("\x1bPq#0\x1b\\sixel", "sixel"), ("\x1bc\x1b7\x1b(Bok", "ok"), ("ação ✓ 漢字", "ação ✓ 漢字"),
])
def test_strip_controls(text, shown):
    from busca.display import strip_controls

    assert strip_controls(text) == shown


@pytest.mark.parametrize("colour", [True, False])
def test_the_demo_s_titles_follow_no_color(tmp_path, colour):
    """busca demo's "== step" titles were bold on a terminal under NO_COLOR and TERM=dumb
    (click.secho decides alone); they follow the one colour rule (terminal.py)."""
    master, slave = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-c", "from busca.cli import _title; _title('passo')"],
                            stdin=slave, stdout=slave, stderr=slave,
                            env=env_for(tmp_path, tmp_path / "h", colour))
    os.close(slave)
    out = b""
    while select.select([master], [], [], 10)[0]:
        try:
            chunk = os.read(master, 4096)
        except OSError:
            break
        if not chunk:
            break
        out += chunk
    os.close(master)
    assert proc.wait(timeout=30) == 0 and b"== passo" in out, out
    assert (b"\x1b[" in out) == colour, out
