"""The contract of `busca serve` over real HTTP (the thirty-second sweep): the paths the
documentation's examples build, query strings that refuse what they do not take, the
library's method names, the library's compare default, stats before the first index, and an
OpenAPI document whose statuses and content types are those the server really answers."""

from __future__ import annotations

import json
import re
import threading
from pathlib import Path
from urllib.parse import urlencode

import pytest

pytest.importorskip("starlette")
jsonschema = pytest.importorskip("jsonschema")
requests = pytest.importorskip("requests")

from click.testing import CliRunner  # noqa: E402
from conftest import ENGLISH_DOCS, REPO, write_jsonl  # noqa: E402
from serving import Server  # noqa: E402

from busca.cli import cli  # noqa: E402
from busca.errors import BuscaError  # noqa: E402
from busca.search.scorers import COMPARE_K  # noqa: E402
from busca.serve import params  # noqa: E402

TOKEN = "contract-write-token-0123456789"
READER = "contract-read-token-0123456789"
DOCS = [{"url": "https://c.example/cursos", "title": "Cursos", "category": "Cursos",
         "text": "A universidade oferece cursos de engenharia e de medicina."},
        {"url": "https://c.example/bolsas", "title": "Bolsas", "category": "Bolsas",
         "text": "A universidade paga bolsas de pesquisa aos alunos de engenharia."},
        {"url": "https://c.example/segredo", "title": "Segredo", "groups": "staff",
         "text": "O orçamento da universidade para o ano que vem."}]


def _invoke(home: Path, *args: str) -> str:
    result = CliRunner().invoke(cli, ["--home", str(home), *args], obj={})
    assert result.exit_code == 0, result.output
    return result.stdout


def _home(root: Path, *, indexed: bool = True) -> Path:
    home = root / "home"
    _invoke(home, "add", str(write_jsonl(root / "docs.jsonl", DOCS)))
    if indexed:
        _invoke(home, "index", "-q", "--methods", "tfidf,bm25")
    return home


@pytest.fixture(scope="module")
def home(tmp_path_factory) -> Path:
    return _home(tmp_path_factory.mktemp("contract"))


@pytest.fixture(scope="module")
def server(home):
    with Server(home, "--no-log", "--quiet", "--token", TOKEN) as s:
        yield s


def get(server, path: str, **query) -> requests.Response:
    """GET server.url + path (the URL ends in /: path without its leading one)."""
    url = server.url + path + ("?" + urlencode(query, doseq=True) if query else "")
    return requests.get(url, timeout=60, allow_redirects=False)


def error(answer: requests.Response, status: int, *words: str) -> str:
    assert answer.status_code == status, answer.text
    message = answer.json()["error"]
    assert "\n" not in message and all(w in message for w in words), message
    return message


# --- 1. the documentation's "$U/api/…" -------------------------------------------------
def test_a_doubled_leading_slash_answers_as_the_single_slash_path(server):
    U = server.url  # as printed: it ends in "/", so "$U/api/search" doubles the slash
    found = requests.get(f"{U}/api/search", params={"q": "medicina"}, timeout=60)
    assert found.status_code == 200 and found.json()["hits"]
    assert requests.post(f"{U}//api/context", json={"q": "medicina"},
                         timeout=60).status_code == 200
    assert requests.get(f"{U}/healthz", timeout=60).json()["status"] == "ok"
    error(requests.get(f"{U}/nowhere", timeout=60), 404, "not found: /nowhere")


def test_the_documentations_examples_build_single_slash_paths():
    text = (REPO / "docs" / "serve.md").read_text(encoding="utf-8")
    assert "`U=http://127.0.0.1:8000`" in text and "U=http://127.0.0.1:8000/" not in text
    assert re.findall(r'"\$U/api/\w+', text)  # the examples still read "$U/api/…"


# --- 2. unknown and repeated query parameters ------------------------------------------
def test_an_unknown_query_parameter_is_a_400_naming_it_and_the_known_ones(server):
    q = {"q": "universidade", "method": "bm25", "min_score": 0}
    message = error(get(server, "api/search", **q, filters="category=Cursos"), 400,
                    "unknown parameter 'filters' in /api/search", "known parameters: q,",
                    "filter")
    assert message.endswith(", ".join(f.name for f in params.SEARCH))
    error(get(server, "api/search", **q, top_k=10), 400, "'top_k'")
    error(get(server, "api/compare", q="universidade", min_score=5), 400, "'min_score'",
          "/api/compare")
    for path in ("api/stats", "api/chunk/0", "healthz", "openapi.json"):
        error(get(server, path, x=1), 400, "unknown parameter 'x'", "takes no parameters")
    # what it takes still works: filter, repeatable, filters for real
    kept = get(server, "api/search", **q, filter=["category=Cursos", "url^=https://"])
    assert kept.status_code == 200, kept.text
    assert {h["meta"]["category"] for h in kept.json()["hits"]} == {"Cursos"}


def test_a_parameter_given_twice_is_a_400_unless_it_repeats(server):
    error(get(server, "api/search", q="universidade", k=[1, 5]), 400,
          "k is given 2 times in /api/search; give it once")
    error(get(server, "api/compare", q=["a", "b"]), 400, "q is given 2 times")


def test_the_page_refuses_a_misspelt_parameter_and_its_own_links_still_work(server):
    page = get(server, "", q="universidade", method="bm25", filters="category=Cursos")
    assert page.status_code == 400 and page.headers["content-type"].startswith("text/html")
    assert "unknown parameter &#x27;filters&#x27; in /" in page.text
    page = get(server, "", q="universidade", method="bm25", k=5)
    assert page.status_code == 200
    links = re.findall(r'href="(\./\?[^"]+)"', page.text)  # the facets' and compare's links
    assert any("filter=" in link for link in links) and any("compare" in link for link in links)
    for link in links:
        answer = requests.get(server.url + link[2:].replace("&amp;", "&"), timeout=60)
        assert answer.status_code == 200, (link, answer.text[-300:])
    evaluation = get(server, "eval", runs="x")
    assert evaluation.status_code == 400 and "unknown parameter" in evaluation.text


def test_the_page_speaks_english_as_its_other_words_do(server):
    """The page said "não encontrei: none of the query's words occurs…", and "Faça uma
    pergunta…" and "Buscar" beside "Search", "Eval" and "more passages", under lang="pt-BR"
    (an English site's readers got a Portuguese form; messages are English)."""
    empty = get(server, "", q="xilofone", method="bm25")
    assert empty.status_code == 200
    assert "nothing found: none of the query&#x27;s words occurs in the index" in empty.text
    form = get(server, "").text
    assert '<html lang="en">' in form and 'placeholder="Ask a question…"' in form
    assert '<button type="submit">Search</button>' in form
    for page in (empty.text, form):
        assert not re.search(r"não encontrei|Buscar|Faça|pt-BR", page)


# --- 5. whole numbers: ASCII digits only; 8. a JSON integer too long ----------------------
@pytest.mark.parametrize("raw", ["1_0", "\u0663", "+3", " 3", "3 ", "0x3", "3.0"])
def test_a_whole_number_is_plain_ascii_digits(server, raw):
    error(get(server, "api/search", q="universidade", k=raw), 400, "k must be a whole number")


def test_a_long_whole_number_is_out_of_range_not_a_traceback(server):
    error(get(server, "api/search", q="universidade", k="9" * 5000), 400,
          "k must be between 1 and 100, got a number of 5000 digits")
    assert get(server, "api/search", q="universidade", k="-0003").status_code == 400
    assert len(get(server, "api/search", q="universidade", k="004").json()["hits"]) <= 4


def test_a_query_string_not_in_utf8_is_a_400_naming_the_encoding(server):
    """"orçamento" percent-encoded in Latin-1 (urlencode(..., encoding="latin-1"), an old
    client's default) was searched as "or\ufffdamento", answered 200 and logged so; every
    page and endpoint reads the query string the same way."""
    latin1 = urlencode({"q": "orçamento da universidade"}, encoding="latin-1")
    for path in ("api/search", "api/compare", ""):
        answer = requests.get(f"{server.url}{path}?{latin1}", timeout=60)
        error(answer, 400, "q is not UTF-8", "%C3%A7")
    utf8 = requests.get(f"{server.url}api/search", params={"q": "orçamento"}, timeout=60)
    assert utf8.status_code == 200 and utf8.json()["question"] == "orçamento"
    replacement = requests.get(f"{server.url}api/search", params={"q": "or\ufffdamento"},
                               timeout=60)  # the character itself, in UTF-8, is a question
    assert replacement.status_code == 200, replacement.text


def test_an_empty_filter_is_left_out_as_every_empty_parameter(server):
    """`filter=` (a form's blank filter field, a client that joins an empty list) was a 400
    "bad filter ''" on every endpoint, where `k=` and `method=` are their defaults."""
    plain = get(server, "api/search", q="engenharia", method="bm25", k=3)
    assert len(plain.json()["hits"]) == 2, plain.text
    for query in ({"filter": ""}, {"filter": ["", "category=Cursos"]}):
        found = get(server, "api/search", q="engenharia", method="bm25", k=3, **query)
        assert found.status_code == 200, found.text
        wanted = [h["url"] for h in plain.json()["hits"]
                  if query["filter"] == "" or h["url"].endswith("/cursos")]
        assert [h["url"] for h in found.json()["hits"]] == wanted
    assert get(server, "api/compare", q="universidade", filter="").status_code == 200
    assert get(server, "", q="universidade", filter="").status_code == 200
    context = requests.post(server.url + "api/context", timeout=60,
                            json={"q": "bolsas de pesquisa", "filter": [""]})
    assert context.status_code == 200, context.text
    error(get(server, "api/search", q="universidade", filter=" "), 400, "filter: bad filter")


def test_an_oversized_json_integer_names_its_field(server):
    post = lambda body: requests.post(server.url + "api/context", data=body,  # noqa: E731
                                      timeout=60)
    message = error(post('{"q": "universidade", "k": 1%s}' % ("0" * 5000)), 400,
                    "k is a number of 5001 digits")
    assert "sys.set_int_max_str_digits" not in message and "Exceeds" not in message
    error(post(json.dumps({"q": "universidade", "k": 10 ** 4000})), 400,
          "k must be between 1 and 100, got a number of more than 60 digits")
    documents = requests.post(
        server.url + "api/documents", timeout=60, headers={"Authorization": f"Bearer {TOKEN}"},
        data='{"documents": [{"url": "https://c.example/x", "text": "x", "meta": {"ano": -%s}}]}'
        % ("7" * 4400))
    error(documents, 400, "documents[0].meta.ano is a number of 4400 digits")


def test_a_post_reads_only_its_body_and_each_key_once(server):
    """A POST's query string is refused, not ignored (`?q=` was ignored and the body's
    question answered), and so is a key given twice in the body (the last one won)."""
    body = json.dumps({"q": "universidade"})
    for query in ("?x=1", "?q=bolsas", "?"):
        answer = requests.post(server.url + "api/context" + query, data=body, timeout=60)
        if query == "?":  # an empty query string is no query string: the question is asked
            assert answer.status_code in (200, 409) and answer.json()["question"] \
                == "universidade"
            continue
        error(answer, 400, "reads its fields from the JSON body, not the query string")
    error(requests.post(server.url + "api/index?size=100", data="{}", timeout=60,
                        headers={"Authorization": f"Bearer {TOKEN}"}), 400,
          "POST /api/index reads its fields from the JSON body")
    error(requests.post(server.url + "api/context", timeout=60,
                        data='{"q": "universidade", "q": "bolsas"}'), 400,
          "the key 'q' is given twice in the body: give each field once")
    error(requests.post(server.url + "api/context", timeout=60,
                        data='{"q": "universidade", "filter": [], "k": 2, "filter": []}'), 400,
          "the key 'filter' is given twice")


# --- 4. one compare default -------------------------------------------------------------
def test_compare_defaults_to_the_libraries_k(server, home):
    import busca

    assert COMPARE_K == 5
    data = get(server, "api/compare", q="universidade engenharia bolsas").json()
    assert data["k"] == COMPARE_K
    with busca.open(home) as corpus:
        assert corpus.compare("universidade").k == COMPARE_K
    cli_data = json.loads(_invoke(home, "compare", "universidade", "--json"))
    assert cli_data["k"] == COMPARE_K



def test_compare_json_is_one_form_on_the_cli_http_and_the_library(server, home):
    """`busca compare --json`, GET /api/compare and `Comparison.to_json()` are one form (the
    CLI and the server each built it, and the library had none), naming the question
    `question` as the context JSON does, and `query` as before."""
    import busca

    q = "universidade engenharia"
    http = get(server, "api/compare", q=q).json()
    with busca.open(home) as corpus:
        comparison = corpus.compare(q)
    library = comparison.to_json()
    assert library["question"] == library["query"] == q and library["rows"]
    assert json.loads(_invoke(home, "compare", q, "--json")) == library
    assert http == comparison.to_json(hits=True, build=http["build"], took_ms=http["took_ms"])
    ids = {m: [h["chunk_id"] for h in hits] for m, hits in http["columns"].items()}
    assert {**http, "columns": ids} == {**library, "build": http["build"],
                                        "took_ms": http["took_ms"]}


def test_search_json_names_the_question_as_context_does(server, home):
    """GET /api/search (and the MCP search tool, `Result.to_json`) said `query` where
    context's JSON says `question`: both now, `query` kept for the clients written before."""
    import busca

    http = get(server, "api/search", q="medicina").json()
    assert http["question"] == http["query"] == "medicina" and http["hits"]
    with busca.open(home) as corpus:
        result = corpus.search("medicina", log=False)
    data = result.to_json()
    assert data["question"] == data["query"] == "medicina"
    del data["query"]  # a form with only `question` reads back too
    assert busca.Result.from_json(data) == result.__class__.from_json(result.to_json())

# --- 6. stats before the first index ---------------------------------------------------
def test_stats_before_the_first_index_is_busca_stats_json(tmp_path):
    home = _home(tmp_path, indexed=False)
    tokens = tmp_path / "tokens.txt"
    tokens.write_text(f"{READER} staff\n", encoding="utf-8")
    expected = json.loads(_invoke(home, "stats", "--json"))
    assert expected["documents"] == 3 and expected["index"] is None
    with Server(home, "--no-log", "--tokens", str(tokens), "--token", TOKEN) as s:
        document = requests.get(s.url + "openapi.json", timeout=60).json()

        def stats(token=None):
            headers = {"Authorization": f"Bearer {token}"} if token else {}
            answer = requests.get(s.url + "api/stats", headers=headers, timeout=60)
            assert answer.status_code == 200, answer.text
            conforms(document, "get", "/api/stats", answer)
            return answer.json()

        assert stats(TOKEN) == expected  # the write token sees the whole home
        assert stats() == {"documents": 2, "index": None, "restricted": True,
                           "facets": {"category": {"values": 2,
                                                   "top": {"Bolsas": 1, "Cursos": 1}}}}
        assert stats(READER)["documents"] == 3
    with Server(home, "--no-log") as s:
        assert requests.get(s.url + "api/stats", timeout=60).json() == expected


# --- 3. dense:NAME, as the library resolves it -----------------------------------------
@pytest.fixture
def dense_url(tmp_path, fake):
    """A real busca serve app on 127.0.0.1 in this process (the fake encoder registered
    here), over a home indexed with tfidf, bm25 and the fake dense model."""
    import uvicorn

    from busca.serve.app import create_app
    from busca.serve.engine import Engine
    from busca.serve.server import bind, url_of

    home = tmp_path / "home"
    _invoke(home, "add", str(write_jsonl(tmp_path / "docs.jsonl", DOCS)))
    _invoke(home, "index", "-q", "--methods", "tfidf,bm25", "--dense", "fake")
    sock = bind("127.0.0.1", 0)
    server = uvicorn.Server(uvicorn.Config(create_app(Engine(home, log_queries=False)),
                                           lifespan="off", log_level="warning"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        yield url_of(sock), home
    finally:
        server.should_exit = True
        thread.join(30)
        sock.close()


def test_dense_name_is_accepted_where_the_library_accepts_it(dense_url):
    import busca

    url, home = dense_url
    q = {"q": "universidade engenharia", "min_score": 0}
    with busca.open(home) as corpus:
        expected = [h.chunk_id for h in corpus.search(q["q"], method="dense:fake", min_score=0,
                                                      log=False).hits]
    found = requests.get(url + "api/search", params={**q, "method": "dense:fake"}, timeout=60)
    assert found.status_code == 200, found.text
    assert [h["chunk_id"] for h in found.json()["hits"]] == expected
    context = requests.post(url + "api/context", json={**q, "method": "dense:fake"},
                            timeout=60)
    assert context.status_code == 200, context.text
    compare = requests.get(url + "api/compare", params={"q": q["q"],
                                                        "methods": "bm25,dense:fake"},
                           timeout=60)
    assert compare.status_code == 200 and compare.json()["methods"] == ["bm25", "dense:fake"]
    with busca.open(home) as corpus:  # a name the index lacks: the library's message
        library = [_refusal(corpus.search, "x", method=m, log=False)
                   for m in ("nope", "dense:nope")]
        library += [_refusal(corpus.context, "x", method=m, log=False)
                    for m in ("nope", "dense:nope")]
        library += [_refusal(corpus.compare, "x", methods=["bm25", m])
                    for m in ("nope", "dense:nope")]
    answers = [requests.get(url + "api/search", params={"q": "x", "method": m}, timeout=60)
               for m in ("nope", "dense:nope")]
    answers += [requests.post(url + "api/context", json={"q": "x", "method": m}, timeout=60)
                for m in ("nope", "dense:nope")]
    answers += [requests.get(url + "api/compare", params={"q": "x", "methods": f"bm25,{m}"},
                             timeout=60) for m in ("nope", "dense:nope")]
    assert [(a.status_code, a.json()["error"]) for a in answers] == [(400, m) for m in library]


def test_context_takes_hybrids_options_as_search_does(dense_url):
    """POST /api/context takes fusion, window, rrf_k and weights, as GET /api/search does (it
    refused them as unknown fields): the passages Corpus.context finds with them; with a
    method that fuses nothing, search's 400."""
    import busca

    url, home = dense_url
    options = {"fusion": "rrf", "window": 20, "rrf_k": 10, "weights": "bm25=1,dense=0.5"}
    q = {"q": "universidade engenharia", "min_score": 0, "method": "hybrid", "log": False}
    answer = requests.post(url + "api/context", json={**q, **options}, timeout=60)
    assert answer.status_code == 200, answer.text
    plain = requests.post(url + "api/context", json=q, timeout=60).json()
    with busca.open(home) as corpus:
        found = corpus.context(q["q"], method="hybrid", min_score=0, log=False, **options)
    assert answer.json()["passages"] == found.to_json()["passages"] != plain["passages"]
    wrong = {"q": q["q"], "method": "bm25", "fusion": "rrf", "window": 20}
    refused = requests.post(url + "api/context", json=wrong, timeout=60)
    searched = requests.get(url + "api/search", params=wrong, timeout=60)
    assert refused.status_code == searched.status_code == 400
    assert refused.json()["error"] == searched.json()["error"]
    assert "fusion, window only apply to method=hybrid" in refused.json()["error"]
    as_object = requests.post(url + "api/context", json={**q, "weights": {"bm25": 1}},
                              timeout=60)  # the schema's text, not method names "{'bm25': 1"
    assert as_object.status_code == 400
    assert as_object.json()["error"].startswith('weights must be a text such as "bm25=1,')


def _refusal(call, *args, **options) -> str:
    with pytest.raises(BuscaError) as refused:
        call(*args, **options)
    return str(refused.value)


# --- 5. the OpenAPI document against real answers --------------------------------------
def _template(document: dict, path: str) -> str:
    """The document's path that `path` (a real one) matches."""
    for template in document["paths"]:
        pattern = re.sub(r"\{[^}]+\}", "[^/]+", template)
        if re.fullmatch(pattern, path):
            return template
    raise AssertionError(f"{path} is not in the document")


def conforms(document: dict, method: str, path: str, answer: requests.Response) -> None:
    """The answer's status is declared for the path, with its content type, and a JSON
    body fits the declared schema."""
    declared = document["paths"][_template(document, path)][method]["responses"]
    status = str(answer.status_code)
    assert status in declared, (method, path, status, sorted(declared))
    content = declared[status].get("content", {})
    kind = answer.headers.get("content-type", "").split(";")[0]
    if not content:
        assert not answer.content, (method, path, status)
        return
    assert kind in content, (method, path, status, kind, sorted(content))
    if kind == "application/json":
        schema = {**content[kind]["schema"], "components": document["components"]}
        jsonschema.validate(answer.json(), schema, cls=jsonschema.Draft202012Validator)
        unlisted = _undocumented(document, answer.json(), content[kind]["schema"])
        assert not unlisted, (method, path, status, unlisted)


def _undocumented(document: dict, data, schema: dict, where: str = "") -> list[str]:
    """The fields of `data` (nested too) that its schema does not name: what a client
    generated from the document cannot see. An object schema without properties (Stats,
    OpenAPI) is free; oneOf: the branch that names the most."""
    while "$ref" in schema:
        schema = document["components"]["schemas"][schema["$ref"].rsplit("/", 1)[1]]
    if "oneOf" in schema:
        return min((_undocumented(document, data, s, where) for s in schema["oneOf"]), key=len)
    if isinstance(data, list) and isinstance(schema.get("items"), dict):
        return [f for item in data for f in _undocumented(document, item, schema["items"],
                                                          where + "[]")]
    if not isinstance(data, dict):
        return []
    named: dict = dict(schema.get("properties", {}))
    for branch in schema.get("allOf", ()):
        while "$ref" in branch:
            branch = document["components"]["schemas"][branch["$ref"].rsplit("/", 1)[1]]
        named.update(branch.get("properties", {}))
    extra = schema.get("additionalProperties")
    if not named and not isinstance(extra, dict):
        return []
    out = []
    for key, value in data.items():
        sub = named.get(key, extra if isinstance(extra, dict) else None)
        out += ([f"{where}{key}"] if sub is None
                else _undocumented(document, value, sub, f"{where}{key}."))
    return out


def test_the_openapi_document_declares_the_answers_the_server_gives(server):
    document = get(server, "openapi.json").json()
    cases = [("get", "static/favicon.svg", {}, 200), ("get", "static/busca.js", {}, 200),
             ("get", "static/busca.css", {}, 200), ("get", "static/app.js", {}, 404),
             ("get", "", {"q": "x", "k": "abc"}, 400), ("get", "", {"x": "1"}, 400),
             ("get", "login", {}, 303), ("get", "api/search", {"q": "x", "rrf_k": "-5",
                                                               "method": "hybrid"}, 400),
             ("get", "api/search", {"q": "x", "k": "1_0"}, 400),
             ("get", "api/compare", {"q": "universidade"}, 200),
             ("get", "api/stats", {}, 200), ("get", "api/stats", {"x": "1"}, 400)]
    for method, path, query, status in cases:
        answer = get(server, path, **query)
        assert answer.status_code == status, (path, query, answer.text[:300])
        conforms(document, method, "/" + path, answer)
    assert get(server, "login").headers["location"] == "./"
    name = document["paths"]["/static/{name}"]["get"]["parameters"][0]["schema"]
    assert name["enum"] == ["busca.css", "busca.js", "favicon.svg"]
    assert "app.js" not in json.dumps(document)
    search = document["paths"]["/api/search"]["get"]["parameters"]
    rrf_k = next(p["schema"] for p in search if p["name"] == "rrf_k")
    with pytest.raises(jsonschema.ValidationError):  # -5: refused by the schema as by the server
        jsonschema.validate(-5, rrf_k)
    page = document["paths"]["/"]["get"]
    assert [p["name"] for p in page["parameters"]] == ["q", "method", "k", "filter"]
    # a method a path does not list: the 405 its description promises
    assert "answered 405 with the Error body and an Allow header" in document["info"][
        "description"]
    for path, allowed in (("api/search", "GET"), ("api/context", "POST")):
        answer = requests.put(server.url + path, timeout=60)
        assert answer.status_code == 405 and allowed in answer.headers["allow"]
        jsonschema.validate(answer.json(), {**document["components"]["schemas"]["Error"],
                                            "components": document["components"]})


def test_the_openapi_document_declares_the_stale_index_answers(tmp_path):
    home = _home(tmp_path)
    with Server(home, "--no-log", "--quiet", "--token", TOKEN) as s:
        document = requests.get(s.url + "openapi.json", timeout=60).json()
        nothing = requests.post(s.url + "api/context", json={"q": "universidade",
                                                             "min_score": 1e9}, timeout=60)
        assert nothing.status_code == 409 and nothing.json()["answer"] is None
        conforms(document, "post", "/api/context", nothing)
        changed = {"url": DOCS[0]["url"], "title": "Cursos", "text": "Texto novo e outro."}
        added = requests.post(s.url + "api/documents", json={"documents": [changed]},
                              headers={"Authorization": f"Bearer {TOKEN}"}, timeout=60)
        assert added.status_code == 200, added.text
        # the changed document is left out until a rebuild; the others answer as before
        stale = requests.post(s.url + "api/context", json={"q": "cursos e bolsas",
                                                           "k": 10}, timeout=60)
        assert stale.status_code == 200, stale.text
        assert [p["url"] for p in stale.json()["passages"]] == [DOCS[1]["url"]]
        conforms(document, "post", "/api/context", stale)
        page = get(s, "", q="cursos e bolsas", k=10)
        assert page.status_code == 200 and DOCS[1]["url"] in page.text
        assert DOCS[0]["url"] not in page.text and "Texto novo" not in page.text
        conforms(document, "get", "/", page)
        chunks = [requests.get(s.url + f"api/chunk/{n}", timeout=60) for n in range(3)]
        assert 409 in [c.status_code for c in chunks], [c.text for c in chunks]
        for chunk in chunks:
            conforms(document, "get", f"/api/chunk/{chunk.url.rsplit('/', 1)[1]}", chunk)



def test_every_operation_answers_what_the_document_declares_field_by_field(tmp_path):
    """Each operation's real answers, the write endpoints' and the Guard's 403s included:
    status, content type, schema, and no field the document leaves out (a generated client
    hid /healthz's methods, compare's depth and notes, the context's passages, the index's
    figures; a page of another site got a 403 no operation declared)."""
    home = _home(tmp_path)
    auth = {"Authorization": f"Bearer {TOKEN}"}
    runs = tmp_path / "runs"
    runs.mkdir()
    (runs / "old.json").write_text('{"format": "busca-run", "version": 1, "systems": 3}',
                                   encoding="utf-8")
    with Server(home, "--no-log", "--quiet", "--token", TOKEN, "--runs", str(runs)) as s:
        document = requests.get(s.url + "openapi.json", timeout=60).json()
        for query, status in (({"run": "nope.json"}, 404), ({}, 422), ({"x": "1"}, 400)):
            page = get(s, "eval", **query)
            assert page.status_code == status, (query, page.text[-300:])
            conforms(document, "get", "/eval", page)

        def check(method, path, status, **options):
            answer = requests.request(method, s.url + path, timeout=120,
                                      allow_redirects=False, **options)
            assert answer.status_code == status, (method, path, answer.text[:300])
            conforms(document, method.lower(), "/" + path.split("?")[0], answer)
            return answer.json()

        question = {"q": "universidade engenharia", "min_score": 0}
        assert check("GET", "healthz", 200)["methods"]
        check("GET", "api/search", 200, params={**question, "k": 1, "offset": 1})
        assert check("GET", "api/compare", 200, params={"q": question["q"]})["rows"]
        assert check("POST", "api/context", 200, json=question)["passages"]
        assert check("GET", "api/stats", 200)["pending"] == {"changed": 0, "removed": 0}
        check("GET", "api/chunk/1", 200)
        check("GET", "openapi.json", 200)
        new = {"url": "https://c.example/novo", "title": "Novo", "text": "Texto novo.",
               "meta": {"category": "Cursos"}}
        check("POST", "api/documents", 200, json={"documents": [new]}, headers=auth)
        check("DELETE", "api/documents", 200, json={"urls": [new["url"], "x"]}, headers=auth)
        assert check("POST", "api/index", 200, json={}, headers=auth)["chunker"]
        check("POST", "api/index", 401, json={})
        for headers in ({"Origin": "http://evil.example"}, {"Sec-Fetch-Site": "cross-site"}):
            for method, path in (("GET", "api/search?q=x"), ("POST", "api/context"),
                                 ("GET", "healthz"), ("GET", "eval")):
                check(method, path, 403, headers=headers, json={"q": "x"} if method ==
                      "POST" else None)


def test_the_documentations_example_answers_are_what_the_document_declares(server):
    """Each JSON answer docs/serve.md shows after a `curl` of the API fits the schema of
    that operation and status, with no field the document leaves out."""
    document = get(server, "openapi.json").json()
    text = (REPO / "docs" / "serve.md").read_text(encoding="utf-8")
    checked = 0
    for block in re.findall(r"```\n(\$ .*?)```", text, flags=re.S):
        for command, shown in re.findall(r"^\$ (curl(?:[^\n]*\\\n)*[^\n]*)\n(.*?)(?=^\$ |\Z)",
                                         block, flags=re.S | re.M):
            if "| jq" in command or not shown.strip().startswith("{"):
                continue
            data = json.loads(shown)
            method = re.search(r"-X (\w+)", command)
            method = method.group(1) if method else "POST" if " -d " in command else "GET"
            path = re.search(r'\$U(/[\w/{}.]*)', command).group(1)
            status = data["status"] if type(data.get("status")) is int else 200  # healthz
            declared = document["paths"][_template(document, path)][method.lower()]
            schema = declared["responses"][str(status)]["content"]["application/json"]["schema"]
            jsonschema.validate(data, {**schema, "components": document["components"]},
                                cls=jsonschema.Draft202012Validator)
            assert not _undocumented(document, data, schema), (command, data)
            checked += 1
    assert checked >= 6  # search, context's 409, healthz, documents, index and its 401, delete

# --- 7. null in a JSON body: what the document's schema says -----------------------------
def _bodies(document: dict) -> dict[str, dict]:
    """Each JSON request body's schema by path; /api/documents': one document's."""
    out = {path: item["post"]["requestBody"]["content"]["application/json"]["schema"]
           for path, item in document["paths"].items() if "requestBody" in item.get("post", {})}
    out["/api/documents"] = out["/api/documents"]["properties"]["documents"]["items"]
    return out


def _nulls(schema: dict, base: dict):
    """(field, body with that field null, whether the schema accepts it) for each field."""
    for name in schema["properties"]:
        body = {**base, name: None}
        fits = jsonschema.Draft202012Validator(schema).is_valid(body)
        assert fits == (name not in schema["required"]), (name, schema["properties"][name])
        yield name, body, fits


def test_context_speaks_the_index_language_over_http(tmp_path):
    """POST /api/context on an index built with bm25's en analyzer gave the Portuguese
    instruction unless the request said lang en: now the index's language (the answer's
    `lang` says which), as busca context gives when this server answers it; an explicit
    lang still chooses."""
    home = tmp_path / "home"
    _invoke(home, "add", str(write_jsonl(tmp_path / "en.jsonl", ENGLISH_DOCS)))
    _invoke(home, "index", "-q", "--analyzer", "en")
    asked = {"q": "How long do refunds take?", "method": "bm25", "min_score": 0}
    with Server(home, "--no-log", "--quiet") as s:
        answer = requests.post(s.url + "api/context", json=asked, timeout=120).json()
        chosen = requests.post(s.url + "api/context", json={**asked, "lang": "pt"},
                               timeout=120).json()
        served = json.loads(_invoke(home, "context", asked["q"], "--method", "bm25",
                                    "--min-score", "0", "--json", "--no-log"))
    assert answer["prompt"].startswith("Answer using only the passages") and \
        answer["lang"] == "en"
    assert chosen["prompt"].startswith("Responda usando apenas") and chosen["lang"] == "pt"
    assert served["prompt"] == answer["prompt"] and served["lang"] == "en"


def test_null_is_absent_for_an_optional_field_and_refused_for_a_required_one(tmp_path):
    """The document declares each optional body field nullable and null reads as absent
    (the default; a document's groups: the stored ones, never public); a required one is a
    400 naming it. Before: the schema refused null while the server took it (and groups null
    made a private document public)."""
    home = _home(tmp_path)
    auth = {"Authorization": f"Bearer {TOKEN}"}
    with Server(home, "--no-log", "--quiet", "--token", TOKEN) as s:
        post = lambda path, body: requests.post(s.url + path, json=body, headers=auth,  # noqa: E731
                                                timeout=120)
        bodies = _bodies(requests.get(s.url + "openapi.json", timeout=60).json())
        assert set(bodies) == {"/api/context", "/api/index", "/api/documents"}
        question = {"q": "universidade engenharia", "min_score": 0}
        for name, body, fits in _nulls(bodies["/api/context"], question):
            answer = post("api/context", body)
            if fits:
                absent = post("api/context", {k: v for k, v in body.items() if k != name})
                assert answer.status_code == 200 and answer.json() == absent.json(), name
            else:
                error(answer, 400, name)
        for name, body, _ in _nulls(bodies["/api/index"], {}):
            assert post("api/index", body).status_code == 200, name
        private = {"url": DOCS[2]["url"], "text": DOCS[2]["text"]}
        for name, body, fits in _nulls(bodies["/api/documents"], private):
            answer = post("api/documents", {"documents": [body]})
            if fits:
                assert answer.status_code == 200, (name, answer.text)
            else:
                error(answer, 400, "document 1", name)
    import busca

    with busca.open(home) as corpus:  # groups null kept the stored groups
        assert corpus.home.get(DOCS[2]["url"]).meta["groups"] == ["staff"]


def test_a_posted_document_loses_the_invisible_characters_a_page_loses(tmp_path):
    """POST /api/documents kept a CMS's hyphenation hints and zero-width characters
    ("infor\\u00admação"), which a crawled page and a .txt file lose: after the rebuild a
    search for "informação" found nothing and the answer carried them. Its heading offset
    still points at its heading."""
    home = _home(tmp_path)
    text = "Nossa po\u00adlítica.\n\u200bPrazos\nA infor\u00admação pes\u200dsoal é apagada."
    posted = {"url": "https://c.example/privacidade", "title": "Privaci\u00addade",
              "text": text, "meta": {"headings": [[text.index("\u200bPrazos"), 2, "Prazos",
                                                   "prazos"]]}}
    auth = {"Authorization": f"Bearer {TOKEN}"}
    with Server(home, "--no-log", "--quiet", "--token", TOKEN) as s:
        added = requests.post(s.url + "api/documents", json={"documents": [posted]},
                              headers=auth, timeout=60)
        assert added.status_code == 200 and added.json()["added"] == 1, added.text
        built = requests.post(s.url + "api/index", json={}, headers=auth, timeout=120)
        assert built.status_code == 200, built.text
        hits = get(s, "api/search", q="informação", method="bm25").json()["hits"]
    assert [h["url"] for h in hits] == [posted["url"]]
    assert hits[0]["title"] == "Privacidade"
    assert "informação pessoal" in hits[0]["text"] and "\u00ad" not in hits[0]["text"]
    from busca.index.home.documents import Store

    with Store(home) as store:
        doc = store.get(posted["url"])
    assert doc.text[doc.meta["headings"][0][0]:].startswith("Prazos\n")
