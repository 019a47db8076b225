"""Soak of `busca serve --token` as a RAG retriever over a WordPress site that keeps changing.

    python bench/soak_serve.py --minutes 10 --clients 3 [--dense e5-small|none] [--out DIR]

Starts the bundled fixture WordPress site on 127.0.0.1, crawls it into a fresh home, indexes
it, starts `busca serve --token`, then for --minutes runs --clients threads asking
/api/search, /api/context, /api/compare and the page with the golden Portuguese questions,
while one loop mutates the site (edit, delete, add articles; `busca crawl`) and the store
(POST/DELETE /api/documents) and rebuilds (POST /api/index, CLI `busca index`, both at once).

Counts every non-200 answer (a context 409 below the floor apart), every answer citing a URL
that was not in the store when the request started nor when it ended, every hit whose text is
not the stored text at its offsets (strict when the store did not change during the request,
"racy" otherwise), latency p50/p99 per endpoint; checks /api/stats `pending`, the CLI through
the server and with --no-serve. Everything goes to 127.0.0.1 only; loops are bounded in time.
Prints a JSON summary and writes it to OUT/summary.json (problems in OUT/problems.jsonl).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter, defaultdict
from pathlib import Path

import requests

from busca.fixtures.server import FixtureSite
from busca.index.text.chunking import chunk_text

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cli_errors import guarded, positive_int  # noqa: E402
from machine import machine  # noqa: E402

TOKEN = "soak-token-0123456789abcdef"
CMS = "https://cms.example/"


def golden_questions() -> list[str]:
    import busca
    path = Path(busca.__file__).parent / "fixtures" / "golden" / "golden.json"
    return [q["pergunta"] for q in json.loads(path.read_text("utf-8"))]


class Store:
    """Read-only looks at HOME/busca.db, each in one read transaction (a consistent state)."""

    def __init__(self, home: Path):
        self.uri = f"file:{home / 'busca.db'}?mode=ro"
        self.local = threading.local()

    def db(self) -> sqlite3.Connection:
        if not hasattr(self.local, "db"):
            self.local.db = sqlite3.connect(self.uri, uri=True, timeout=30, isolation_level=None)
        return self.local.db

    def state(self, texts_of=()) -> tuple[bytes, dict[str, str], dict[str, str]]:
        """(version, url -> sha256, url -> text of `texts_of`)."""
        db = self.db()
        for _attempt in range(20):
            try:
                db.execute("BEGIN")
                try:
                    version = bytes(db.execute("SELECT version FROM changes WHERE id = 1").fetchone()[0])
                    shas = dict(db.execute("SELECT url, sha256 FROM documents"))
                    texts = {}
                    for url in texts_of:
                        row = db.execute("SELECT text FROM documents WHERE url = ?", (url,)).fetchone()
                        if row:
                            texts[url] = row[0]
                finally:
                    db.execute("COMMIT")
                return version, shas, texts
            except sqlite3.OperationalError:
                time.sleep(0.05)
        raise RuntimeError("store unreadable")


class Stats:
    def __init__(self, out: Path):
        self.lock = threading.Lock()
        self.latency = defaultdict(list)
        self.status = defaultdict(Counter)
        self.counts = Counter()
        self.problems = open(out / "problems.jsonl", "w", encoding="utf-8")
        self.events = open(out / "events.jsonl", "w", encoding="utf-8")

    def problem(self, kind: str, **data) -> None:
        with self.lock:
            self.counts[kind] += 1
            self.problems.write(json.dumps({"kind": kind, "t": time.time(), **data},
                                           ensure_ascii=False) + "\n")
            self.problems.flush()

    def event(self, kind: str, **data) -> None:
        with self.lock:
            self.counts["event:" + kind] += 1
            self.events.write(json.dumps({"kind": kind, "t": time.time(), **data},
                                         ensure_ascii=False) + "\n")
            self.events.flush()


def percentile(values: list[float], p: float) -> float | None:
    if not values:
        return None
    values = sorted(values)
    return round(values[min(len(values) - 1, int(p / 100 * len(values)))], 1)


# --- what an answer cites ---------------------------------------------------------------------

def cited(endpoint: str, body) -> tuple[set[str], list[tuple[str, int, int, str, str]]]:
    """(URLs cited, (url, start, end, text, kind) pieces to check against the store)."""
    urls, pieces = set(), []
    if endpoint == "search":
        for h in body["hits"]:
            urls.add(h["url"])
            pieces.append((h["url"], h["start"], h["end"], h["text"], "chunk"))
    elif endpoint == "compare":
        for r in body["rows"]:
            urls.add(r["url"])
            pieces.append((r["url"], r["start"], r["end"], r["text"], "chunk"))
        for hits in body["columns"].values():
            for h in hits:
                urls.add(h["url"])
                pieces.append((h["url"], h["start"], h["end"], h["text"], "chunk"))
    elif endpoint == "context":
        for p in body.get("passages") or []:
            urls.add(p["url"])
            for s in p["spans"]:
                pieces.append((p["url"], s["start"], s["end"], s["text"], "span"))
        urls |= set(re.findall(r"\[fonte: ([^\]\s]+)\]", body.get("prompt") or ""))
        urls.discard("URL")
    return urls, pieces


PAGE_LINK = re.compile(r'href="(http[^"]+)"')


def page_cited(html: str, hosts: tuple[str, ...]) -> set[str]:
    import html as h
    return {h.unescape(u) for u in PAGE_LINK.findall(html) if u.startswith(hosts)}


def text_ok(stored: str, start: int, end: int, text: str, kind: str) -> bool:
    if kind == "chunk":
        return text == chunk_text(stored, start, end)
    return text in (stored[start:end], chunk_text(stored, start, end))


# --- clients -----------------------------------------------------------------------------------

def client(n: int, url: str, store: Store, stats: Stats, questions, deadline, hosts):
    rnd = random.Random(n)
    http = requests.Session()
    endpoints = ["search", "context", "compare", "page"]
    methods = stats.methods
    i = n
    while time.monotonic() < deadline:
        endpoint = endpoints[i % 4]
        i += 1
        q = rnd.choice(questions)
        method = rnd.choice(methods)
        v0, shas0, _ = store.state()
        t0 = time.perf_counter()
        try:
            if endpoint == "search":
                r = http.get(url + "api/search", params={"q": q, "method": method, "k": 5}, timeout=120)
            elif endpoint == "context":
                r = http.post(url + "api/context", json={"q": q, "method": method, "k": 3}, timeout=120)
            elif endpoint == "compare":
                r = http.get(url + "api/compare", params={"q": q, "k": 3}, timeout=120)
            else:
                r = http.get(url, params={"q": q, "method": method}, timeout=120)
        except requests.RequestException as e:
            stats.problem("connection error", endpoint=endpoint, q=q, error=str(e))
            continue
        ms = 1000 * (time.perf_counter() - t0)
        with stats.lock:
            stats.latency[endpoint].append(ms)
            stats.status[endpoint][r.status_code] += 1
        if r.status_code != 200:
            body = r.text[:600]
            if endpoint == "context" and r.status_code == 409 and '"answer":null' in r.text.replace(" ", ""):
                stats.problem("409 below the floor (legitimate)", endpoint=endpoint, q=q, body=body)
            else:
                stats.problem(f"HTTP {r.status_code}", endpoint=endpoint, q=q, method=method, body=body)
            continue
        if endpoint == "page":
            urls, pieces = page_cited(r.text, hosts), []
        else:
            urls, pieces = cited(endpoint, r.json())
        v1, shas1, texts = store.state({p[0] for p in pieces})
        strict = v0 == v1
        for u in urls:
            if u not in shas0 and u not in shas1:
                stats.problem("cites a URL removed before the request", endpoint=endpoint, q=q,
                              url=u, strict=strict)
            elif u not in shas0 or u not in shas1:
                stats.problem("racy: cites a URL added/removed during the request",
                              endpoint=endpoint, url=u)
        for u, start, end, text, kind in pieces:
            stored = texts.get(u)
            if stored is None:
                continue  # counted above
            if not text_ok(stored, start, end, text, kind):
                same = shas0.get(u) == shas1.get(u)
                stats.problem("hit text is not the stored text" if (strict or same)
                              else "racy: text changed during the request",
                              endpoint=endpoint, url=u, start=start, end=end, kind=kind,
                              strict=strict, text=text[:120], stored=stored[start:end][:120])
        with stats.lock:
            stats.counts["answers checked"] += 1
            stats.counts["answers checked strictly"] += strict


# --- mutations ----------------------------------------------------------------------------------

def busca(home: Path, *args, env=None, timeout=600):
    started = time.perf_counter()
    p = subprocess.run(["busca", "--home", str(home), *args], capture_output=True, text=True,
                       timeout=timeout, env={**os.environ, **(env or {})})
    return p, time.perf_counter() - started


def post(http, url, path, body, method="POST"):
    r = http.request(method, url + path, json=body, timeout=600,
                     headers={"Authorization": f"Bearer {TOKEN}"})
    return r


def pending(http, url) -> dict:
    return http.get(url + "api/stats", timeout=60).json().get("pending") or {}


def mutator(site: FixtureSite, home: Path, url: str, store: Store, stats: Stats, deadline,
            questions):
    rnd = random.Random(7)
    http = requests.Session()
    spare = []  # articles removed from the site, put back later
    cms = []  # URLs of documents posted through the API
    round_ = 0
    while time.monotonic() < deadline:
        round_ += 1
        # 1. the site: edit two, remove one, add one (or put one back), then crawl
        with site._lock:
            live = [a for a in site.articles]
        edited = rnd.sample(live, 2)
        for a in edited:
            site.edit(a["id"], content=a["content"] + f"<p>Atualização {round_}: o ornitorrinco"
                      f" da rodada {round_} bota ovos às terças-feiras.</p>")
        removed = rnd.choice([a for a in live if a not in edited])
        site.remove(removed["id"])
        spare.append(removed)
        if len(spare) > 3:
            back = spare.pop(0)
            site.articles.append(back)
            site.edit(back["id"])
        new = dict(rnd.choice(live))
        new.update(id=90000 + round_, slug=f"novidade-{round_}",
                   title=f"Novidade {round_}: {new['title']}")
        site.articles.append(new)
        site.edit(new["id"])
        p, s = busca(home, "crawl", site.url, "--rate", "200", "--json")
        stats.event("crawl", round=round_, rc=p.returncode, seconds=round(s, 2),
                    out=p.stdout[-400:], err=p.stderr[-400:])
        if p.returncode:
            stats.problem("crawl failed", round=round_, rc=p.returncode, err=p.stderr[-800:])
        # 2. the CMS webhooks: post two, delete an older one and one crawled page
        docs = [{"url": f"{CMS}pagina-{round_}-{j}", "title": f"Página {round_}.{j}",
                 "text": f"Comunicado {round_}.{j} da coordenação: " + rnd.choice(questions) * 3}
                for j in (1, 2)]
        r = post(http, url, "api/documents", {"documents": docs})
        stats.event("post documents", round=round_, status=r.status_code, body=r.text[:300])
        if r.status_code != 200:
            stats.problem(f"POST /api/documents {r.status_code}", body=r.text[:400])
        cms += [d["url"] for d in docs]
        gone = [cms.pop(0)] if len(cms) > 4 else []
        victim = site.link(rnd.choice(site.articles))
        r = post(http, url, "api/documents", {"urls": gone + [victim]}, method="DELETE")
        stats.event("delete documents", round=round_, status=r.status_code, body=r.text[:300])
        if r.status_code != 200:
            stats.problem(f"DELETE /api/documents {r.status_code}", body=r.text[:400])
        # 3. pending after the mutations
        before = pending(http, url)
        stats.event("pending after mutations", round=round_, pending=before)
        if not (before.get("changed", 0) + before.get("removed", 0)):
            stats.problem("pending did not go up after mutations", round=round_, pending=before)
        # 4. the CLI while documents are pending: through the server, and itself
        cli_check(home, stats, round_, edited[0]["title"] + " ornitorrinco")
        # 5. rebuild: the API, the CLI, or both at once
        kind = ("api", "cli", "both")[round_ % 3]
        if kind == "api":
            r = post(http, url, "api/index", {})
            stats.event("POST /api/index", round=round_, status=r.status_code, body=r.text[:300])
            if r.status_code != 200:
                stats.problem(f"POST /api/index {r.status_code}", body=r.text[:400])
        elif kind == "cli":
            p, s = busca(home, "index", "-q")
            stats.event("busca index", round=round_, rc=p.returncode, seconds=round(s, 2),
                        err=p.stderr[-400:])
            if p.returncode:
                stats.problem("busca index failed", rc=p.returncode, err=p.stderr[-800:])
        else:
            proc = subprocess.Popen(["busca", "--home", str(home), "index", "-q"],
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            time.sleep(rnd.uniform(0.0, 1.0))
            r = post(http, url, "api/index", {})
            out, err = proc.communicate(timeout=600)
            stats.event("both builds", round=round_, api=r.status_code, api_body=r.text[:300],
                        cli=proc.returncode, cli_err=err[-400:])
            if r.status_code not in (200, 409):
                stats.problem(f"concurrent POST /api/index {r.status_code}", body=r.text[:400])
            if r.status_code == 409 and "pid" not in r.text:
                stats.problem("409 of a concurrent build does not name the pid", body=r.text[:400])
            if proc.returncode not in (0, 1):
                stats.problem("concurrent busca index crashed", rc=proc.returncode, err=err[-800:])
            if proc.returncode == 1 and ("Traceback" in err or len(err.strip().splitlines()) > 2):
                stats.problem("concurrent busca index refusal not one clean line", err=err[-800:])
            if r.status_code != 200 and proc.returncode != 0:
                stats.problem("neither concurrent build succeeded", api=r.text[:300], cli=err[-300:])
            if r.status_code == 200 and proc.returncode == 0:
                stats.event("both concurrent builds succeeded (the CLI waited)", round=round_)
        after = pending(http, url)
        stats.event("pending after build", round=round_, pending=after)
        if after.get("changed", 0) + after.get("removed", 0):
            stats.problem("pending not zero after a build", round=round_, pending=after)
        time.sleep(rnd.uniform(0.5, 3.0))
    stats.counts["mutation rounds"] = round_


def cli_check(home: Path, stats: Stats, round_: int, question: str):
    served, _ = busca(home, "search", question, "--json", "-k", "5")
    alone, _ = busca(home, "search", question, "--json", "-k", "5", "--no-serve")
    stats.event("cli search", round=round_, q=question, served_rc=served.returncode,
                served_err=served.stderr[-300:], alone_rc=alone.returncode,
                alone_err=alone.stderr[-300:])
    for name, p in (("served", served), ("no-serve", alone)):
        if p.returncode:
            stats.problem(f"busca search ({name}) exit {p.returncode}", q=question, err=p.stderr[-600:])
    if served.returncode == 0 and alone.returncode == 0:
        a = [json.loads(line) for line in served.stdout.splitlines() if line.strip()]
        b = [json.loads(line) for line in alone.stdout.splitlines() if line.strip()]
        ka = [(h["url"], h["start"], h["text"]) for h in a]
        kb = [(h["url"], h["start"], h["text"]) for h in b]
        if ka != kb:
            stats.problem("busca search through the server differs from --no-serve", q=question,
                          served=[h[:2] for h in ka], alone=[h[:2] for h in kb])
        note = "left out" in served.stderr, "left out" in alone.stderr
        if note[0] != note[1]:
            stats.problem("left-out note differs served vs --no-serve", q=question,
                          served_err=served.stderr[-300:], alone_err=alone.stderr[-300:])
        with stats.lock:
            stats.counts[f"cli left-out note served={note[0]} alone={note[1]}"] += 1
    ctx_s, _ = busca(home, "context", question, "-k", "3")
    ctx_a, _ = busca(home, "context", question, "-k", "3", "--no-serve")
    for name, p in (("served", ctx_s), ("no-serve", ctx_a)):
        if p.returncode not in (0, 1) or "Traceback" in p.stderr:
            stats.problem(f"busca context ({name}) exit {p.returncode}", err=p.stderr[-600:])
    if ("left out" in ctx_s.stderr) != ("left out" in ctx_a.stderr):
        stats.problem("context left-out note differs served vs --no-serve", q=question,
                      served_err=ctx_s.stderr[-300:], alone_err=ctx_a.stderr[-300:])


# --- the run ------------------------------------------------------------------------------------

def positive_minutes(text: str) -> float:
    """`--minutes 0.5`: a positive finite number."""
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive number of minutes")
    return value


def main() -> int:
    ap = argparse.ArgumentParser(description="busca serve while the site changes: failed"
                                 " answers, citations of removed documents, stale text.")
    ap.add_argument("--minutes", type=positive_minutes, default=10)
    ap.add_argument("--clients", type=positive_int, default=3)
    ap.add_argument("--dense", default="e5-small", help="the dense model, or none")
    ap.add_argument("--out", default=None, help="a new folder for the home and the results"
                    " (default: a temporary one, named on stderr)")
    args = ap.parse_args()
    out = Path(args.out or tempfile.mkdtemp(prefix="busca-soak-"))
    out.mkdir(parents=True, exist_ok=args.out is None)
    print(f"{machine()}; {args.clients} clients, {args.minutes:g} min; home and results in"
          f" {out}", file=sys.stderr)
    home = out / "home"
    stats = Stats(out)
    site = FixtureSite().start()
    serve = None
    try:
        p, s = busca(home, "crawl", site.url, "--rate", "200")
        print(f"crawl {p.returncode} in {s:.1f}s: {p.stdout.strip()}", file=sys.stderr)
        extra = ["--dense", args.dense] if args.dense != "none" else []
        p, s = busca(home, "index", "-q", *extra)
        print(f"index {p.returncode} in {s:.1f}s {p.stderr.strip()[-200:]}", file=sys.stderr)
        serve_err = open(out / "serve.err", "w")
        serve = subprocess.Popen(["busca", "--home", str(home), "serve", "--port", "0",
                                  "--token", TOKEN], stdout=subprocess.PIPE, stderr=serve_err,
                                 text=True)
        url = serve.stdout.readline().strip()
        print(f"serving at {url}", file=sys.stderr)
        stats.methods = requests.get(url + "healthz", timeout=30).json()["methods"]
        questions = golden_questions()
        store = Store(home)
        deadline = time.monotonic() + 60 * args.minutes
        hosts = (site.url, CMS)
        threads = [threading.Thread(target=client, args=(n, url, store, stats, questions,
                                                         deadline, hosts)) for n in range(args.clients)]
        threads.append(threading.Thread(target=mutator, args=(site, home, url, store, stats,
                                                              deadline, questions)))
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        final = requests.get(url + "api/stats", timeout=60).json()
    finally:
        if serve is not None:
            serve.terminate()
            try:
                serve.wait(30)
            except subprocess.TimeoutExpired:
                serve.kill()
        site.stop()
    summary = {
        "minutes": args.minutes, "clients": args.clients, "methods": stats.methods,
        "status": {e: dict(c) for e, c in stats.status.items()},
        "latency_ms": {e: {"n": len(v), "p50": percentile(v, 50), "p99": percentile(v, 99)}
                       for e, v in stats.latency.items()},
        "counts": dict(stats.counts),
        "final": {"documents": final.get("documents"), "chunks": final.get("chunks"),
                  "pending": final.get("pending")},
        "serve_exit": serve.returncode if serve else None,
        "serve_tracebacks": (out / "serve.err").read_text().count("Traceback"),
    }
    (out / "summary.json").write_text(json.dumps(summary, indent=1, ensure_ascii=False))
    print(json.dumps(summary, indent=1, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    guarded(main)
