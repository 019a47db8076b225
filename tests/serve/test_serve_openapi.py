"""GET /openapi.json: an OpenAPI 3.1 document generated from the definitions that validate
requests (serve/params.py), valid for openapi-spec-validator, covering exactly the routes the
app serves, and describing the answers the app really gives."""

from __future__ import annotations

import pytest

pytest.importorskip("starlette")
validator = pytest.importorskip("openapi_spec_validator")
jsonschema = pytest.importorskip("jsonschema")

from starlette.routing import Route  # noqa: E402
from starlette.testclient import TestClient  # noqa: E402

from busca.serve import params  # noqa: E402
from busca.serve.app import create_app  # noqa: E402
from busca.serve.engine import Engine  # noqa: E402

TOKEN = "t" * 24


def _client(home, token=None) -> TestClient:
    app = create_app(Engine(home, log_queries=False), token=token)
    return TestClient(app, base_url="http://127.0.0.1")


def _served_routes(client: TestClient) -> set[tuple[str, str]]:
    starlette_app = client.app.app  # under the Guard middleware
    return {(r.path, m.lower()) for r in starlette_app.routes if isinstance(r, Route)
            for m in r.methods if m != "HEAD"}


def _documented(document: dict) -> set[tuple[str, str]]:
    return {(path, method) for path, item in document["paths"].items() for method in item}


@pytest.mark.parametrize("token", [None, TOKEN])
def test_the_document_validates_and_covers_exactly_the_routes(lexical_home, token):
    client = _client(lexical_home, token)
    answer = client.get("/openapi.json")
    assert answer.status_code == 200
    document = answer.json()
    validator.validate(document)  # raises on any violation of OpenAPI 3.1
    assert document["openapi"] == "3.1.0"
    assert _documented(document) == _served_routes(client)
    assert (("/api/documents", "post") in _documented(document)) == bool(token)


def test_parameters_come_from_the_fields_that_validate_requests(lexical_home):
    document = _client(lexical_home).get("/openapi.json").json()
    search = document["paths"]["/api/search"]["get"]
    names = [p["name"] for p in search["parameters"]]
    assert names == [f.name for f in params.SEARCH]
    k = next(p for p in search["parameters"] if p["name"] == "k")["schema"]
    assert (k["minimum"], k["maximum"], k["default"]) == (1, params.MAX_K, params.K)
    from busca.corpus import SearchSpec  # the defaults declared are busca search's, each one
    defaults = {p["name"]: p["schema"]["default"] for p in search["parameters"]
                if "default" in p["schema"]}
    assert defaults == {n: getattr(SearchSpec(), n) for n in defaults}
    assert {"method", "k", "per_doc", "offset", "fusion", "window", "rrf_k"} <= set(defaults)
    body = document["paths"]["/api/context"]["post"]["requestBody"]["content"]
    schema = body["application/json"]["schema"]
    assert set(schema["properties"]) == {f.name for f in params.CONTEXT}
    from busca.corpus import ContextSpec  # hybrid's options as search's, with its defaults
    hybrid = {n: schema["properties"][n].get("default") for n in params.HYBRID_OPTIONS}
    assert hybrid == {n: getattr(ContextSpec(), n) for n in params.HYBRID_OPTIONS}
    assert schema["additionalProperties"] is False and schema["required"] == ["q"]
    # every status the app answers is documented, with the error body
    responses = search["responses"]
    assert {"200", "400", "409", "413", "414", "500", "503"} <= set(responses)
    assert responses["400"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/Error"}


def _check(document: dict, data, schema: dict) -> None:
    """`data` against `schema`, its $refs resolved in the document's components."""
    jsonschema.validate(data, {**schema, "components": document["components"]},
                        cls=jsonschema.Draft202012Validator)


def test_real_answers_match_their_documented_schemas(lexical_home):
    client = _client(lexical_home)
    document = client.get("/openapi.json").json()

    def schema_of(path, method, status):
        responses = document["paths"][path][method]["responses"][str(status)]
        return responses["content"]["application/json"]["schema"]

    found = client.get("/api/search", params={"q": "prazo do reembolso", "method": "bm25"})
    assert found.status_code == 200 and found.json()["hits"]
    _check(document, found.json(), schema_of("/api/search", "get", 200))
    bad = client.get("/api/search", params={"q": "prazo", "k": "0"})
    assert bad.status_code == 400
    _check(document, bad.json(), schema_of("/api/search", "get", 400))
    nothing = client.post("/api/context", json={"q": "prazo", "min_score": 1e9})
    assert nothing.status_code == 409
    _check(document, nothing.json(), schema_of("/api/context", "post", 409))
    prompt = client.post("/api/context", json={"q": "prazo do reembolso", "method": "bm25"})
    assert prompt.status_code == 200
    _check(document, prompt.json(), schema_of("/api/context", "post", 200))
    chunk = client.get("/api/chunk/0")
    _check(document, chunk.json(), schema_of("/api/chunk/{chunk_id}", "get", 200))
    _check(document, client.get("/healthz").json(), schema_of("/healthz", "get", 200))


def test_a_client_that_sends_every_documented_default_gets_the_same_answer(lexical_home):
    """A generated client fills in the document's defaults (a model with `fusion = "minmax"`,
    `window = 100`); sent with method=bm25 they were a 400 (`fusion, window, rrf_k only apply
    to method=hybrid`), though the document says they are what the server uses when absent."""
    client = _client(lexical_home)
    document = client.get("/openapi.json").json()
    search = document["paths"]["/api/search"]["get"]["parameters"]
    defaults = {p["name"]: p["schema"]["default"] for p in search if "default" in p["schema"]}
    asked = {"q": "prazo do reembolso", "method": "bm25", "log": "false"}
    bare = client.get("/api/search", params=asked)
    full = client.get("/api/search", params={**defaults, **asked})
    assert bare.status_code == full.status_code == 200, full.text
    assert bare.json()["hits"] == full.json()["hits"]
    body = document["paths"]["/api/context"]["post"]["requestBody"]["content"]
    properties = body["application/json"]["schema"]["properties"]
    defaults = {name: p["default"] for name, p in properties.items() if "default" in p}
    asked = {"q": "prazo do reembolso", "method": "bm25", "log": False}
    bare = client.post("/api/context", json=asked)
    full = client.post("/api/context", json={**defaults, **asked})
    assert bare.status_code == full.status_code == 200, full.text
    assert bare.json()["prompt"] == full.json()["prompt"]
