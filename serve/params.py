"""Request parameters: read, checked against their caps, or BadParameter naming the fix.

Caps (module constants, documented in docs/serve.md): a question of at most MAX_QUERY
characters, k at most MAX_K, at most MAX_DOCUMENTS documents per POST. Each endpoint's
parameters are declared once, as `Field`s (SEARCH, COMPARE, CONTEXT, INDEX, DOCUMENT): the
API reads requests with them and serve/openapi.py writes their JSON schemas from them.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ..corpus import METHOD, SearchSpec, asked, check_hybrid_only, method_names
from ..corpus.specs import HYBRID_OPTIONS, BadSpec, fusion_weights
from ..search.fusion import FUSION, FUSIONS, RRF_K, WINDOW
from ..search.scorers import COMPARE_K
from ..search.context import LANGS, MAX_CHARS as CONTEXT_CHARS, PER_DOC as CONTEXT_PER_DOC
from ..search.filters import BadFilter, parse_filters
from .errors import BadParameter

MAX_QUERY = 1000  # characters of a question
MAX_K = 100
MAX_PER_DOC = 100
MAX_CHARS = 100_000  # context: characters of passage text
MAX_DOCUMENTS = 1000  # documents in one POST /api/documents
MAX_WINDOW = 10_000  # hybrid: top hits of each method that are fused
MAX_FILTERS = 100  # filters of one request (each is checked against every document)
K = SearchSpec.k  # busca search's defaults, written once (corpus/specs.py)


@dataclass(frozen=True)
class Field:
    """One request parameter: how it is read and checked, and what its schema says."""

    name: str
    kind: str  # question, integer, number, flag, method, methods, choice, weights, string,
    #            filters (repeatable)
    doc: str
    default: object = None
    low: int | float | None = None  # an integer's or a number's least value
    high: int | None = None
    choices: tuple[str, ...] = ()
    required: bool = False

    def read(self, raw: object) -> object:
        """The checked value of `raw` (the default when absent), or BadParameter; a method
        name is the library's to check when it runs (it resolves dense:NAME)."""
        kind = self.kind
        if kind == "question":
            return question(raw, self.name)
        if kind == "integer":
            return integer(raw, self.name, default=self.default, low=self.low, high=self.high)
        if kind == "number":
            value = number(raw, self.name, low=self.low)
            return self.default if value is None else value
        if kind == "method":
            return method(raw, default=self.default)
        if kind == "methods":
            return methods(raw)
        if kind == "choice":
            return choice(raw, self.name, self.choices, self.default)
        if kind == "weights":
            return weights(raw)
        if kind == "filters":
            return filters(raw)
        return flag(raw, self.name)  # "flag"

    def schema(self) -> dict:
        """Its JSON schema (a query string's values are these types, written as text)."""
        out: dict = {"description": self.doc}
        out.update(_SCHEMAS.get(self.kind, {"type": "string"}))
        if self.kind == "integer":
            out.update(minimum=self.low, maximum=self.high)
        if self.kind == "number" and self.low is not None:
            out["minimum"] = self.low
        if self.kind == "question":
            out.update(minLength=1, maxLength=MAX_QUERY)
        if self.choices:
            out["enum"] = list(self.choices)
        if self.default is not None:
            out["default"] = self.default
        return out

    def body_schema(self) -> dict:
        """Its schema in a JSON body, where an optional field also takes null, read as absent
        (what Python's None becomes: a client need not drop its unset fields)."""
        out = self.schema()
        if self.required:
            return out
        types = out["type"] if isinstance(out["type"], list) else [out["type"]]
        out["type"] = [*types, "null"]
        if "enum" in out:
            out["enum"] = [*out["enum"], None]
        out["description"] += " null: as absent."
        return out


_SCHEMAS = {"filters": {"type": "array", "items": {"type": "string"},
                        "maxItems": MAX_FILTERS},
            "integer": {"type": "integer"}, "number": {"type": "number"},
            "flag": {"type": "boolean"}, "question": {"type": "string"},
            "groups": {"type": ["array", "string"], "items": {"type": "string"}},
            "meta": {"type": "object"}}


def read(fields: Sequence[Field], data: Mapping) -> dict:
    """Every field's checked value, by name, in the order the fields are declared."""
    return {f.name: f.read(raw(data, f)) for f in fields}


def raw(data: Mapping, field: Field) -> object:
    """A field's raw value: every value of a repeatable one (`filter=` of a query string)."""
    if field.kind == "filters" and hasattr(data, "getlist"):
        return data.getlist(field.name)
    return data.get(field.name)


Q = Field("q", "question", "The question.", required=True)
K_FIELD = Field("k", "integer", "How many hits.", K, 1, MAX_K)
METHOD_FIELD = Field("method", "method", "A method this index has (GET /api/stats lists"
                     " them), or dense:NAME / hybrid:NAME of one of its dense models.", METHOD)
MIN_SCORE = Field("min_score", "number", "The floor (default: the method's calibrated one).")
PER_DOC_FIELD = Field("per_doc", "integer", "At most N windows of one document (0: no limit).",
                      SearchSpec.per_doc, 0, MAX_PER_DOC)
LOG = Field("log", "flag", "Record the question in the query log (default: as the server"
            " was started).")
HYBRID = (Field("fusion", "choice", "hybrid: how the scores are fused.", FUSION,
                choices=FUSIONS),
          Field("window", "integer", "hybrid: top hits of each method that are fused.", WINDOW,
                1, MAX_WINDOW),
          Field("rrf_k", "number", "hybrid: the RRF constant k.", RRF_K, low=0),
          Field("weights", "weights", "hybrid: methods and weights, e.g. bm25=1,dense=0.5."))
SPEC = (METHOD_FIELD, K_FIELD, MIN_SCORE, PER_DOC_FIELD,
        Field("offset", "integer", "Skip the first N hits (the next page).", 0, 0, MAX_K),
        *HYBRID)
RERANK = Field("rerank", "flag", "Re-score the top hits with the server's re-ranker (default:"
               " on when busca serve runs with --rerank; true without it is a 400).")
FILTER = Field("filter", "filters", "Rank only documents that match: FIELD=a,b (one of), !=,"
               " >=, <=, ^= (prefix); repeatable, all must hold (docs/filters.md).")
SEARCH = (Q, *SPEC, LOG, RERANK, FILTER)
COMPARE = (Q, Field("methods", "methods", "Comma-separated methods (default: tfidf, bm25,"
                    " dense, hybrid, those the index has)."),
           Field("k", "integer", "How many hits per method (as busca compare).", COMPARE_K, 1,
                 MAX_K), PER_DOC_FIELD, RERANK, FILTER)
CONTEXT = (Q, K_FIELD, Field("lang", "choice", "Language of the instruction (default: en"
                             " when the index's bm25 analyzer is en, else pt).",
                             choices=LANGS),
           Field("max_chars", "integer", "Characters of passage text at most.", CONTEXT_CHARS,
                 1, MAX_CHARS),
           METHOD_FIELD, MIN_SCORE,
           Field("per_doc", "integer", "At most N windows of one document while other"
                 " documents pass the floor (0: no limit).", CONTEXT_PER_DOC, 0, MAX_PER_DOC),
           *HYBRID, LOG, RERANK, FILTER)
PAGE = (Field("q", "string", "The question (absent: the form alone)."),
        Field("method", "string", "A method this index has, or compare: the methods side by"
              " side (default: hybrid when the index has it, else tfidf)."), K_FIELD, FILTER)
EVAL = (Field("run", "string", "A saved run (default: the newest)."),
        Field("a", "string", "The first system compared."),
        Field("b", "string", "The second system compared."),
        Field("q", "string", "A question's id: both rankings of it."))
INDEX = (Field("size", "integer", "Words per window (default: the build's).", None, 1,
               100_000),
         Field("overlap", "integer", "Words shared by consecutive windows (default: the"
               " build's).", None, 0, 99_999))
DOCUMENT = (Field("url", "string", "The document's URL (its id).", required=True),
            Field("title", "string", "Its title (default: the URL)."),
            Field("text", "string", "Its text.", required=True),
            Field("modified", "string", "When it last changed: ISO 8601 (2024-05-01,"
                  " 2024-05-01T10:00:00Z) or RFC 2822 (Tue, 05 Dec 2023 10:00:00 +0000),"
                  " stored as ISO 8601."),
            Field("groups", "groups", "Who may read it when busca serve runs with --tokens:"
                  " group names, e.g. [\"staff\"] or \"staff,hr\" (absent: the groups its"
                  " stored version has, none for a new document; []: public)."),
            Field("meta", "meta", "Its metadata, which filters and facets read: an object of"
                  " texts, numbers, yes/no and lists of them, e.g. {\"category\": \"RH\"}."))


def search_spec(args: Mapping) -> SearchSpec:
    """The options of GET /api/search, those of `busca search` (hybrid's fusion included)."""
    hybrid_only(args)
    return SearchSpec(**read(SPEC, args), filters=FILTER.read(raw(args, FILTER)))


def hybrid_only(args: Mapping) -> None:
    """BadParameter for hybrid's parameters sent with a method that fuses nothing (GET
    /api/search, POST /api/context): the library's rule (hybrid:NAME fuses too), the
    parameters named as sent (null, empty or the documented default: as absent, since a
    generated client sends the defaults of the OpenAPI document)."""
    chosen = METHOD_FIELD.read(args.get("method"))
    try:
        check_hybrid_only([f.name for f in HYBRID if f.name in HYBRID_OPTIONS
                           and _set(f, args.get(f.name))], chosen, "method=hybrid")
    except BadSpec as e:
        raise BadParameter(str(e)) from None


def _set(field: Field, raw: object) -> bool:
    """Whether `raw` asks for something other than the field's default (a value it refuses
    does: its error comes after the one that says it is hybrid's)."""
    if raw in (None, ""):
        return False
    try:
        return field.read(raw) != field.default
    except BadParameter:
        return True


def query_string(args, fields: Sequence[Field], where: str) -> None:
    """Refuse a query string's unknown parameter (a typo must not pass silently: filters= for
    filter= would answer unfiltered) and one given twice, unless its field is repeatable."""
    names = [f.name for f in fields]
    keys = [key for key, _ in args.multi_items()]
    for key in keys:
        if key not in names:
            known = (f"known parameters: {', '.join(names)}" if names
                     else "it takes no parameters")
            raise BadParameter(f"unknown parameter {_shown(key)} in {where}; {known}")
    repeatable = {f.name for f in fields if f.kind == "filters"}
    for key, times in Counter(keys).items():
        if times > 1 and key not in repeatable:
            raise BadParameter(f"{key} is given {times} times in {where}; give it once")


def filters(raw: object) -> tuple:
    """The `filter` parameters (FIELD=a,b, !=, >=, <=, ^=; a text or a list), parsed once;
    an empty one is left out, as every empty parameter is (an HTML form's blank field)."""
    texts = [] if raw is None else [raw] if isinstance(raw, str) else raw
    if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
        raise BadParameter('filter must be a text or a list of texts, e.g. ["category=Python"]')
    if len(texts) > MAX_FILTERS:
        raise BadParameter(f"{len(texts)} filters in one request; at most {MAX_FILTERS} filters"
                           " are accepted: join the values of one field with commas"
                           " (category=a,b)")
    try:
        return parse_filters([text for text in texts if text != ""])
    except BadFilter as e:
        raise BadParameter(f"filter: {e}") from None


def weights(raw: object) -> dict[str, float] | None:
    """hybrid's weights, "bm25=1,dense=0.5" (None when absent)."""
    if raw is None or raw == "":
        return None
    if not isinstance(raw, str):  # a JSON body's object was read as method names
        raise BadParameter(f'weights must be a text such as "bm25=1,dense=0.5", got'
                           f' {_shown(raw)}')
    try:  # the library's reading and rule (SearchSpec's, Corpus.search's)
        return fusion_weights(str(raw))
    except BadSpec as e:
        raise BadParameter(f"weights: {e}") from None


def question(raw: object, name: str = "q") -> str:
    """A non-empty question of at most MAX_QUERY characters."""
    if raw is None:
        raise BadParameter(f"missing {name}: give the question, e.g. ?{name}=prazo+do+reembolso")
    if not isinstance(raw, str):
        raise BadParameter(f"{name} must be a string")
    try:  # the library's check and words (corpus `asked`), the parameter named
        asked(raw)
    except BadSpec as e:
        raise BadParameter(f"{name}: {e}") from None
    if len(raw) > MAX_QUERY:
        raise BadParameter(f"{name} has {len(raw)} characters; at most {MAX_QUERY} are accepted")
    return raw


DIGITS = re.compile(r"-?[0-9]+")  # a whole number in a query string: ASCII digits only
LONGEST = 18  # digits of any integer a parameter accepts, and more


def integer(raw: object, name: str, *, default: int, low: int, high: int) -> int:
    """An integer between `low` and `high` (default when absent or empty): a JSON integer, or
    plain ASCII digits in a query string (not 1_0, +3, " 3" nor other scripts' digits)."""
    if raw is None or raw == "":
        return default
    if type(raw) is int:
        value = raw
    elif isinstance(raw, str) and DIGITS.fullmatch(raw):
        if len(raw.lstrip("-")) > LONGEST:  # int() of thousands of digits is slow, or refused
            raise BadParameter(f"{name} must be between {low} and {high}, got a number of"
                               f" {len(raw.lstrip('-'))} digits")
        value = int(raw)
    else:
        raise BadParameter(f"{name} must be a whole number, got {_shown(raw)}")
    if not low <= value <= high:
        raise BadParameter(f"{name} must be between {low} and {high}, got {_number(value)}")
    return value


def number(raw: object, name: str, *, low: float | None = None) -> float | None:
    """A finite number (at least `low`), or None when absent or empty."""
    if raw is None or raw == "":
        return None
    try:
        value = float(raw) if not isinstance(raw, bool) else math.nan
    except (TypeError, ValueError, OverflowError):
        value = math.nan
    if not math.isfinite(value):
        raise BadParameter(f"{name} must be a finite number, got {_shown(raw)}")
    if low is not None and value < low:
        raise BadParameter(f"{name} must be {low} or more, got {value}")
    return value


def method(raw: object, *, default: str = METHOD) -> str:
    """A method name; whether the index has it is the library's to say when it runs (it
    resolves dense:NAME and hybrid:NAME, and its message names the methods the index has)."""
    if raw is None or raw == "":
        return default
    if not isinstance(raw, str):
        raise BadParameter(f"method must be a method name such as bm25, got {_shown(raw)}")
    return raw


def methods(raw: object) -> list[str] | None:
    """A comma-separated list of methods (None: the default columns); checked by the library
    as `method` is."""
    if raw is None or raw == "":
        return None
    if not isinstance(raw, str):
        raise BadParameter(f"methods must be comma-separated method names such as bm25,dense,"
                           f" got {_shown(raw)}")
    try:  # the library's reading, as busca compare --methods and Corpus.compare
        return list(dict.fromkeys(method_names(raw)))
    except BadSpec as e:
        raise BadParameter(str(e)) from None


def flag(raw: object, name: str) -> bool | None:
    """A yes/no switch: true/false in JSON, 1/0 (or true/false) in a query string; None when
    absent."""
    if raw is None or raw == "":
        return None
    if isinstance(raw, bool):
        return raw
    if isinstance(raw, str) and raw.lower() in ("1", "true", "0", "false"):
        return raw.lower() in ("1", "true")
    raise BadParameter(f"{name} must be 1 or 0 (true or false), got {_shown(raw)}")


def choice(raw: object, name: str, choices: tuple[str, ...], default: str) -> str:
    if raw is None or raw == "":
        return default
    if raw not in choices:
        raise BadParameter(f"{name} must be one of {', '.join(choices)}, got {_shown(raw)}")
    return str(raw)


def only(data: Mapping, allowed: set[str], where: str) -> None:
    """Refuse unknown keys (a typo in a field name must not pass silently)."""
    unknown = sorted(set(data) - allowed)
    if unknown:
        known = f"known fields: {', '.join(sorted(allowed))}" if allowed else "it takes none"
        raise BadParameter(f"unknown field {_shown(unknown[0])} in {where}; {known}")


def json_body(data: Mapping, fields: Sequence[Field], where: str) -> None:
    """Refuse a JSON body's unknown keys, and a value of another JSON type where its field
    declares a number or a yes/no (a query string's values are text; a JSON body's are typed;
    null, which an optional field's body schema allows, reads as absent)."""
    only(data, {f.name for f in fields}, where)
    for f in fields:
        if f.name in data:
            typed(f.name, data[f.name], schema_types(f.body_schema()))


_JSON_TYPES = {"integer": lambda v: type(v) is int, "number": lambda v: type(v) in (int, float),
               "boolean": lambda v: type(v) is bool}


def typed(name: str, value: object, types: Sequence[str]) -> None:
    """BadParameter when `value` is none of `types`, if they are JSON numbers and yes/no
    ("3" or true for an integer, "true" for a boolean); other types are the readers' to
    check. null stays for the reader too (an optional field's default; a required one's
    reader refuses it)."""
    if value is None or not set(types) <= {*_JSON_TYPES, "null"}:
        return
    wanted = [t for t in types if t != "null"]
    if not any(_JSON_TYPES[t](value) for t in wanted):
        hint = ", written without quotes" if isinstance(value, str) else ""
        raise BadParameter(f"{name} must be a JSON {' or '.join(wanted)}{hint}, got"
                           f" {_shown(value)}")


def schema_types(schema: Mapping) -> list[str]:
    """The JSON types a property's schema allows ("type", or each "anyOf" branch's)."""
    if "type" in schema:
        kind = schema["type"]
        return [kind] if isinstance(kind, str) else list(kind)
    return [t for branch in schema.get("anyOf", ()) for t in schema_types(branch)]


def _number(value: int) -> str:
    """An integer as an error message shows it (not thousands of digits)."""
    return str(value) if abs(value) < 10 ** 60 else "a number of more than 60 digits"


def _shown(raw: object) -> str:
    text = repr(raw)
    return text if len(text) <= 60 else text[:57] + "…'"
