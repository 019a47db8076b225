"""One document object, three ways in: a .jsonl line of `busca add`, an item of POST
/api/documents on a real `busca serve --token`, a dict handed to `Corpus.add` store the same
document or say the same of it (crawler/fields.py reads all three)."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("starlette")
requests = pytest.importorskip("requests")

from click.testing import CliRunner  # noqa: E402
from conftest import write_jsonl  # noqa: E402
from serving import Server  # noqa: E402

import busca  # noqa: E402
from busca.cli import cli  # noqa: E402

TOKEN = "fields-write-token-0123456789"
GOOD = [  # (object, the stored title, modified and meta)
    ({"url": "https://f.example/rss", "title": "Ação", "text": "Reembolso em dezembro.",
      "modified": "Tue, 05 Dec 2023 10:00:00 +0000", "tags": ["rh", "prazo"],
      "groups": "staff,hr"},
     "Ação", "2023-12-05T10:00:00+00:00", {"tags": ["rh", "prazo"], "groups": ["staff", "hr"]}),
    ({"url": "https://f.example/espaco", "text": "Reembolso em janeiro.",
      "modified": "2024-01-05 10:00:00", "meta": {"category": "RH", "groups": ["staff"]}},
     "https://f.example/espaco", "2024-01-05T10:00:00", {"category": "RH", "groups": ["staff"]}),
    ({"_id": "d3", "title": "", "text": "Reembolso em maio.", "modified": "2024-05-01",
      "autor": "Conceição"},
     "d3", "2024-05-01", {"autor": "Conceição"}),
]
BAD = [  # (object, what its problem says)
    ({"url": "https://f.example/ambigua", "text": "x", "modified": "01/05/2024"},
     "modified must be a date in ISO 8601 (2024-05-01, 2024-05-01T10:00:00Z) or RFC 2822"
     " (Tue, 05 Dec 2023 10:00:00 +0000), not '01/05/2024'"),
    ({"url": "https://f.example/epoca", "text": "x", "modified": 1714567890},
     "modified must be a date in ISO 8601"),
    ({"url": "https://f.example/titulo", "text": "x", "title": 6}, "title must be a string"),
    ({"url": "https://f.example/meta", "text": "x", "meta": "RH"}, "meta must be an object"),
    ({"url": "https://f.example/grupos", "text": "x", "groups": {"x": 1}},
     "groups must be a list of names or a comma text"),
    ({"url": "https://f.example/sem-texto"}, 'needs a string "text"'),
]


def _stored(home) -> dict[str, tuple]:
    with busca.open(home) as corpus:
        return {d.url: (d.title, d.text, d.modified, d.meta) for d in corpus.home.documents()}


def _expected() -> dict[str, tuple]:
    return {(item.get("url") or item["_id"]): (title, item["text"], modified, meta)
            for item, title, modified, meta in GOOD}


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    home = tmp_path_factory.mktemp("served") / "home"
    with Server(home, "--no-log", "--quiet", "--token", TOKEN) as running:
        running.home = home
        yield running


def _post(server, body, *, raw: str | None = None):
    return requests.post(server.url + "api/documents", timeout=60,
                         headers={"Authorization": f"Bearer {TOKEN}"},
                         **({"data": raw.encode()} if raw is not None else {"json": body}))


def test_a_jsonl_line_a_posted_document_and_a_dict_store_the_same_document(tmp_path, server):
    """A JSONL line's other keys, comma groups and RFC 2822 date were taken while the API
    refused them (400 "unknown field"), and the line's date was stored as written."""
    objects = [item for item, *_ in GOOD]
    jsonl_home = tmp_path / "jsonl"
    added = CliRunner().invoke(cli, ["--home", str(jsonl_home), "add", "--json",
                                     str(write_jsonl(tmp_path / "a.jsonl", objects))], obj={})
    assert added.exit_code == 0, added.output
    posted = _post(server, {"documents": objects})
    assert posted.status_code == 200 and posted.json()["added"] == 3, posted.text
    python_home = tmp_path / "python"
    with busca.open(python_home) as corpus:
        assert corpus.add(objects).counts["added"] == 3
    assert _stored(jsonl_home) == _stored(server.home) == _stored(python_home) == _expected()


@pytest.mark.parametrize("item, message", BAD)
def test_a_bad_object_is_the_same_problem_every_way_in(tmp_path, server, item, message):
    """A date in no form busca reads was stored as text from a JSONL line (and then compared
    as text by --filter modified>=…), a number date or title was dropped silently; the API
    and Corpus.add refused some of them with other words."""
    good = GOOD[2][0]
    source = write_jsonl(tmp_path / "a.jsonl", [good, item])
    result = CliRunner().invoke(cli, ["--home", str(tmp_path / "jsonl"), "add", str(source)],
                                obj={})
    assert result.exit_code == 1 and "1 added" in result.stdout, result.output
    assert f"skipped {source}:2: {message}" in result.stderr, result.stderr
    answer = _post(server, {"documents": [good, item]})
    assert answer.status_code == 400, answer.text
    assert answer.json()["error"].startswith(f"document 2: {message}"), answer.text
    assert "Traceback" not in answer.text
    with busca.open(tmp_path / "python") as corpus:
        with pytest.raises(busca.errors.BadDocument) as raised:
            corpus.add([good, item])
        assert str(raised.value).startswith(f"document 2: {message}")
        assert corpus.home.count() == 0


def test_an_rfc_2822_date_is_filtered_as_a_date(tmp_path):
    """`--filter modified>=2024-01-01` compared the stored "Tue, 05 Dec 2023 …" as text
    ("T" > "2"): a 2023 post passed it."""
    home = tmp_path / "home"
    source = write_jsonl(tmp_path / "a.jsonl", [item for item, *_ in GOOD])
    for args in (["add", str(source)], ["index", "-q", "--methods", "bm25"]):
        done = CliRunner().invoke(cli, ["--home", str(home), *args], obj={})
        assert done.exit_code == 0, done.output
    found = CliRunner().invoke(cli, ["--home", str(home), "search", "reembolso", "--method",
                                     "bm25", "--json", "--no-log", "--min-score", "0",
                                     "--filter", "modified>=2024-01-01"], obj={})
    assert found.exit_code == 0, found.output
    hits = [json.loads(line) for line in found.stdout.splitlines()]
    assert {h["url"] for h in hits} == {"https://f.example/espaco", "d3"}


@pytest.mark.parametrize("raw, says", [
    ('{"url": "https://f.example/1", "text": "um"}\n{"url": "https://f.example/2", "text":'
     ' "dois"}\n', "the body is JSON Lines"),
    ('[{"url": "https://f.example/1", "text": "um"}]', "the body is a JSON list"),
    ('{"url": "https://f.example/1", "text": "um"}', "the body is one document"),
])
def test_a_body_of_documents_not_wrapped_says_how_to_wrap_them(server, raw, says):
    """A .jsonl file posted as it is got "the body is not valid JSON (Extra data: line 2 …)",
    one document "unknown field 'text' in the request"."""
    answer = _post(server, None, raw=raw)
    assert answer.status_code == 400, answer.text
    error = answer.json()["error"]
    assert error.startswith(says) and '{"documents": [{"url": …' in error, error
    assert "\n" not in error


def test_a_dict_without_groups_keeps_the_stored_ones_as_a_jsonl_line_does(tmp_path):
    """Corpus.add took Documents only: a dict read as a JSONL line is, one that leaves its
    groups out keeps those of its stored version (a private document never made public by an
    update), `"groups": []` makes it public."""
    first = {"url": "https://f.example/salarios", "text": "Reajuste em abril.",
             "groups": "staff"}
    with busca.open(tmp_path / "home") as corpus:
        corpus.add([first])
        changed = corpus.add([{"url": first["url"], "text": "Reajuste em maio."}])
        assert changed.counts["updated"] == 1
        assert corpus.home.get(first["url"]).meta == {"groups": ["staff"]}
        corpus.add([{"url": first["url"], "text": "Reajuste em maio.", "groups": []}])
        assert corpus.home.get(first["url"]).meta is None


def test_a_document_without_groups_keeps_the_stored_ones_as_a_dict_does(tmp_path):
    """Corpus.add of a busca.Document that leaves its groups out replaced the stored ones
    (a private document made public by an update in Python, where a dict, a JSONL line and
    POST /api/documents keep them); `meta={"groups": []}` makes it public."""
    url = "https://f.example/salarios"
    with busca.open(tmp_path / "home") as corpus:
        corpus.add([busca.Document(url, "Salários", "Reajuste em abril.",
                                   meta={"groups": ["staff"]})])
        corpus.add([busca.Document(url, "Salários", "Reajuste em maio.")])
        assert corpus.home.get(url).meta == {"groups": ["staff"]}
        corpus.add([busca.Document(url, "Salários", "Reajuste em maio.",
                                   meta={"groups": [], "tema": "rh"})])
        assert corpus.home.get(url).meta == {"tema": "rh"}
