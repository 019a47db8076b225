"""Start the real `busca serve` on 127.0.0.1 in a subprocess and talk to it over HTTP."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

STARTUP = 180  # seconds to wait for the URL line (the dense encoder loads first)


class Server:
    """A running `busca serve --port 0`; `url` is the first line it printed."""

    def __init__(self, home: Path, *args: str):
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        env.pop("BUSCA_TOKEN", None)
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "busca.cli", "--home", str(home), "serve", "--port", "0",
             *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        self.url = self._first_line()
        self.stderr: list[str] = []
        self._drain = threading.Thread(target=self._read_stderr, daemon=True)
        self._drain.start()

    def _first_line(self) -> str:
        line: list[str] = []
        reader = threading.Thread(target=lambda: line.append(self.proc.stdout.readline()),
                                  daemon=True)
        reader.start()
        reader.join(STARTUP)
        if not line or not line[0].startswith("http://127.0.0.1:"):
            self.proc.kill()
            err = self.proc.stderr.read()
            raise RuntimeError(f"busca serve did not print its URL: {line!r}\n{err}")
        return line[0].strip()

    def _read_stderr(self) -> None:
        for text in self.proc.stderr:
            self.stderr.append(text)

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 30) -> int:
        """Send `sig` and wait; the exit code."""
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._drain.join(5)
        return self.proc.returncode

    def __enter__(self) -> Server:
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


def faceted_home(tmp_path: Path) -> Path:
    """A bm25 home of three articles with a `category` (Frete twice, Pagamento), for the
    facets of the page."""
    from click.testing import CliRunner
    from conftest import write_jsonl

    from busca.cli import cli

    docs = [{"url": f"https://a.example/{n}", "title": f"Artigo {n}", "category": category,
             "text": f"O prazo de entrega do artigo {n} é curto."}
            for n, category in enumerate(["Frete", "Frete", "Pagamento"])]
    home = tmp_path / "home"
    for args in (["add", str(write_jsonl(tmp_path / "d.jsonl", docs))],
                 ["index", "-q", "--methods", "bm25"]):
        assert CliRunner().invoke(cli, ["--home", str(home), *args], obj={}).exit_code == 0
    return home
