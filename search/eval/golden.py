"""Golden sets: labelled questions, read from the seed's JSON, JSONL or a BEIR folder.

- JSON: a list of objects `{"pergunta": "...", "trecho": "..." | null}` (the seed's format),
  with optional `"url"` and `"id"`; English keys `question`, `answer` or `passage`, `url`.
  Any other key with a plain value (`"tipo": "parafrase"`) is kept as a tag.
- JSONL: one such object per line.
- BEIR folder: `queries.jsonl` (`_id`, `text`, other plain keys kept as tags) and `qrels/<split>.tsv` (query id, corpus id,
  score); the corpus ids are document ids: a corpus line's "url", else its "_id" (`busca add
  corpus.jsonl` reads a BEIR corpus as distributed).

A question whose trecho is null, with no URL (and no qrels), is unanswerable; an item with
no trecho key and no URL is an error (a misspelt key would make it unanswerable unseen).
"""

from __future__ import annotations

import hashlib
import json
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path

from ...errors import BuscaError
from ...index.text.analyzers import lone_surrogate

QUESTION_KEYS = ("pergunta", "question", "query")
TRECHO_KEYS = ("trecho", "answer", "passage")
SPLIT = "test"


class GoldenError(BuscaError, ValueError):
    """A golden set that cannot be read, with the place to fix."""


@dataclass(frozen=True)
class Question:
    """One labelled question; `qrels` (document URL -> grade) only for BEIR sets."""

    id: str
    text: str
    trecho: str | None = None
    url: str | None = None
    qrels: dict[str, int] = field(default_factory=dict, compare=False)
    tags: dict[str, str] = field(default_factory=dict, compare=False)

    @property
    def answerable(self) -> bool:
        return self.trecho is not None or self.url is not None or bool(self.qrels)


@dataclass(frozen=True)
class Golden:
    """A loaded golden set: questions in file order, where they came from, its format."""

    path: str
    kind: str  # "json", "jsonl" or "beir"
    questions: tuple[Question, ...]
    corpus: str | None = None  # a BEIR folder's corpus.jsonl, if present

    @property
    def answerable(self) -> list[Question]:
        return [q for q in self.questions if q.answerable]

    @property
    def unanswerable(self) -> list[Question]:
        return [q for q in self.questions if not q.answerable]


def load_golden(path: str | Path, *, split: str | None = None) -> Golden:
    """The golden set at `path`: a BEIR folder (judged by its qrels/`split`.tsv, default
    SPLIT), a .jsonl file or a JSON list (GoldenError with a `split` other than SPLIT: it
    would be ignored)."""
    path = Path(path)
    if path.is_dir():
        return _load_beir(path, split or SPLIT)
    if split not in (None, SPLIT):
        raise GoldenError(f"{path}: --split {split} chooses a BEIR folder's qrels, and this"
                          " golden set is a file: leave --split out, or give a BEIR folder")
    text = _read(path)
    if not text.strip():
        raise GoldenError(f"{path}: the file is empty; write a JSON list of questions like "
                          '[{"pergunta": "…", "trecho": "…"}]')
    if path.suffix.lower() == ".jsonl":
        if text.lstrip().startswith("["):
            raise GoldenError(f"{path}: holds a JSON list, and a .jsonl file holds one object"
                              " per line: name the file .json, or write one object per line")
        items = [(f"{path}:{n}", _parse(line, f"{path}", n))  # JSONL: \n ends a line
                 for n, line in enumerate(text.split("\n"), start=1) if line.strip()]
        kind = "jsonl"
    else:
        try:
            data = _parse(text, str(path), 0)
        except GoldenError:
            if _objects_per_line(text):
                raise GoldenError(f"{path}: holds one JSON object per line (JSONL): name the"
                                  " file .jsonl, or put the objects in a JSON list, [ … ],"
                                  " with a comma between them") from None
            raise
        if not isinstance(data, list):
            raise GoldenError(f'{path}: expected a JSON list of {{"pergunta": …, "trecho": …}}'
                              f" objects, found {type(data).__name__}")
        items = [(f"{path} item {n}", item) for n, item in enumerate(data, start=1)]
        kind = "json"
    questions = [_question(where, _whole(where, item)) for where, item in items]
    return Golden(str(path), kind, _checked(questions, path))


def _objects_per_line(text: str) -> bool:
    """Whether `text` is JSONL: two or more lines, each one JSON object."""
    lines = [line for line in text.split("\n") if line.strip()]
    try:
        return len(lines) > 1 and all(isinstance(json.loads(line), dict) for line in lines)
    except json.JSONDecodeError:
        return False


def _whole(where: str, item):
    """`item` when every text in it can be written as UTF-8: a lone surrogate (a "\\ud800"
    escape without its pair) is GoldenError, not a traceback when the run is saved."""
    lone = lone_surrogate(item)
    if lone is not None:
        raise GoldenError(f"{where}: holds a lone surrogate ({lone!r}): escape characters as"
                          " valid UTF-16 pairs, or write them as UTF-8")
    return item


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise GoldenError(f"{path}: no such file or folder") from None
    except UnicodeDecodeError as e:
        raise GoldenError(_not_utf8(path, e)) from None
    except OSError as e:
        raise GoldenError(f"{path}: cannot read it ({e})") from None


def _not_utf8(path: Path, error: UnicodeDecodeError) -> str:
    """Where the first byte that is not UTF-8 is (line:column), and how to convert the file
    (a spreadsheet's export is often Latin-1 or Windows-1252)."""
    data, fixed = error.object, f"{path.stem}-utf8{path.suffix}"
    if data[:2] in (b"\xff\xfe", b"\xfe\xff"):
        return (f"{path}: is UTF-16 text, not UTF-8: save the file as UTF-8 (iconv -f utf-16"
                f" -t utf-8 {path} > {fixed})")
    before = data[:error.start]
    line = before.count(b"\n") + 1
    start = before[before.rfind(b"\n") + 1:].decode("utf-8", "replace").lstrip("\ufeff")
    return (f"{path}:{line}:{len(start) + 1}: byte 0x{data[error.start]:02x} is not UTF-8:"
            f" save the file as UTF-8 (from Latin-1: iconv -f latin1 -t utf-8 {path} >"
            f" {fixed})")


def _parse(text: str, where: str, line: int):
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        comma = _trailing_comma(text, e.pos)
        if comma is None:
            raise GoldenError(f"{where}:{line or e.lineno}:{e.colno}: invalid JSON ({e.msg}"
                              f"{_jsonl_comma(text, e.pos)})") from None
        row, col = text.count("\n", 0, comma) + 1, comma - text.rfind("\n", 0, comma)
        raise GoldenError(f"{where}:{line or row}:{col}: invalid JSON (a comma before"
                          f" '{text[comma + 1:].lstrip()[0]}' ends no item; remove the"
                          " trailing comma)") from None


def _trailing_comma(text: str, at: int) -> int | None:
    """Where the comma is when the JSON error at `at` is a comma right before `]` or `}`
    (JSON allows no comma after the last item, as a hand-edited list often has): Python 3.13
    stops at the comma, 3.11 and 3.12 at the bracket after it."""
    if text[at:at + 1] == "," and text[at + 1:].lstrip()[:1] in ("]", "}"):
        return at
    before = text[:at].rstrip()
    if text[at:at + 1] in ("]", "}") and before.endswith(","):
        return len(before) - 1
    return None


def _jsonl_comma(text: str, at: int) -> str:
    """A hint when a JSONL line ended like an item of a list."""
    return ": a JSONL line ends without a comma; remove it" if text[at:].strip() == "," else ""


def _question(where: str, item) -> Question:
    from ...crawler.store import plain  # here: the command line loads no crawler module

    if not isinstance(item, dict):
        raise GoldenError(f'{where}: expected an object like {{"pergunta": …, "trecho": …}}')
    text = _first(item, QUESTION_KEYS)
    if not isinstance(text, str) or not text.strip():
        keys = "" if any(k in item for k in QUESTION_KEYS) else f" (its keys: {', '.join(item)})"
        raise GoldenError(f'{where}: needs a non-empty "pergunta" (or "question") string'
                          f"{keys}")
    trecho = _first(item, TRECHO_KEYS)
    # the key named in a message: the one the item has, else the language of its question's
    key = next((k for k in TRECHO_KEYS if k in item),
               TRECHO_KEYS[0] if QUESTION_KEYS[0] in item else "answer")
    if not any(k in item for k in TRECHO_KEYS) and item.get("url") is None:
        # left out or misspelt ("trexo", "resposta"), it made the question unanswerable
        raise GoldenError(f'{where}: has no "{key}" (its keys: {", ".join(item)}); write the'
                          " passage that answers it (copied from the document, word for"
                          f' word), or "{key}": null for a question the site cannot answer')
    if trecho is not None and not isinstance(trecho, str):
        raise GoldenError(f'{where}: "{key}" must be a string or null, '
                          f"not {type(trecho).__name__}")
    if trecho is not None and not plain(trecho).strip():
        raise GoldenError(f'{where}: "{key}" is empty; fill it in, or use null for a '
                          "question the site cannot answer")
    url = item.get("url")
    if isinstance(url, list):
        raise GoldenError(f'{where}: "url" names one document (the one its trecho is quoted'
                          " from); for a question that several documents answer, give a BEIR"
                          " folder, whose qrels judge as many as you like (docs/eval.md)")
    if url is not None and (not isinstance(url, str) or not url.strip()):
        raise GoldenError(f'{where}: "url" must be a non-empty string or null')
    qid = item.get("id")
    if qid is not None and (not isinstance(qid, (str, int, float)) or isinstance(qid, bool)
                            or not str(qid).strip()):
        raise GoldenError(f'{where}: "id" must be a non-empty string or number')
    tags = _tags(item, (*QUESTION_KEYS, *TRECHO_KEYS, "url", "id"))
    text = unicodedata.normalize("NFC", text) if text else text
    trecho = plain(trecho) if trecho else trecho  # as documents are stored: NFC, no soft hyphen
    return Question(str(qid).strip() if qid is not None else _auto_id(text), text.strip(),
                    trecho.strip() if trecho else None, url.strip() if url else None,
                    tags=tags)


def _tags(item: dict, known: tuple[str, ...]) -> dict[str, str]:
    """Every other key with a plain value (`"tipo": "parafrase"`), as NFC text (a Mac's
    decomposed "paráfrase" is the same slice as anyone else's)."""
    return {unicodedata.normalize("NFC", k): unicodedata.normalize("NFC", str(v))
            for k, v in item.items() if k not in known and isinstance(v, (str, int, float, bool))}


def _first(item: dict, keys: tuple[str, ...]):
    return next((item[k] for k in keys if k in item), None)


def _auto_id(text: str) -> str:
    """A stable id from the question text, so reordering the file keeps run comparisons."""
    return "q" + hashlib.sha256(" ".join(text.split()).encode("utf-8")).hexdigest()[:10]


def _checked(questions: list[Question], path: Path) -> tuple[Question, ...]:
    if not questions:
        raise GoldenError(f"{path}: the golden set is empty; add questions like "
                          '{"pergunta": "…", "trecho": "…"}')
    seen: dict[str, int] = {}
    asked: dict[str, int] = {}  # the text of a question without an id, case and spacing aside
    for n, q in enumerate(questions, start=1):
        auto = q.id == _auto_id(q.text)
        wording = " ".join(q.text.split()).casefold()
        if auto and wording in asked:
            raise GoldenError(f"{path}: items {asked[wording]} and {n} ask the same question"
                              f" ({q.text!r}): keep one of them")
        if q.id in seen:
            raise GoldenError(f"{path}: items {seen[q.id]} and {n} have the same id {q.id!r}"
                              " (questions without an id get one from their text)")
        seen[q.id] = n
        if auto:
            asked[wording] = n
    return tuple(questions)


# --- BEIR ------------------------------------------------------------------------------

def _load_beir(folder: Path, split: str) -> Golden:
    queries = folder / "queries.jsonl"
    if not queries.is_file():
        raise GoldenError(f"{folder}: a BEIR folder needs queries.jsonl and qrels/{split}.tsv")
    qrels = _read_qrels(_qrels_file(folder, split))
    texts, tags = {}, {}
    lines: dict[str, int] = {}
    for n, line in enumerate(_read(queries).split("\n"), start=1):  # JSONL: \n ends a line
        if line.strip():
            item = _whole(f"{queries}:{n}", _parse(line, str(queries), n))
            if not isinstance(item, dict) or not isinstance(item.get("text"), str) \
                    or "_id" not in item:
                raise GoldenError(f'{queries}:{n}: expected {{"_id": …, "text": …}}')
            qid = str(item["_id"])
            if qid in lines:
                raise GoldenError(f"{queries}:{n}: the _id {qid!r} of line {lines[qid]} again:"
                                  " give each query its own _id")
            lines[qid] = n
            texts[qid] = unicodedata.normalize("NFC", item["text"])
            tags[qid] = _tags(item, ("_id", "text"))
    missing = [q for q in qrels if q not in texts]
    if missing:
        raise GoldenError(f"{folder}: qrels name {len(missing)} queries that queries.jsonl"
                          f" lacks (first: {missing[0]!r})")
    blank = [q for q in qrels if not texts[q].strip()]
    if blank:
        raise GoldenError(f"{queries}:{lines[blank[0]]}: the query {blank[0]!r} has no text,"
                          " yet the qrels judge it: write its text, or drop its qrels lines")
    questions = [Question(qid, texts[qid].strip(), qrels=docs, tags=tags[qid])
                 for qid, docs in qrels.items()]
    corpus = folder / "corpus.jsonl"
    return Golden(str(folder), "beir", _checked(questions, folder),
                  str(corpus) if corpus.is_file() else None)


def _qrels_file(folder: Path, split: str) -> Path:
    wanted = folder / "qrels" / f"{split}.tsv"
    if wanted.is_file():
        return wanted
    found = sorted((folder / "qrels").glob("*.tsv"))
    if len(found) == 1 and split == SPLIT:  # a split asked for by name is that split
        return found[0]
    names = ", ".join(p.name for p in found) or "none"
    hint = f": choose one with --split {found[0].stem}" if found else \
        ": a BEIR folder holds qrels/test.tsv (query-id, corpus-id, score)"
    raise GoldenError(f"{folder}: no qrels/{split}.tsv (found: {names}){hint}")


def _read_qrels(path: Path) -> dict[str, dict[str, int]]:
    qrels: dict[str, dict[str, int]] = {}
    graded: dict[tuple[str, str], tuple[int, int]] = {}  # (query, doc) -> (line, grade)
    for n, line in enumerate(_read(path).splitlines(), start=1):
        cells = line.split("\t") if "\t" in line else line.split()
        if not cells or not line.strip():
            continue
        if n == 1 and not cells[-1].strip().lstrip("-").isdigit():
            continue  # header: query-id corpus-id score
        if len(cells) not in (3, 4) or not cells[-1].strip().lstrip("-").isdigit():
            raise GoldenError(f"{path}:{n}: expected query-id, corpus-id and an integer score")
        qid, doc, grade = cells[0].strip(), cells[-2].strip(), int(cells[-1])
        first, before = graded.setdefault((qid, doc), (n, grade))
        if before != grade:  # trec_eval and ranx would take the last line, busca the first
            raise GoldenError(f"{path}:{n}: {qid} {doc} graded {grade} here and {before} on"
                              f" line {first}: keep one line per query and document")
        if grade > 0:
            qrels.setdefault(qid, {})[doc] = grade
    if not qrels:
        raise GoldenError(f"{path}: no relevant document in the qrels")
    return qrels
