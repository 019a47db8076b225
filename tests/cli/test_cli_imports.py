"""The command line loads only what a command needs: importing it, or answering a lexical
`busca search`, never imports the crawler, bs4, requests, scikit-learn or scipy."""

import json
import subprocess
import sys

from busca import crawler

HEAVY = ("bs4", "requests", "sklearn", "scipy", "numba", "matplotlib")
PROBE = """
import json, sys
{code}
print(json.dumps(sorted(sys.modules)))
"""


def modules_after(code: str, *args: str) -> list[str]:
    done = subprocess.run([sys.executable, "-c", PROBE.format(code=code), *args],
                          capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def offenders(modules: list[str], allowed_crawler: set[str]) -> list[str]:
    heavy = [m for m in modules if m.split(".")[0] in HEAVY]
    crawling = [m for m in modules if m.startswith("busca.crawler.")
                and m not in allowed_crawler]
    return heavy + crawling


def test_import_cli_loads_no_crawler_nor_heavy_libraries():
    modules = modules_after("import busca.cli")
    assert "busca.cli" in modules
    # the crawl command's option defaults are plain constants of a module without imports
    assert offenders(modules, {"busca.crawler.defaults"}) == []


def test_lexical_search_loads_only_the_document_store(tmp_path):
    home = tmp_path / "home"
    docs = tmp_path / "docs.jsonl"
    docs.write_text("\n".join(json.dumps({"url": f"u{i}", "title": "", "text": text}) for i, text
                              in enumerate(["o gato subiu no telhado", "prazo do boleto",
                                            "o rato e o queijo"])), encoding="utf-8")
    for command in (["add", str(docs)], ["index"]):
        subprocess.run([sys.executable, "-m", "busca.cli", "--home", str(home), *command],
                       check=True, capture_output=True)
    run_search = ("from busca.cli import cli\n"
                  "try:\n    cli(sys.argv[1:], obj={})\nexcept SystemExit as e:\n"
                  "    assert not e.code, e.code")
    for method in ("tfidf", "bm25"):
        modules = modules_after(run_search, "--home", str(home), "search", "gato",
                                "--method", method)
        # documents and chunk sources are read through the store; nothing that fetches
        assert offenders(modules, {"busca.crawler.defaults", "busca.crawler.store"}) == [], method
        # no busca serve runs for this home: no HTTP client either (serve/client.py)
        assert [m for m in modules if m.split(".")[0] == "http"] == [], method


def test_the_crawler_face_still_gives_functions_not_modules():
    import busca.crawler.crawl  # noqa: F401  (a submodule named like the face's function)
    assert callable(crawler.crawl) and crawler.crawl.__module__ == "busca.crawler.crawl"
    assert crawler.events.__name__ == "busca.crawler.events"
    assert "crawl" in dir(crawler)


_STOPPED_WHILE_LOADING = """
import sys
class CtrlC:  # Ctrl-C lands while the command line's modules load
    def find_spec(self, name, path=None, target=None):
        if name == "busca.cli":
            raise KeyboardInterrupt
sys.meta_path.insert(0, CtrlC())
from busca.entry import main
main()
"""


def test_ctrl_c_while_the_command_line_loads_is_one_line():
    """A Ctrl-C in the first tenths of a second of any command (while `busca.cli` imports)
    printed Python's traceback: the console script's entry catches it, one line, exit 130."""
    import tomllib
    from pathlib import Path

    import busca

    project = tomllib.loads((Path(busca.__file__).parent / "pyproject.toml").read_text("utf-8"))
    assert project["project"]["scripts"]["busca"] == "busca.entry:main"
    done = subprocess.run([sys.executable, "-c", _STOPPED_WHILE_LOADING],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 130 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.strip().splitlines() == [
        "Error: interrupted while busca was starting; nothing was done"]
    modules = modules_after("import busca.entry")
    assert "busca.cli" not in modules and offenders(modules, set()) == []
