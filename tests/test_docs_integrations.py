"""The integration snippets of README.md and docs/serve.md, run as written.

Each block follows a `<!-- tested: NAME -->` marker. The only changes made before running
one are the addresses a reader replaces too: the home path in the MCP configuration (the
fixture corpus'), and the URL of a server (the one this test started on 127.0.0.1: the real
`busca serve`, or the TEI-shaped re-ranking server of tests/rerank_servers.py, since no
cross-encoder can run here). The Python blocks run in a folder whose `.busca` is the fixture
corpus, as a reader's working folder would have it.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import os
import re
import shlex
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from busca.cli import cli

from conftest import REPO
from rerank_servers import RerankServer


def block(path: Path, name: str) -> str:
    """The fenced code block after `<!-- tested: name -->` in `path`."""
    text = path.read_text(encoding="utf-8")
    found = re.search(rf"<!-- tested: {re.escape(name)} -->\n```[a-z]*\n(.*?)```", text, re.S)
    assert found, f"no tested block {name!r} in {path}"
    return found.group(1)


def run_python(code: str, cwd: Path) -> str:
    out = io.StringIO()
    before = Path.cwd()
    os.chdir(cwd)
    try:
        with contextlib.redirect_stdout(out):
            exec(compile(code, "<snippet>", "exec"), {"__name__": "__snippet__"})
    finally:
        os.chdir(before)
    return out.getvalue()


@pytest.fixture
def reader_folder(tmp_path, lexical_home) -> Path:
    (tmp_path / ".busca").symlink_to(lexical_home, target_is_directory=True)
    return tmp_path


def test_readme_mcp_configuration_starts_a_server_an_mcp_client_can_use(lexical_home):
    pytest.importorskip("mcp")
    from mcp import ClientSession, StdioServerParameters, stdio_client

    config = json.loads(block(REPO / "README.md", "mcp-config"))["mcpServers"]["busca"]
    command = Path(sys.executable).parent / config["command"]  # the venv's console script
    assert command.exists(), command
    env = {**os.environ, **config["env"], "BUSCA_HOME": str(lexical_home)}

    async def drive():
        params = StdioServerParameters(command=str(command), args=config["args"], env=env)
        async with stdio_client(params) as (read, write), \
                ClientSession(read, write) as session:
            await session.initialize()
            names = {t.name for t in (await session.list_tools()).tools}
            found = await session.call_tool("context", {"question": "prazo do estágio"})
            return names, found
    names, found = asyncio.run(drive())
    assert names == {"search", "context", "compare", "get_chunk", "stats"}
    assert not found.is_error and "[fonte: " in found.structured_content["prompt"]


def test_readme_langchain_snippet(reader_folder):
    pytest.importorskip("langchain_core")
    out = run_python(block(REPO / "README.md", "langchain"), reader_folder)
    lines = out.splitlines()
    assert len(lines) == 3
    for line in lines:
        score, url = line.split()
        assert float(score) > 0 and url.startswith("https://")


def test_readme_rerank_commands(lexical_home):
    commands = [line[2:] for line in block(REPO / "README.md", "rerank").splitlines()
                if line.startswith("$ ")]
    assert len(commands) == 2
    with RerankServer("tei") as server:
        outputs = []
        for command in commands:
            args = shlex.split(command.replace("http://127.0.0.1:8080", server.url))
            assert args[0] == "busca"
            before = Path.cwd()
            os.chdir(REPO)  # the golden set's path is relative to the repository
            try:
                result = CliRunner().invoke(cli, args[1:], obj={},
                                            env={"BUSCA_HOME": str(lexical_home)})
            finally:
                os.chdir(before)
            assert result.exit_code == 0, result.output
            outputs.append(result.stdout)
    assert outputs[0].startswith("1. ")  # the hits, re-ranked: the server saw bm25's top 30
    assert len(server.requests[0]["body"]["texts"]) == 30
    assert re.search(r"^bm25\+rerank .* \d+\.\d$", outputs[1], re.M)


def test_serve_md_openapi_snippet(lexical_home):
    pytest.importorskip("openapi_spec_validator")
    from serving import Server

    code = block(REPO / "docs" / "serve.md", "openapi")
    with Server(lexical_home, "--no-log") as server:
        out = run_python(code.replace("http://127.0.0.1:8000/", server.url), Path.cwd())
    assert "'/api/search'" in out and "'/openapi.json'" in out


def shell_session(code: str) -> list[tuple[str, str]]:
    """The `$ ` commands of a terminal block (a line ending in `\\` goes on) and the output
    shown after each."""
    steps: list[tuple[str, str]] = []
    lines = code.splitlines()
    i = 0
    while i < len(lines):
        assert lines[i].startswith("$ "), lines[i]
        command = lines[i][2:]
        while command.endswith("\\"):
            i += 1
            command = command[:-1] + lines[i]
        i += 1
        shown = []
        while i < len(lines) and not lines[i].startswith("$ "):
            shown.append(lines[i])
            i += 1
        steps.append((command, "\n".join(shown)))
    return steps


def test_serve_md_writes_session_as_typed(tmp_path, lexical_home):
    """docs/serve.md's writes, typed in one shell: the token the server starts with must be
    the one the curl commands send. The only changes: the server's port (a free one, not
    8000) and a wait for its URL, as a reader waits before typing the next line."""
    import shutil
    import socket
    import subprocess

    if not shutil.which("curl"):
        pytest.skip("needs curl")
    home = tmp_path / "home"
    shutil.copytree(lexical_home, home)  # the session writes a document and a build
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    url = f"http://127.0.0.1:{port}"
    steps = shell_session(block(REPO / "docs" / "serve.md", "writes"))
    script = [f"U={url}"]
    for command, out in steps:
        if command.endswith("busca serve &"):
            script.append(command[:-1] + f"--port {port} -q >/dev/null 2>serve.err &")
            script.append(f"for i in $(seq 300); do curl -sf {url}/healthz >/dev/null && break;"
                          " sleep 0.2; done")
        else:
            script += [command, "echo"] if out else [command]  # curl prints no newline
    script.append("kill %1; wait")
    env = {**os.environ, "BUSCA_HOME": str(home),
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    env.pop("BUSCA_TOKEN", None)
    done = subprocess.run(["bash", "-c", "\n".join(script)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)
    outputs = done.stdout.splitlines()
    shown = [out for command, out in steps if out]
    assert len(outputs) == len(shown) == 3, (done.stdout, done.stderr)
    assert outputs[0] == shown[0]  # the document stored
    built, documented = json.loads(outputs[1]), json.loads(shown[1])
    assert built.keys() == documented.keys()
    for key in ("documents", "words", "chunks", "rechunked_documents", "chunker"):
        assert built[key] == documented[key], key
    assert outputs[2] == shown[2]  # no token: 401


# --- links and the commands table: what a reader clicks and looks up ------------------------

def heading_anchors(path: Path) -> set[str]:
    """The anchors GitHub gives the headings of a Markdown file: lower case, every character
    but letters, digits, `_`, `-` and spaces dropped, spaces as `-`, `-N` on repeats."""
    anchors, seen, fenced = set(), {}, False
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            fenced = not fenced
        heading = None if fenced else re.match(r"#{1,6} (.*)", line)
        if heading:
            text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading.group(1))
            slug = re.sub(r"[^\w\- ]", "", text.strip().lower()).replace(" ", "-")
            anchors.add(f"{slug}-{seen[slug]}" if slug in seen else slug)
            seen[slug] = seen.get(slug, 0) + 1
    return anchors


def dead_links(path: Path) -> list[str]:
    """The relative links of `path` (outside code) whose file, or heading, does not exist."""
    text = re.sub(r"```.*?```", "", path.read_text(encoding="utf-8"), flags=re.S)
    text = re.sub(r"`[^`\n]*`", "", text)  # inline code: `[x](…)` is an example, not a link
    dead = []
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+:", target):
            continue
        file, _, anchor = target.partition("#")
        dest = (path.parent / file).resolve() if file else path
        if not dest.exists() or (anchor and dest.suffix == ".md"
                                 and anchor not in heading_anchors(dest)):
            dead.append(target)
    return dead


def test_dead_link_check_can_fail(tmp_path):
    (tmp_path / "x.md").write_text("# Built models, kept (`BUSCA_CACHE`)\n## Measured\n"
                                   "## Measured\n", encoding="utf-8")
    page = tmp_path / "page.md"
    page.write_text("[a](x.md#built-models-kept-busca_cache) [b](x.md#measured-1) "
                    "[c](x.md#nope) [d](y.md) [e](https://e.example/#z) `[g](z.md)`\n```\n[f](z.md)\n```\n",
                    encoding="utf-8")
    assert dead_links(page) == ["x.md#nope", "y.md"]


@pytest.mark.parametrize("doc", ["README.md", *sorted(
    str(p.relative_to(REPO)) for p in (REPO / "docs").glob("*.md"))])
def test_doc_links_reach_a_file_and_heading(doc):
    assert dead_links(REPO / doc) == []


def test_readme_commands_table_lists_every_command():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    table = readme.split("## Commands", 1)[1].split("\n## ", 1)[0]
    listed = set(re.findall(r"^\| `busca (\w+)", table, re.M))
    assert listed == set(cli.commands)


# --- the options and transcripts a reader copies -------------------------------------------

def command_lines(path: Path) -> list[str]:
    """The code a reader copies from `path`: fenced and indented block lines (a line ending
    in `\\` joined to the next) and inline code spans."""
    text = re.sub(r"\\\n", " ", path.read_text(encoding="utf-8"))
    pieces, fenced = [], False
    for line in text.splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif fenced or line.startswith("    "):
            pieces.append(line)
        else:
            pieces += re.findall(r"`([^`\n]+)`", line)
    return pieces


def unknown_options(path: Path) -> list[str]:
    """Every `busca CMD … --option` of `path` whose command has no such option (or `--home`
    / `-v` before the command), as `CMD --option`."""
    top = {o for p in cli.params for o in p.opts + p.secondary_opts} | {"-h", "--help"}
    unknown = []
    for piece in command_lines(path):
        for found in re.finditer(r"(?:^|[\s(=$])busca((?:\s+--home\s+\S+|\s+-v)*)\s+([a-z]+)\b"
                                 r"([^|;&#)]*)", piece):
            command = cli.commands.get(found.group(2))
            if command is None:
                continue  # prose such as "busca build 24.0 s" in a bench's goals line
            known = top | {o for p in command.params for o in p.opts + p.secondary_opts}
            unknown += [f"{found.group(2)} {flag}" for flag in
                        re.findall(r"(?:^|\s)(--?[a-zA-Z][\w-]*)", found.group(3))
                        if flag not in known]
    return unknown


def test_unknown_option_check_can_fail(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("Run `busca search Q --methd bm25 -k 3` or\n\n"
                    "    busca --home /tmp/h index --dense use --no-dense \\\n"
                    "        --size 100 | head\n\n"
                    "```\n$ busca eval g.json --methods bm25 --silent; busca stats --json\n"
                    "busca build 2.0 s = 1.5x --fast\n```\n", encoding="utf-8")
    assert unknown_options(page) == ["search --methd", "index --no-dense", "eval --silent"]


@pytest.mark.parametrize("doc", ["README.md", *sorted(
    str(p.relative_to(REPO)) for p in (REPO / "docs").glob("*.md"))])
def test_doc_commands_name_real_options(doc):
    assert unknown_options(REPO / doc) == []


@pytest.mark.parametrize("name", ["quickstart", "remove"])
def test_readme_transcripts_are_what_busca_prints(tmp_path, name):
    """README's `$` transcripts, run as a reader runs them (the repository's `fixtures/`
    beside a fresh `.busca`): stdout is the output shown without the lines busca writes on
    stderr, and those are shown too. PyStemmer's version is the one installed."""
    (tmp_path / "fixtures").symlink_to(REPO / "fixtures", target_is_directory=True)
    steps = [("busca add fixtures/site/articles.jsonl", ""), ("busca index -q", ""),
             ("busca search \"Qual a universidade pioneira no Brasil em engenharia de "
              "software?\"", "")] if name == "remove" else []
    steps += shell_session(block(REPO / "README.md", name))
    before = Path.cwd()
    os.chdir(tmp_path)
    try:
        for command, shown in steps:
            args = shlex.split(command)
            assert args[0] == "busca", command
            result = CliRunner().invoke(cli, args[1:], obj={}, env={"BUSCA_HOME": None})
            assert result.exit_code == 0, (command, result.output)
            if not shown:
                continue
            shown = re.sub(r"PyStemmer \S+,", "PyStemmer VERSION,", shown).splitlines()
            out = re.sub(r"PyStemmer \S+,", "PyStemmer VERSION,", result.stdout).splitlines()
            err = result.stderr.splitlines()
            assert [line for line in shown if line not in err] == out, command
            assert set(err) <= set(shown), command
    finally:
        os.chdir(before)
