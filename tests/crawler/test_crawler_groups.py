"""Documents' groups (issue #26, access control): a JSONL `groups` key (a list or a comma
string) kept as a list; `busca add --groups` and `busca crawl --groups` stamp every document
they store, and an incremental crawl keeps them."""

from __future__ import annotations

import functools
import json
import time

import pytest
from click.testing import CliRunner
from conftest import write_jsonl

from busca.cli import cli
from busca.index import open_home
from busca.index.home.documents import Store
from busca.fixtures.server import FixtureSite, load_articles

FAST = ["--rate", "500"]


def _groups(home) -> dict[str, list[str] | None]:
    with Store(home) as store:
        return {d.url: (d.meta or {}).get("groups") for d in store.documents()}


def test_jsonl_groups_become_a_list_and_add_groups_stamps_them(run, home, tmp_path):
    source = write_jsonl(tmp_path / "docs.jsonl", [
        {"url": "https://a.example/1", "text": "um", "groups": "staff, hr,,staff"},
        {"url": "https://a.example/2", "text": "dois", "groups": ["sales"]},
        {"url": "https://a.example/3", "text": "três", "groups": ""},
        {"url": "https://a.example/4", "text": "quatro"}])
    assert run("add", str(source)).exit_code == 0
    assert _groups(home) == {"https://a.example/1": ["staff", "hr"],
                             "https://a.example/2": ["sales"], "https://a.example/3": None,
                             "https://a.example/4": None}
    result = run("add", str(source), "--groups", "board,staff")
    assert result.exit_code == 0  # a change of metadata alone is counted as such
    assert "0 added, 0 updated, 4 metadata updated, 0 unchanged; 4 documents" in result.stdout
    assert _groups(home) == {"https://a.example/1": ["staff", "hr", "board"],
                             "https://a.example/2": ["sales", "board", "staff"],
                             "https://a.example/3": ["board", "staff"],
                             "https://a.example/4": ["board", "staff"]}


def test_crawl_groups_stamps_every_document_and_an_incremental_crawl_keeps_them(run, home):
    with FixtureSite(load_articles()[:3]) as site:
        first = run("crawl", site.url, *FAST, "--groups", "staff")
        assert first.exit_code == 0, first.output
        assert set(map(tuple, _groups(home).values())) == {("staff",)}
        site.remove(site.articles[0]["id"])
        second = run("crawl", site.url, *FAST, "--groups", "staff", "--json")
    report = json.loads(second.stdout)
    assert (report["added"], report["updated"], report["unchanged"]) == (0, 0, 2)
    assert list(map(tuple, _groups(home).values())) == [("staff",), ("staff",)]


def test_a_crawl_with_groups_stamps_the_documents_it_finds_unchanged(run, home):
    """A site crawled public, then crawled with --groups staff: its unchanged posts (not
    fetched again) were left public and counted "unchanged"."""
    with FixtureSite(load_articles()[:3]) as site:
        assert run("crawl", site.url, *FAST).exit_code == 0
        site.edit(site.articles[0]["id"], content="<p>Texto novo do artigo.</p>")
        text = run("crawl", site.url, *FAST, "--groups", "staff")
        assert text.exit_code == 0, text.output
        assert "0 added, 1 updated, 2 metadata updated, 0 unchanged, 0 deleted" in text.stdout
        assert set(map(tuple, _groups(home).values())) == {("staff",)}
        again = run("crawl", site.url, *FAST, "--json")  # the groups remembered: all kept
    report = json.loads(again.stdout)
    assert (report["updated"], report["metadata_updated"], report["unchanged"]) == (0, 0, 3)
    assert set(map(tuple, _groups(home).values())) == {("staff",)}


@pytest.mark.postgres
def test_a_change_of_groups_alone_is_counted_on_a_postgresql_home(pg_home, tmp_path):
    """`busca add --groups` and `busca crawl --groups` over documents stored public: the
    same counts as on a local home."""
    invoke = functools.partial(CliRunner().invoke, cli, catch_exceptions=False, obj={})
    source = write_jsonl(tmp_path / "docs.jsonl", [
        {"url": "https://a.example/1", "text": "um"}, {"url": "https://a.example/2",
                                                       "text": "dois", "groups": "hr"}])
    assert invoke(["--home", pg_home, "add", str(source)]).exit_code == 0
    moved = invoke(["--home", pg_home, "add", str(source), "--groups", "staff"])
    assert "0 added, 0 updated, 2 metadata updated, 0 unchanged; 2 documents" in moved.stdout
    with FixtureSite(load_articles()[:2]) as site:
        assert invoke(["--home", pg_home, "crawl", site.url, *FAST]).exit_code == 0
        result = invoke(["--home", pg_home, "crawl", site.url, *FAST, "--groups", "staff",
                         "--json"])
    report = json.loads(result.stdout)
    assert (report["added"], report["metadata_updated"], report["unchanged"]) == (0, 2, 0)
    with open_home(pg_home) as store:
        assert {d.url: (d.meta or {}).get("groups") for d in store.documents()} == {
            "https://a.example/1": ["staff"], "https://a.example/2": ["hr", "staff"],
            **{site.link(a): ["staff"] for a in site.articles}}


def test_a_bad_group_name_is_bad_usage(run, tmp_path):
    source = write_jsonl(tmp_path / "docs.jsonl", [{"url": "https://a.example/1", "text": "x"}])
    result = run("add", str(source), "--groups", "staff,two words")
    assert result.exit_code == 2 and "bad group name 'two words'" in result.output
    assert "Traceback" not in result.output


def test_a_jsonl_group_name_that_groups_refuses_skips_its_line(run, home, tmp_path):
    """`"groups": "a b"` was stored as a group no tokens file can name."""
    source = write_jsonl(tmp_path / "docs.jsonl", [
        {"url": "https://a.example/1", "text": "um", "groups": "a b"},
        {"url": "https://a.example/2", "text": "dois", "meta": {"groups": ["ok", "x,y z"]}},
        {"url": "https://a.example/3", "text": "três", "groups": "staff,hr"}])
    result = run("add", str(source))
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert f"skipped {source}:1: \"groups\": bad group name 'a b': use letters" in result.output
    assert f"skipped {source}:2: \"groups\": bad group name 'y z'" in result.output
    assert _groups(home) == {"https://a.example/3": ["staff", "hr"]}


def test_jsonl_groups_changed_alone_are_stored(run, home, tmp_path):
    line = {"url": "https://a.example/1", "text": "um", "groups": "staff"}
    assert run("add", str(write_jsonl(tmp_path / "a.jsonl", [line]))).exit_code == 0
    again = write_jsonl(tmp_path / "b.jsonl", [{**line, "groups": "hr"}])
    assert run("add", str(again)).exit_code == 0
    assert _groups(home) == {"https://a.example/1": ["hr"]}


def test_a_recrawl_without_groups_keeps_stamping_the_remembered_ones(run, home):
    """A scheduled re-crawl without --groups must not turn a changed private article public:
    the groups of the URL's last crawl are stamped again, and `--groups none` forgets them."""
    with FixtureSite(load_articles()[:2]) as site:
        run("crawl", site.url, *FAST, "--groups", "staff")
        first = site.articles[0]
        site.edit(first["id"], content=first["content"].replace("</p>", " Novo.</p>", 1))
        again = run("crawl", site.url, *FAST)
        assert again.exit_code == 0
        assert "groups staff, remembered from the last crawl" in again.stderr
        assert set(map(tuple, _groups(home).values())) == {("staff",)}
        time.sleep(1.1)  # the modified date has whole seconds
        site.edit(first["id"], content=first["content"].replace("</p>", " Mais.</p>", 1))
        run("crawl", site.url, *FAST, "--groups", "none")
        changed = _groups(home)[site.link(first)]
        quiet = run("crawl", site.url, *FAST)
    assert changed is None and "remembered" not in quiet.stderr


def test_a_recrawl_under_another_spelling_of_the_start_url_keeps_the_groups(run, home):
    """The groups are remembered for the start URL as a site's address (scheme and host in
    any case, default port, an empty query), and a crawl that stamps none — another start
    URL of the same site — keeps a changed private article's groups: only `--groups none`
    makes documents public."""
    with FixtureSite(load_articles()[:2]) as site:
        run("crawl", site.url, *FAST, "--groups", "staff")
        first = site.articles[0]
        spelled = site.url.replace("http://", "HTTP://").rstrip("/") + "/?"
        site.edit(first["id"], content=first["content"].replace("</p>", " Novo.</p>", 1))
        again = run("crawl", spelled, *FAST)
        assert again.exit_code == 0, again.output
        assert "remembered from the last crawl" in again.stderr
        time.sleep(1.1)  # the modified date has whole seconds
        site.edit(first["id"], content=first["content"].replace("</p>", " Mais.</p>", 1))
        other = run("crawl", site.url + "wp-json/", *FAST, "--json")  # the same source
        assert other.exit_code == 0 and json.loads(other.stdout)["updated"] == 1, other.output
        assert _groups(home)[site.link(first)] == ["staff"]  # changed, kept private
        time.sleep(1.1)
        site.edit(first["id"], content=first["content"].replace("</p>", " Enfim.</p>", 1))
        run("crawl", site.url + "wp-json/", *FAST, "--groups", "none")
    assert _groups(home)[site.link(first)] is None


def test_an_empty_groups_in_meta_never_hides_the_line_s_groups(run, home, tmp_path):
    source = write_jsonl(tmp_path / "docs.jsonl", [
        {"url": "https://a.example/1", "text": "um", "groups": ["staff"], "meta": {"groups": ""}},
        {"url": "https://a.example/2", "text": "dois", "groups": "", "meta": {"groups": "hr"}}])
    assert run("add", str(source)).exit_code == 0
    assert _groups(home) == {"https://a.example/1": ["staff"], "https://a.example/2": ["hr"]}


def test_the_start_key_of_one_site_spelled_many_ways():
    from busca.crawler.groups import start_key

    same = ["http://h.example/", "HTTP://H.Example:80/", "http://h.example", "http://h.example/?",
            "http://h.example/#top", " http://h.example/ "]
    assert {start_key(u) for u in same} == {"http://h.example/"}
    assert start_key("https://h.example:8443/blog?x=1") == "https://h.example:8443/blog?x=1"
    assert start_key("http://[::1]:8080/") == "http://[::1]:8080/"
    assert start_key("http://h.example/Blog") != start_key("http://h.example/blog")


def test_groups_none_makes_public_what_the_crawl_stores_and_full_the_whole_site(run, home):
    """docs/filters.md said "only `--groups none` makes them public": an incremental crawl
    with --groups none leaves the documents it finds unchanged with their groups (only those
    it stores anew lose them); with --full it stores every one, and the site is public."""
    with FixtureSite(load_articles()[:3]) as site:
        assert run("crawl", site.url, *FAST, "--groups", "staff").exit_code == 0
        first = site.articles[0]
        site.edit(first["id"], content=first["content"].replace("</p>", " Novo.</p>", 1))
        partial = run("crawl", site.url, *FAST, "--groups", "none", "--json")
        assert partial.exit_code == 0, partial.output
        report = json.loads(partial.stdout)
        assert (report["updated"], report["unchanged"]) == (1, 2)
        groups = _groups(home)
        assert groups.pop(site.link(first)) is None
        assert set(map(tuple, groups.values())) == {("staff",)}  # unchanged: still staff's
        full = run("crawl", site.url, *FAST, "--groups", "none", "--full", "--json")
        assert full.exit_code == 0, full.output
        assert json.loads(full.stdout)["metadata_updated"] == 2
    assert set(_groups(home).values()) == {None}


def test_busca_add_again_without_groups_keeps_them(run, home, tmp_path):
    """README: "an update that leaves them out keeps them". `busca add` did not: an export
    added with --groups staff (or with a "groups" key), edited and added again without them,
    made the private posts public. Now they are kept, as a crawl and POST /api/documents keep
    them; a line's `"groups": []` or `busca add --groups none` makes them public."""
    posts = [{"url": "https://cms.example/salarios", "text": "Tabela de salários."},
             {"url": "https://cms.example/plano", "text": "Plano de cargos.", "groups": "hr"}]
    note = tmp_path / "notas" / "ata.md"
    note.parent.mkdir()
    note.write_text("# Ata\n\nReunião da diretoria.", encoding="utf-8")
    first = write_jsonl(tmp_path / "export.jsonl", posts)
    assert run("add", str(first), str(note.parent), "--groups", "staff").exit_code == 0
    edited = write_jsonl(tmp_path / "export.jsonl", [
        {**posts[0], "text": "Tabela de salários de 2025."},
        {"url": posts[1]["url"], "text": "Plano de cargos novo."}])
    note.write_text("# Ata\n\nReunião da diretoria, revista.", encoding="utf-8")
    again = run("add", str(edited), str(note.parent))
    assert again.exit_code == 0 and "0 added, 3 updated" in again.stdout, again.output
    assert _groups(home) == {posts[0]["url"]: ["staff"], posts[1]["url"]: ["hr", "staff"],
                             note.resolve().as_uri(): ["staff"]}
    public = write_jsonl(tmp_path / "public.jsonl", [{**posts[0], "groups": []}])
    assert run("add", str(public)).exit_code == 0
    assert _groups(home)[posts[0]["url"]] is None
    assert run("add", str(note.parent), "--groups", "none").exit_code == 0
    assert _groups(home)[note.resolve().as_uri()] is None
    assert _groups(home)[posts[1]["url"]] == ["hr", "staff"]
