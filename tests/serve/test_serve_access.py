"""Access control of `busca serve --tokens` (issue #26) over real HTTP: two read tokens,
documents of different groups and public ones; neither token ever sees the other's documents
through any endpoint (search, compare, context, chunk ids guessed one by one, stats, the
page), a request without a token sees the public ones only, `--private` hides those too, the
write token sees everything; bad tokens files are one line; tokens are never logged."""

from __future__ import annotations

import base64
import json
from urllib.error import HTTPError
from urllib.parse import urlencode
from urllib.request import Request, urlopen

import pytest
from click.testing import CliRunner
from conftest import lexical_home_of, write_jsonl
from serving import Server

from busca.cli import cli
from busca.serve import access

STAFF, SALES = "staff-token-0123456789abcdef", "sales-token-0123456789abcdef"
WRITER = "writer-token-0123456789abcdef"
WORD = "março"  # in every document
DOCS = [
    {"url": "https://s.example/salarios", "title": "Salários da gerência", "groups": "staff",
     "text": "O reajuste dos salários da gerência sai em março."},
    {"url": "https://s.example/comissao", "title": "Comissão dos vendedores",
     "groups": ["sales"], "text": "A comissão dos vendedores sobe em março."},
    {"url": "https://s.example/ferias", "title": "Calendário de férias", "groups": "staff,board",
     "text": "O calendário de férias da diretoria sai em março."},
    {"url": "https://s.example/horario", "title": "Horário da loja",
     "category": "<script>alert(1)</script>",
     "text": "O horário da loja muda em março para o verão."},
    {"url": "https://s.example/segredo", "title": "<b>Segredo</b> do conselho",
     "groups": "board", "text": "O orçamento do conselho fecha em março."},
]
PUBLIC = {"https://s.example/horario"}
SEES = {None: PUBLIC,
        STAFF: PUBLIC | {"https://s.example/salarios", "https://s.example/ferias"},
        SALES: PUBLIC | {"https://s.example/comissao"}}
ONLY = {"https://s.example/salarios": "salários", "https://s.example/comissao": "comissão",
        "https://s.example/ferias": "calendário", "https://s.example/horario": "horário",
        "https://s.example/segredo": "orçamento"}  # a word of that document alone
ALL = {d["url"] for d in DOCS}


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    return lexical_home_of(tmp_path_factory.mktemp("access") / "home", DOCS)


@pytest.fixture(scope="module")
def tokens_file(home):
    path = home.parent / "tokens.txt"
    path.write_text(f"# who reads what\n{STAFF} staff\n\n{SALES} sales,nobody\n",
                    encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def server(home, tokens_file):
    with Server(home, "--no-log", "--tokens", str(tokens_file), "--token", WRITER) as server:
        yield server


def get(server, path: str, token: str | None = None, *, basic: bool = False, data=None):
    """(status, body text, headers) of one request."""
    headers = {"Content-Type": "application/json"} if data is not None else {}
    if token is not None:
        headers["Authorization"] = ("Basic " + base64.b64encode(f"me:{token}".encode()).decode()
                                    if basic else f"Bearer {token}")
    request = Request(server.url + path.lstrip("/"), headers=headers,
                      data=json.dumps(data).encode() if data is not None else None)
    try:
        with urlopen(request, timeout=60) as response:
            return response.status, response.read().decode(), response.headers
    except HTTPError as e:
        return e.code, e.read().decode(), e.headers


def search_urls(server, token, q: str, method: str) -> set[str]:
    status, text, _ = get(server, "api/search?" + urlencode({"q": q, "method": method, "k": 10,
                                                             "min_score": 0}), token)
    assert status == 200, text
    return {h["url"] for h in json.loads(text)["hits"]}


@pytest.mark.parametrize("token", [None, STAFF, SALES])
@pytest.mark.parametrize("method", ["tfidf", "bm25"])
def test_search_shows_only_what_the_token_may_see(server, token, method):
    if method == "bm25":  # tf-idf weighs a word of every document 0
        assert search_urls(server, token, WORD, method) == SEES[token]
    for url, word in ONLY.items():
        assert search_urls(server, token, word, method) == ({url} & SEES[token])


@pytest.mark.parametrize("method", ["tfidf", "bm25"])
def test_a_word_of_a_hidden_document_answers_as_a_word_of_none(server, method):
    def answer(q):
        text = get(server, "api/search?" + urlencode({"q": q, "method": method}), SALES)[1]
        found = json.loads(text)
        return {k: v for k, v in found.items() if k not in ("question", "query", "took_ms")}

    assert answer("salários") == answer("xilofone")
    for q in ("salários", "xilofone"):
        context = json.loads(get(server, "api/context", SALES, data={"q": q})[1])
        assert context["reason"] == answer("xilofone")["note"]
        compare = json.loads(get(server, "api/compare?" + urlencode({"q": q}), SALES)[1])
        assert set(compare["notes"].values()) == {answer("xilofone")["note"]}


@pytest.mark.parametrize("token", [None, STAFF, SALES])
def test_compare_and_context_show_only_what_the_token_may_see(server, token):
    status, text, _ = get(server, "api/compare?" + urlencode({"q": WORD, "k": 10,
                                                               "methods": "bm25"}), token)
    data = json.loads(text)
    assert status == 200
    assert {h["url"] for hits in data["columns"].values() for h in hits} == SEES[token]
    assert {r["url"] for r in data["rows"]} == SEES[token]
    for url, word in ONLY.items():
        status, text, _ = get(server, "api/context", token, data={"q": word, "min_score": 0})
        if url in SEES[token]:
            assert status == 200 and json.loads(text)["passages"][0]["url"] == url
        else:
            assert status == 409 and url not in text and "reason" in json.loads(text)


@pytest.mark.parametrize("token", [None, STAFF, SALES])
def test_a_forbidden_chunk_id_answers_exactly_as_a_missing_one(server, token):
    chunks = json.loads(get(server, "api/stats", WRITER)[1])["chunks"]
    seen = set()
    for chunk_id in range(chunks + 3):
        status, text, _ = get(server, f"api/chunk/{chunk_id}", token)
        if status == 200:
            seen.add(json.loads(text)["url"])
        else:
            assert (status, json.loads(text)) == (404, {
                "error": f"no chunk {chunk_id} in the live index", "status": 404})
    assert seen == SEES[token]


@pytest.mark.parametrize("token", [None, STAFF, SALES])
def test_stats_count_only_what_the_token_may_see(server, token):
    status, text, _ = get(server, "api/stats", token)
    stats = json.loads(text)
    assert status == 200 and stats["restricted"] is True
    assert (stats["documents"], stats["chunks"]) == (len(SEES[token]), len(SEES[token]))
    groups = set(stats.get("facets", {}).get("groups", {}).get("top", {}))
    assert groups == {None: set(), STAFF: {"staff", "board"}, SALES: {"sales"}}[token]
    assert "words" not in stats and "vocabulary" not in json.dumps(stats)


def test_the_write_token_sees_everything(server):
    assert search_urls(server, WRITER, WORD, "bm25") == ALL
    stats = json.loads(get(server, "api/stats", WRITER)[1])
    assert stats["documents"] == len(ALL) and "restricted" not in stats


@pytest.mark.parametrize("token", [None, STAFF, SALES])
@pytest.mark.parametrize("method", ["bm25", "compare"])
def test_the_page_shows_only_what_the_token_may_see(server, token, method):
    for q in [WORD, *ONLY.values()]:
        status, html, _ = get(server, "?" + urlencode({"q": q, "method": method}), token)
        assert status == 200
        for url in ALL - SEES[token]:
            assert url not in html
        if q == WORD:
            assert all(url in html for url in SEES[token])


def test_the_page_escapes_metadata_and_titles(server):
    status, html, _ = get(server, "?" + urlencode({"q": "horário", "method": "bm25"}))
    assert status == 200 and "https://s.example/horario" in html
    assert "<script>alert(1)" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    status, html, _ = get(server, "?" + urlencode({"q": "orçamento", "method": "bm25"}),
                          WRITER)
    assert "<b>Segredo" not in html and "&lt;b&gt;Segredo&lt;/b&gt;" in html
    assert "groups: board" in html


def test_an_unknown_token_is_refused_and_no_token_is_ever_logged(server):
    for auth in ("Bearer not-a-token-of-this-server", "Token x", "Basic !!!"):
        request = Request(server.url + "api/search?q=mar%C3%A7o",
                          headers={"Authorization": auth})
        with pytest.raises(HTTPError) as caught:
            urlopen(request, timeout=30)
        body = json.loads(caught.value.read())
        assert caught.value.code == 401 and "not-a-token" not in body["error"]
    get(server, "api/search?q=x", STAFF)
    get(server, "api/search?q=x", SALES, basic=True)
    log = "".join(server.stderr)
    assert "GET /api/search" in log
    for secret in (STAFF, SALES, WRITER, "not-a-token"):
        assert secret not in log


@pytest.mark.parametrize("path,data", [("api/search?q=x", None), ("api/compare?q=x", None),
                                       ("api/context", {"q": "x"}), ("api/stats", None),
                                       ("api/chunk/0", None), ("?q=x", None),
                                       ("api/index", {})])
def test_a_401_names_the_bearer_scheme(server, path, data):
    """RFC 6750 §3 (and RFC 9110: every 401 carries a challenge): an unknown read token got a
    401 without WWW-Authenticate, where the write endpoints and busca mcp --http said
    Bearer; one challenge for all of them."""
    status, _, headers = get(server, path, "not-a-token-of-this-server-0001", data=data)
    assert status == 401 and headers["WWW-Authenticate"] == 'Bearer realm="busca"'


def test_the_openapi_document_declares_each_401s_challenge(server):
    """Every 401 says which scheme to send (above), but /openapi.json declared no header for
    them: a generated client could not know Bearer from Basic. Each documented 401 now
    declares WWW-Authenticate, with the scheme the server answers (Basic for /login)."""
    status, text, _ = get(server, "openapi.json")
    assert status == 200
    documented = [(path, method, op["responses"]["401"])
                  for path, ops in json.loads(text)["paths"].items()
                  for method, op in ops.items() if "401" in op.get("responses", {})]
    assert {"/api/search", "/api/documents", "/login"} <= {path for path, _, _ in documented}
    for path, method, answer in documented:
        pattern = answer["headers"]["WWW-Authenticate"]["schema"]["pattern"]
        assert pattern == ("^Basic " if path == "/login" else "^Bearer "), (path, method)


def test_a_browser_signs_in_with_basic_auth(server):
    status, text, headers = get(server, "login")
    assert status == 401 and headers["WWW-Authenticate"].startswith("Basic ")
    assert get(server, "login", SALES, basic=True)[0] == 200  # 303, then the page
    assert get(server, "login", "wrong-token-0123456789", basic=True)[0] == 401
    # a browser shows a page, not JSON (a user who cancelled the dialog read raw JSON;
    # "unknown token" was said when none was sent)
    assert headers["content-type"].startswith("text/html") and "sign in with one" in text
    for path, token, status, words in (
            ("login", "wrong-token-0123456789", 401, "unknown token: sign in"),
            ("?q=x", "wrong-token-0123456789", 401, "unknown token"),
            ("eval", STAFF, 403, "the eval page answers only the write token")):
        got, text, headers = get(server, path, token, basic=path != "eval")
        assert got == status and headers["content-type"].startswith("text/html"), text
        assert words in text and "<!doctype html>" in text
    status, html, _ = get(server, "?" + urlencode({"q": "comissão", "method": "bm25"}), SALES,
                          basic=True)
    assert "https://s.example/comissao" in html


def test_a_browser_is_told_how_to_sign_in(server, home):
    """The page a browser opens without a token shows the public documents only: it says so
    and links /login (nothing told a person that signing in exists); /eval's refusal names
    /login too (a browser cannot send a Bearer header)."""
    sign_in = '<a href="./login">sign in</a>'
    for path in ("", "?" + urlencode({"q": WORD, "method": "bm25"})):
        status, html, _ = get(server, path)
        assert status == 200 and sign_in in html and "public documents only" in html
        assert sign_in not in get(server, path, STAFF, basic=True)[1]
        assert sign_in not in get(server, path, WRITER)[1]
    status, html, _ = get(server, "eval")
    assert status == 403 and "sign in at /login with it as the password" in html
    with Server(home, "--no-log", "--quiet") as open_server:  # no --tokens: nothing to say
        assert sign_in not in get(open_server, "")[1]


def test_health_eval_and_the_openapi_document(server):
    health = json.loads(get(server, "healthz")[1])
    assert health["status"] == "ok" and "chunks" not in health
    assert get(server, "eval", STAFF)[0] == 403
    document = json.loads(get(server, "openapi.json")[1])
    assert set(document["components"]["securitySchemes"]) == {"bearer", "basic"}
    search = document["paths"]["/api/search"]["get"]
    assert search["security"] == [{"bearer": []}, {"basic": []}, {}]
    assert "401" in search["responses"] and "--tokens" in document["info"]["description"]


def test_busca_search_on_the_home_does_not_ask_a_server_with_tokens(server, home):
    assert not (home / "serve.json").exists()
    result = CliRunner().invoke(cli, ["--home", str(home), "search", "salários", "--json",
                                      "--no-log"], obj={})
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout.splitlines()[0])["url"] == "https://s.example/salarios"


def test_private_hides_documents_without_groups(home, tokens_file):
    with Server(home, "--no-log", "--tokens", str(tokens_file), "--private") as server:
        assert search_urls(server, None, WORD, "bm25") == set()
        assert json.loads(get(server, "api/stats")[1])["documents"] == 0
        assert search_urls(server, STAFF, WORD, "bm25") == SEES[STAFF] - PUBLIC
        assert get(server, "api/chunk/3")[0] == 404


@pytest.mark.parametrize("extra", [(), ("--token", WRITER)], ids=["read-only", "writer"])
def test_without_tokens_a_home_with_groups_warns_every_document_is_shown(home, tokens_file,
                                                                        extra):
    """busca serve without --tokens shows the private documents to every request, as busca
    mcp --http does: it says so on start, naming --tokens (it said nothing); with --tokens it
    says how many read tokens it loaded. The busy port stops it after the notice."""
    import socket

    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen(1)
        port = str(held.getsockname()[1])
        runs = [CliRunner().invoke(cli, ["--home", str(home), "serve", "--port", port, *extra,
                                         *more], obj={})
                for more in ((), ("--tokens", str(tokens_file)))]
    bare, gated = runs
    assert bare.exit_code == gated.exit_code == 1
    assert "warning: this home has documents with groups" in bare.stderr
    assert "busca serve --tokens FILE" in bare.stderr
    assert "warning: this home has documents with groups" not in gated.stderr
    assert "2 read tokens loaded" in gated.stderr
    assert STAFF not in gated.stderr + gated.stdout


def test_a_token_group_that_matches_stored_groups_only_in_case_is_warned_about(home,
                                                                                tmp_path):
    """Group names are compared exactly: a token of `Staff` sees none of `staff`'s documents
    (docs/filters.md). busca serve said nothing; it warns, naming both spellings, and not
    for a group no document has in any case ("nobody")."""
    import socket

    path = tmp_path / "tokens.txt"
    path.write_text(f"{STAFF} Staff,STAFF\n{SALES} sales,nobody\n", encoding="utf-8")
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen(1)
        port = str(held.getsockname()[1])
        result = CliRunner().invoke(cli, ["--home", str(home), "serve", "--port", port,
                                          "--tokens", str(path)], obj={})
    assert result.exit_code == 1 and "2 read tokens loaded" in result.stderr
    for given in ("Staff", "STAFF"):
        assert (f"warning: the tokens file gives the group '{given}', which no document has;"
                " documents have 'staff': group names are case-sensitive, write it as the"
                " documents do") in result.stderr
    assert "'sales'" not in result.stderr and "nobody" not in result.stderr
    assert STAFF not in result.stderr + result.stdout


BAD = [
    ("short-12345 staff\n", "line 1: the token is shorter than 16 characters"),
    (f"{STAFF}\n", "line 1: write TOKEN GROUP[,GROUP…]"),
    (f"{STAFF} staff hr\n", "line 1: write TOKEN GROUP[,GROUP…]"),
    (f"# a\n{STAFF} staff\n{STAFF} sales\n", "line 3: the same token as line 2"),
    (f"{STAFF} staff,<b>\n", "line 1: bad group name '<b>'"),
    ("# only a comment\n", "no tokens in it"),
    (f"{WRITER} staff\n", "line 1: this is the --token (write) token"),
    (b"\xff\xfe", "cannot read the tokens file"),
]


@pytest.mark.parametrize("content, message", BAD)
def test_a_bad_tokens_file_is_one_line(home, tmp_path, content, message):
    path = tmp_path / "tokens.txt"
    (path.write_bytes if isinstance(content, bytes) else path.write_text)(content)
    result = CliRunner().invoke(cli, ["--home", str(home), "serve", "--port", "0", "--tokens",
                                      str(path), "--token", WRITER], obj={})
    assert result.exit_code == 1, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0] and "Traceback" not in result.output
    assert STAFF not in result.stderr and WRITER not in result.stderr


def test_tokens_refusals_before_listening(home, tmp_path):
    missing = CliRunner().invoke(cli, ["--home", str(home), "serve", "--tokens",
                                       str(tmp_path / "none.txt")], obj={})
    assert missing.exit_code == 1 and "cannot read the tokens file" in missing.stderr
    private = CliRunner().invoke(cli, ["--home", str(home), "serve", "--private"], obj={})
    assert private.exit_code == 2 and "needs --tokens FILE" in private.stderr


def test_the_documented_tokens_file_loads(tmp_path):
    from test_docs_integrations import block
    from conftest import REPO

    text = block(REPO / "README.md", "tokens")
    assert text in (REPO / "docs" / "serve.md").read_text(encoding="utf-8")
    path = tmp_path / "tokens.txt"
    path.write_text(text, encoding="utf-8")
    rules = access.load(path)
    assert [sorted(r.groups) for r in rules.readers] == [["staff"], ["sales", "support"]]
    staff = rules.rule("Bearer " + text.splitlines()[1].split()[0])
    assert staff.admits({"groups": ["staff"]}) and staff.admits(None)
    assert not staff.admits({"groups": "sales,support"})


@pytest.mark.parametrize("token", [None, STAFF, SALES])
def test_the_page_facets_count_only_what_the_token_may_see(server, token):
    """The page's facets: the counts of the documents this token may see, escaped."""
    status, html, _ = get(server, "?" + urlencode({"q": WORD, "method": "bm25"}), token)
    assert status == 200 and 'id="facets"' in html
    panel = html[html.index('id="facets"'):]
    groups = {None: set(), STAFF: {"staff", "board"}, SALES: {"sales"}}[token]
    for name in ("staff", "board", "sales"):
        assert (f'data-filter="groups={name}"' in panel) == (name in groups)
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in panel and "<script>alert" not in panel
    status, html, _ = get(server, "?" + urlencode([("q", WORD), ("method", "bm25"),
                                                  ("filter", "groups=board")]), token)
    shown = {u for u in ALL if u in html.split('id="hits"')[-1]}
    assert status == 200 and shown == {u for u in SEES[token]
                                       if u in ("https://s.example/ferias",)}


def test_a_changed_hidden_document_answers_its_chunk_id_as_a_missing_one(tmp_path, tokens_file):
    """A document changed in the store since the build makes its chunk a 409 naming its URL:
    only to who may see it; to anyone else the id answers exactly as a missing one."""
    home = tmp_path / "home"
    source = write_jsonl(tmp_path / "docs.jsonl", DOCS)
    changed = write_jsonl(tmp_path / "changed.jsonl", [
        {**DOCS[0], "text": "O reajuste dos salários da gerência sai em abril."}])
    for args in (["add", str(source)], ["index", "-q", "--methods", "bm25"],
                 ["add", str(changed)]):
        result = CliRunner().invoke(cli, ["--home", str(home), *args], obj={})
        assert result.exit_code == 0, result.output
    with Server(home, "--no-log", "--tokens", str(tokens_file), "--token", WRITER) as server:
        chunks = json.loads(get(server, "api/stats", WRITER)[1])["chunks"]
        stale = [i for i in range(chunks) if get(server, f"api/chunk/{i}", WRITER)[0] == 409]
        assert len(stale) == 1
        for token in (None, SALES):
            status, text, _ = get(server, f"api/chunk/{stale[0]}", token)
            assert (status, json.loads(text)) == (404, {
                "error": f"no chunk {stale[0]} in the live index", "status": 404})
        status, text, _ = get(server, f"api/chunk/{stale[0]}", STAFF)
        assert status == 409 and "https://s.example/salarios" in text


def test_groups_changed_or_added_through_the_api_show_at_once_to_the_right_tokens(tmp_path,
                                                                                 tokens_file):
    """Each request is filtered by its reader's rule, whose mask is kept between requests:
    a document's new groups, a new private document, a removed one show at once, to its
    group's token only."""
    home = lexical_home_of(tmp_path / "home", DOCS)
    salarios, novo = "https://s.example/salarios", "https://s.example/novo"

    def post(path, data, method="POST"):
        request = Request(server.url + path, method=method, data=json.dumps(data).encode(),
                          headers={"Authorization": f"Bearer {WRITER}",
                                   "Content-Type": "application/json"})
        with urlopen(request, timeout=60) as response:
            return json.loads(response.read())

    def seen(token):
        return search_urls(server, token, WORD, "bm25"), json.loads(
            get(server, "api/stats", token)[1])["documents"]

    with Server(home, "--no-log", "--tokens", str(tokens_file), "--token", WRITER) as server:
        for _ in range(2):  # the masks of both readers kept
            assert seen(STAFF)[0] == SEES[STAFF] and seen(SALES)[0] == SEES[SALES]
        moved = {**DOCS[0], "groups": ["sales"]}
        assert post("api/documents", {"documents": [moved]})["metadata_updated"] == 1
        assert seen(STAFF) == (SEES[STAFF] - {salarios}, 2)
        assert seen(SALES) == (SEES[SALES] | {salarios}, 3)
        added = {"url": novo, "title": "Bônus", "groups": ["staff"],
                 "text": "O bônus da gerência sai em março."}
        assert post("api/documents", {"documents": [added]})["added"] == 1
        assert seen(STAFF) == (SEES[STAFF] - {salarios}, 2)  # stored, not indexed yet
        post("api/index", {})
        assert seen(STAFF) == (SEES[STAFF] - {salarios} | {novo}, 3)
        assert seen(SALES) == (SEES[SALES] | {salarios}, 3) and seen(None) == (PUBLIC, 1)
        post("api/documents", {"urls": [salarios]}, method="DELETE")
        assert seen(SALES) == (SEES[SALES], 2)
        assert seen(STAFF)[0] == SEES[STAFF] - {salarios} | {novo}


def test_a_tokens_file_saved_with_a_bom_keeps_its_first_token(tmp_path):
    """Notepad writes a BOM: it is no part of the first token (whose reader got 401)."""
    path = tmp_path / "tokens.txt"
    for text in (f"{STAFF} staff\n{SALES} sales\n", f"# readers\n{STAFF} staff\n"):
        path.write_text("\ufeff" + text, encoding="utf-8")
        readers = access.load(path).readers
        assert readers[0].token == STAFF.encode() and readers[0].groups == {"staff"}


def test_documents_posted_with_groups_and_meta_and_an_update_keeps_the_groups(tmp_path,
                                                                              tokens_file):
    """POST /api/documents takes a document's groups and metadata as busca add's JSONL does;
    an update that leaves groups out keeps the stored ones (it made a private document public),
    `"groups": []` makes it public; bad groups or meta are a 400 naming the fix."""
    home = tmp_path / "home"
    source = write_jsonl(tmp_path / "docs.jsonl", DOCS)
    for args in (["add", str(source)], ["index", "-q", "--methods", "bm25"]):
        assert CliRunner().invoke(cli, ["--home", str(home), *args], obj={}).exit_code == 0
    salarios = {**DOCS[0], "text": "O reajuste dos salários da gerência sai em abril."}
    del salarios["groups"]
    new = {"url": "https://s.example/novo", "title": "Novo", "text": "Plano de saúde em março.",
           "groups": ["sales"], "meta": {"category": "RH"}}

    def post(server, *documents):
        return get(server, "api/documents", WRITER, data={"documents": list(documents)})

    with Server(home, "--no-log", "--tokens", str(tokens_file), "--token", WRITER) as server:
        assert post(server, salarios, new)[0] == 200
        assert get(server, "api/index", WRITER, data={})[0] == 200
        assert search_urls(server, None, "abril", "bm25") == set()  # still staff's alone
        assert search_urls(server, STAFF, "abril", "bm25") == {"https://s.example/salarios"}
        assert search_urls(server, SALES, "saúde", "bm25") == {"https://s.example/novo"}
        status, text, _ = get(server, "api/search?" + urlencode(
            {"q": "saúde", "method": "bm25", "filter": "category=RH"}), SALES)
        assert status == 200 and json.loads(text)["hits"][0]["meta"]["category"] == "RH"
        status, text, _ = post(server, {**salarios, "groups": []})
        assert status == 200 and json.loads(text)["metadata_updated"] == 1, text  # made public
        assert get(server, "api/index", WRITER, data={})[0] == 200
        assert search_urls(server, None, "abril", "bm25") == {"https://s.example/salarios"}
        for bad, message in ((["two words"], "bad group name"), ("a b", "bad group name"),
                             ({"x": 1}, "list of names"), ([1], "list of names")):
            status, text, _ = post(server, {**new, "groups": bad})
            assert status == 400 and message in json.loads(text)["error"], text
        for bad in ("RH", ["RH"]):
            status, text, _ = post(server, {**new, "meta": bad})
            assert status == 400 and "meta must be an object" in json.loads(text)["error"], text


def test_stats_say_nothing_of_hidden_documents_a_dense_model_was_built_on(tmp_path, tokens_file):
    """A reader's /api/stats are those of the same home without the documents it may not
    see: a method entry's build figures (how many windows a dense model encoded, reused,
    cached, truncated) counted every chunk, and an openai:MODEL entry's `probe` kept the text
    of the home's shortest chunk — a hidden one's, shown to any reader (and to no token)."""
    from embed_servers import FaultyServer

    import busca

    secret = {"url": "https://s.example/curto", "title": "Curto", "groups": "board",
              "text": "Demitir Ana em maio."}  # the shortest chunk: the model's probe
    public = [d for d in DOCS if not d.get("groups")]

    def restricted(docs, name, embed_url):
        home = tmp_path / name / "home"
        with busca.open(home, embed={"url": embed_url}) as corpus:
            corpus.add(docs)
            corpus.index(methods=["tfidf", "bm25"], dense="openai:fake-model")
        with Server(home, "--no-log", "--tokens", str(tokens_file),
                    "--embed-url", embed_url) as server:
            shown = {token: json.loads(get(server, "api/stats", token)[1])
                     for token in (None, SALES)}
        for stats in shown.values():
            del stats["build"]
            stats["methods"]["dense"].pop("chunks_per_second", None)  # the build's speed
        return shown

    with FaultyServer() as embeddings:
        whole = restricted([*DOCS, secret], "whole", embeddings.url)
        assert secret["text"] not in json.dumps(whole, ensure_ascii=False)
        assert whole == restricted(public + [d for d in DOCS if d.get("groups") == ["sales"]],
                                   "seen", embeddings.url)
