"""Judge a golden set against an index's chunks and rank every question with each method.

Relevance: with a trecho, a chunk is relevant if its text contains the trecho, whitespace
collapsed on both sides (only chunks of `url` if the question names one); with only a URL,
every chunk of that document; BEIR qrels are per document (a ranking of chunks becomes a
ranking of documents, each at its best chunk). A URL names the indexed document stored under
any spelling of it (crawler/urls.py `doc_key`: /ação/ is /a%C3%A7%C3%A3o/). Reusable entry
point: `rank_questions`.
"""

from __future__ import annotations

import re
import time
import unicodedata
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from urllib.parse import urlunsplit

import numpy as np

from ...crawler.store import Document
from ...crawler.urls import doc_key, normalize, web_parts
from ...index.text.chunking import chunk_with, chunker_label
from ...index.text.chunks import ChunkRow
from ...index.dense.encoders import THREADS
from ...index.lexical.lexical import NoSearchableTerms
from ..hits import StaleIndex  # re-exported: raised here and by hits.hits_for
from ..scorers import rank, scorer
from .encoding import share_query_vectors
from .golden import Golden, Question
from .metrics import Outcome

DEPTH = 100  # hits kept per question: first relevant ranks beyond it count as not found

Ranker = Callable[[str], tuple[np.ndarray, np.ndarray]]  # query -> (chunk ids, scores)
Progress = Callable[[str, int, int], None]


@dataclass(frozen=True)
class ChunkTable:
    """The chunks of one index (chunk id = position in these tuples) and their documents."""

    label: str
    chunker: dict
    urls: tuple[str, ...]
    positions: tuple[int, ...]
    starts: tuple[int, ...]
    ends: tuple[int, ...]
    documents: Mapping[str, str]  # url -> text

    def text(self, chunk_id: int) -> str:
        return self.documents[self.urls[chunk_id]][self.starts[chunk_id]:self.ends[chunk_id]]

    def name(self, chunk_id: int) -> str:
        return f"{self.urls[chunk_id]}#{self.positions[chunk_id]}"

    def rows(self) -> Iterator[ChunkRow]:
        """The table as a build's chunk rows (chunk id = position in the table)."""
        for i, url in enumerate(self.urls):
            yield ChunkRow(i, url, self.positions[i], self.starts[i], self.ends[i])


@dataclass(frozen=True)
class Judged:
    """A question with its relevant units: chunk ids (level "chunk") or URLs ("document")."""

    question: Question
    gains: Mapping[int | str, float]
    level: str
    # relevant documents of its qrels that the index lacks: never found, yet in the ideal
    # order of nDCG (as trec_eval and BEIR count them), so a missing one does not flatter it
    unindexed: Mapping[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class LabelProblem:
    """A labelled question no chunk can answer, and why."""

    question: Question
    reason: str
    split_across: int = 0  # chunks its first occurrence in a document spreads over
    partial: bool = False  # some of its relevant documents are indexed: it does not score 0


@dataclass(frozen=True)
class Judgement:
    """A golden set judged against one chunk table."""

    items: tuple[Judged, ...]
    problems: tuple[LabelProblem, ...]
    found_in: Mapping[str, int]  # question id -> number of chunks holding its trecho


def collapse(text: str) -> str:
    """Runs of whitespace become one space; no space at the ends."""
    return " ".join(text.split())


def chunk_table(index, store) -> ChunkTable:
    """The chunks of the live index with their documents; StaleIndex if the store moved on."""
    rows = index.chunks()
    docs = {d.url: d for d in store.documents()}
    stale = {r.url for r in rows if r.url not in docs
             or (r.doc_sha256 and docs[r.url].sha256 and r.doc_sha256 != docs[r.url].sha256)}
    if stale or len(rows) != index.manifest.chunks:
        many = "some documents" if not stale else (
            "1 document" if len(stale) == 1 else f"{len(stale)} documents")
        raise StaleIndex(f"{many} changed or vanished since the index was built — run"
                         ' "busca index" before "busca eval"')
    chunker = index.manifest.chunker
    added = _added(docs, {r.url for r in rows}, chunker)
    if added:  # a label in one would read "check the spelling", its miss the index's fault
        raise StaleIndex(f"{len(added)} document(s) added since the index was built"
                         f' ({added[0]}{", …" if len(added) > 1 else ""}) are not in it —'
                         ' run "busca index" before "busca eval"')
    return ChunkTable(_label(chunker), chunker, tuple(r.url for r in rows),
                      tuple(r.position for r in rows), tuple(r.start for r in rows),
                      tuple(r.end for r in rows), {u: docs[u].text for u in {r.url for r in rows}})


def _added(docs: Mapping[str, Document], indexed: set[str], chunker: dict) -> list[str]:
    """URLs of the stored documents the build lacks that its chunker would cut into windows
    (one with no word gives none, and is never indexed)."""
    added = []
    for url, doc in docs.items():
        if url not in indexed:
            headings = (doc.meta or {}).get("headings") if isinstance(doc.meta, dict) else None
            if chunk_with(chunker, doc.text, headings or ()):
                added.append(url)
    return added


def chunk_documents(documents: Iterable[Document], chunker: dict) -> tuple[ChunkTable, list[str]]:
    """Chunk documents with a chunker dict: the table and the chunk texts to index."""
    urls, positions, starts, ends, texts, bodies = [], [], [], [], [], {}
    for doc in documents:
        bodies[doc.url] = doc.text
        headings = (doc.meta or {}).get("headings") if isinstance(doc.meta, dict) else None
        for chunk in chunk_with(chunker, doc.text, headings or ()):
            urls.append(doc.url)
            positions.append(chunk.position)
            starts.append(chunk.start)
            ends.append(chunk.end)
            texts.append(chunk.text)
    table = ChunkTable(_label(chunker), chunker, tuple(urls), tuple(positions), tuple(starts),
                       tuple(ends), bodies)
    return table, texts


def _label(chunker: dict) -> str:
    try:
        return chunker_label(chunker)
    except KeyError:
        return str(chunker.get("kind", "?"))


# --- relevance ---------------------------------------------------------------------------

def judge(golden: Golden, table: ChunkTable) -> Judgement:
    """Relevant units of every question, plus the labelled questions no chunk answers."""
    texts = [collapse(table.text(i)) for i in range(len(table.urls))]
    offsets = np.cumsum([0] + [len(t) + 1 for t in texts])[:-1]
    haystack = "\n".join(texts)  # collapsed text has no newline, so no match spans two chunks
    by_url: dict[str, list[int]] = {}
    for i, url in enumerate(table.urls):
        by_url.setdefault(url, []).append(i)
    indexed = _Spellings(by_url)
    items, problems, found_in = [], [], {}
    for q in golden.questions:
        judged, problem = _judge_one(q, table, haystack, offsets, by_url, indexed)
        items.append(judged)
        if problem:
            problems.append(problem)
        if q.trecho is not None:
            found_in[q.id] = len(judged.gains)
    return Judgement(tuple(items), tuple(problems), found_in)


def per_document(judgement: Judgement, table: ChunkTable) -> Judgement:
    """The same relevance one level up: a question's relevant units become the documents of
    its relevant chunks, and a ranking of chunks is read as a ranking of documents."""
    items = tuple(j if j.level == "document" else
                  Judged(j.question, {table.urls[i]: 1.0 for i in j.gains}, "document")
                  for j in judgement.items)
    return Judgement(items, judgement.problems, judgement.found_in)


class _Spellings:
    """The indexed URL a golden set's URL names: itself, or the one stored under another
    spelling of it (`doc_key`); for one the index lacks, a near indexed URL to name."""

    def __init__(self, by_url: Mapping[str, list[int]]):
        self.urls = by_url
        self.keys: dict[str, str] = {}
        for url in by_url:
            self.keys.setdefault(doc_key(url), url)
        self._loose: dict[str, str] | None = None

    def __call__(self, url: str) -> str | None:
        return url if url in self.urls else self.keys.get(doc_key(url))

    def near(self, url: str) -> str | None:
        """The indexed URL that differs from `url` only by what the store keeps apart (the
        case of the host, http for https, a trailing slash) or a copy from a browser's bar
        adds (a #fragment, utm_* parameters, no scheme), if one does."""
        if self._loose is None:
            self._loose = {}
            for indexed in self.urls:
                self._loose.setdefault(_loose(indexed), indexed)
        return self._loose.get(_loose(url))


def _loose(url: str) -> str:
    if "://" not in url and re.match(r"[\w.-]+/", url):
        url = "https://" + url  # "site.example/page", as typed without its scheme
    parts = web_parts(doc_key(url))
    if parts is None:
        return doc_key(url)
    try:  # host lowercased, the fragment and campaign parameters dropped
        parts = web_parts(normalize(url)) or parts
    except ValueError:
        pass
    return urlunsplit(parts._replace(scheme="https", path=parts.path.rstrip("/")))


def _judge_one(q: Question, table: ChunkTable, haystack: str, offsets, by_url,
               indexed: _Spellings):
    if q.qrels:
        named = {u: indexed(u) for u in q.qrels}
        gains: dict[str, float] = {}
        for u, g in q.qrels.items():
            if named[u]:
                gains[named[u]] = max(float(g), gains.get(named[u], float(g)))
        unindexed = {u: float(g) for u, g in q.qrels.items() if not named[u]}
        judged = Judged(q, gains, "document", unindexed)
        if not gains:
            return judged, LabelProblem(
                q, "none of its relevant documents is in the index (busca add the corpus)")
        if unindexed:
            return judged, LabelProblem(
                q, f"{len(unindexed)} of its {len(q.qrels)} relevant documents are not in the"
                f" index ({next(iter(unindexed))}{', …' if len(unindexed) > 1 else ''}): never"
                " found, they still count in its ideal nDCG", partial=True)
        return judged, None
    if q.trecho is None and q.url is None:
        return Judged(q, {}, "chunk"), None
    url = indexed(q.url) if q.url is not None else None
    if q.url is not None and url is None:
        near = indexed.near(q.url)
        return Judged(q, {}, "chunk"), LabelProblem(
            q, f"its url {q.url} is not in the index" + (f"; it has {near}" if near else ""))
    if q.trecho is None:
        return Judged(q, {i: 1.0 for i in by_url[url]}, "chunk"), None
    ids = _containing(haystack, offsets, collapse(q.trecho))
    if url is not None:
        ids = [i for i in ids if table.urls[i] == url]
    gains = {i: 1.0 for i in ids}
    return Judged(q, gains, "chunk"), (None if gains else _diagnose(q, table, by_url, url))


def _containing(haystack: str, offsets: np.ndarray, needle: str) -> list[int]:
    """Ids of the chunks whose collapsed text contains `needle`."""
    ids = []
    at = haystack.find(needle)
    while at >= 0:
        chunk = int(np.searchsorted(offsets, at, side="right")) - 1
        ids.append(chunk)
        if chunk + 1 >= len(offsets):
            break
        at = haystack.find(needle, int(offsets[chunk + 1]))
    return ids


def _diagnose(q: Question, table: ChunkTable, by_url, url: str | None) -> LabelProblem:
    """Why no chunk holds `q`'s trecho (`url`: the indexed spelling of its url)."""
    pattern = r"\s+".join(re.escape(w) for w in q.trecho.split())
    urls = [url] if url else list(by_url)
    for url in urls:
        match = re.search(pattern, table.documents[url])
        if match:
            a, b = match.span()
            spread = sum(1 for i in by_url[url] if table.starts[i] < b and table.ends[i] > a)
            if spread > 1:
                return LabelProblem(q, f"split across {spread} chunks of {url}", spread)
            return LabelProblem(q, f"occurs in {url} but in no chunk", spread)
    for url in urls:
        match = re.search(pattern, table.documents[url], re.IGNORECASE)
        if match:
            return LabelProblem(q, f"occurs in {url} only with other capital letters, as"
                                f" {_as_written(match)}")
    folded = r"\s+".join(re.escape(_unaccented(w)) for w in q.trecho.split())
    for url in urls:  # typed without accents (or with others): positions are kept by the fold
        match = re.search(folded, _unaccented(table.documents[url]), re.IGNORECASE)
        if match:
            return LabelProblem(q, f"occurs in {url} only with other accents, as"
                                f" {_as_written(match, table.documents[url])}")
    plain = r"\s+".join(re.escape(_plain(w)) for w in q.trecho.split())
    for url in urls:  # ' and " typed for the page's ’ and “ ”, - for –
        match = re.search(plain, _plain(table.documents[url]), re.IGNORECASE)
        if match:
            return LabelProblem(q, f"occurs in {url} only with other quotation marks or"
                                f" dashes, as {_as_written(match, table.documents[url])}")
    if q.url:  # quoted right, under another page's url
        other = next((u for u in by_url if re.search(pattern, table.documents[u])), None)
        if other:
            return LabelProblem(q, f"its trecho occurs in {other}, not in its url {q.url}:"
                                " correct the url, or leave it out")
    scope = f"document {q.url}" if q.url else "indexed document"
    return LabelProblem(q, f"its trecho occurs in no {scope}: check the spelling (a trecho,"
                        " or answer, is a quote: words copied from the document)")


def _unaccented(text: str) -> str:
    """`text` with each character as its base letter (ç → c, Á → A): one character for one,
    so a match's span is the same in `text`."""
    return "".join(unicodedata.normalize("NFD", c)[0] for c in text)


_TYPOGRAPHIC = str.maketrans("‘’‚‛′“”„‟″«»–—‐‑‒−", "'" * 5 + '"' * 7 + "-" * 6)


def _plain(text: str) -> str:
    """`_unaccented(text)` with typographic quotes, apostrophes and dashes as the keyboard's
    ' " -: one character for one, so a match's span is the same in `text`."""
    return _unaccented(text).translate(_TYPOGRAPHIC)


def _as_written(match: re.Match, text: str | None = None) -> str:
    """The document's own words where `match` fell (of `text` when the match was in a folded
    copy of it), quoted, to copy into the label."""
    written = collapse((match.string if text is None else text)[match.start():match.end()])
    return repr(written if len(written) <= 80 else written[:79] + "…")


# --- ranking -------------------------------------------------------------------------------

def index_rankers(index, methods: Iterable[str], *, depth: int = DEPTH,
                  threads: int = THREADS, allowed=None, fusion=None) -> dict[str, Ranker]:
    """A ranking function per method of a loaded index (top `depth` chunk ids and scores,
    among the chunks of the mask `allowed` when given; fused methods by the FusionSettings
    `fusion`, default the build's); dense models encode each question once (`threads` each),
    whichever methods use them."""
    methods = list(methods)
    share_query_vectors(index, methods, threads=threads, fusion=fusion)
    return {m: _ranker(index, m, depth, allowed, fusion) for m in methods}


def _ranker(index, method: str, depth: int, allowed=None, fusion=None) -> Ranker:
    scorer(index, method, fusion)  # fail early, listing the methods the index has
    return lambda query: rank(index, query, method=method, k=depth, fusion=fusion,
                              allowed=allowed)


def reranked(ranker: Ranker, table: ChunkTable, rerank) -> Ranker:
    """`ranker` whose top `rerank.top` chunks a re-ranker (search.rerank.Reranker) re-scores:
    the ranking is those chunks, by the re-ranker's score."""
    def ranked(query: str) -> tuple[np.ndarray, np.ndarray]:
        ids = [int(i) for i in ranker(query)[0][:rerank.top]]
        scores = rerank.client.scores(query, [table.text(i) for i in ids])
        order = sorted(range(len(ids)), key=lambda i: -scores[i])
        return (np.array([ids[i] for i in order], np.int64),
                np.array([scores[i] for i in order], np.float64))
    return ranked


def rank_questions(judgement: Judgement, table: ChunkTable, rankers: Mapping[str, Ranker], *,
                   depth: int = DEPTH, on_progress: Progress | None = None,
                   latency: dict[str, float] | None = None) -> dict[str, list[Outcome]]:
    """Per method, one Outcome per question (first relevant rank and more), in golden order;
    `latency` gets each method's mean milliseconds of ranking per question."""
    progress = on_progress or (lambda stage, done, total: None)
    runs = {}
    for method, ranker in rankers.items():
        outcomes, seconds = [], 0.0
        for done, judged in enumerate(judgement.items, start=1):
            started = time.perf_counter()
            try:
                ids, scores = ranker(judged.question.text)
            except NoSearchableTerms:
                ids, scores = np.empty(0, np.int64), np.empty(0)
            seconds += time.perf_counter() - started
            outcomes.append(outcome_of(judged, table, ids[:depth], scores[:depth]))
            progress(f"ranking with {method}", done, len(judgement.items))
        runs[method] = outcomes
        if latency is not None:
            latency[method] = round(1000 * seconds / max(len(judgement.items), 1), 2)
    return runs


def outcome_of(judged: Judged, table: ChunkTable, ids, scores) -> Outcome:
    """Score one ranking of chunk ids against the question's relevant units."""
    ids = [int(i) for i in ids]
    scores = [float(s) for s in scores]
    if judged.level == "document":
        units, unit_scores, chunks = _documents(table, ids, scores)
        labels = units
    else:
        units, unit_scores, labels, chunks = ids, scores, [table.name(i) for i in ids], ids
    ranks = [r for r, u in enumerate(units, start=1) if u in judged.gains]
    gains = [judged.gains[units[r - 1]] for r in ranks]
    return Outcome(judged.question.id, tuple(ranks), tuple(gains),
                   tuple(sorted([*judged.gains.values(), *judged.unindexed.values()],
                                reverse=True)),
                   unit_scores[0] if unit_scores else None,
                   unit_scores[ranks[0] - 1] if ranks else None,
                   tuple(labels), tuple(unit_scores), tuple(chunks))


def _documents(table: ChunkTable, ids: list[int], scores: list[float]):
    seen: dict[str, tuple[float, int]] = {}
    for i, s in zip(ids, scores):
        seen.setdefault(table.urls[i], (s, i))
    return list(seen), [s for s, _ in seen.values()], [i for _, i in seen.values()]
