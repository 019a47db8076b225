"""search/querylog.py and the store's `queries` table: the log, misses, the golden skeleton."""

import json
from datetime import datetime, timezone

import pytest

from busca.search import querylog as ql
from busca.index import LocalHome


@pytest.fixture
def store(tmp_path):
    s = LocalHome(tmp_path)
    yield s
    s.close()


def _log(store, query, *, scores=(), answered=False, at, method="tfidf", floor=0.2):
    store.log_query(command="search", query=query, method=method, k=3, scores=list(scores),
                    floor=floor, answered=answered, seconds=0.01, at=at)


def test_store_round_trips_a_logged_query(store):
    ql.record(store, command="context", query="Qual o prazo?", method="tfidf", k=3,
              scores=[0.5, 0.25], floor=0.3, answered=True, seconds=0.125)
    [entry] = ql.logged(store)
    assert (entry.command, entry.query, entry.method, entry.k) == ("context", "Qual o prazo?",
                                                                  "tfidf", 3)
    assert entry.scores == (0.5, 0.25) and entry.floor == 0.3 and entry.answered is True
    assert entry.seconds == pytest.approx(0.125)
    stamp = datetime.fromisoformat(entry.at)
    assert abs((datetime.now(timezone.utc) - stamp).total_seconds()) < 60


def test_the_setting_turns_logging_off_and_on(store):
    assert ql.is_enabled(store)
    ql.set_enabled(store, False)
    assert not ql.record(store, command="search", query="q", method="tfidf", k=3, scores=[],
                         floor=None, answered=False, seconds=0.0)
    assert ql.logged(store) == []
    ql.set_enabled(store, True)
    assert ql.record(store, command="search", query="q", method="tfidf", k=3, scores=[],
                     floor=None, answered=False, seconds=0.0)
    assert len(ql.logged(store)) == 1


def test_misses_group_wordings_most_frequent_first(store):
    _log(store, "Qual a senha do wifi?", scores=[0.1], at="2026-01-01T10:00:00+00:00")
    _log(store, "qual a  senha do WIFI? ", scores=[0.15, 0.05], at="2026-01-02T10:00:00+00:00")
    _log(store, "xilofone", at="2026-01-03T10:00:00+00:00")
    _log(store, "prazo do reembolso", scores=[0.9], answered=True, at="2026-01-04T10:00:00+00:00")
    _log(store, "horário do chat", scores=[0.05], at="2026-01-05T10:00:00+00:00",
         method="bm25")
    found = ql.misses(store)
    assert [(m.query, m.count) for m in found] == [
        ("qual a  senha do WIFI?", 2), ("horário do chat", 1), ("xilofone", 1)]
    wifi = found[0]
    assert wifi.best == 0.15 and wifi.reason == "low scores"
    assert (wifi.first, wifi.last) == ("2026-01-01T10:00:00+00:00", "2026-01-02T10:00:00+00:00")
    assert found[1].methods == ("bm25",)
    assert found[2].best is None and found[2].reason == "nothing found"


def test_misses_since_a_date(store):
    _log(store, "antiga", at="2025-12-31T23:59:59+00:00")
    _log(store, "nova", at="2026-01-01T00:00:00+00:00")
    since = datetime(2026, 1, 1, tzinfo=timezone.utc)
    assert [m.query for m in ql.misses(store, since=since)] == ["nova"]
    assert {m.query for m in ql.misses(store)} == {"antiga", "nova"}


def test_below_also_counts_answered_questions_with_weak_scores(store):
    _log(store, "fraca", scores=[0.12, 0.1], answered=True, at="2026-01-01T00:00:00+00:00",
         floor=None)
    _log(store, "forte", scores=[0.8], answered=True, at="2026-01-01T00:00:01+00:00",
         floor=None)
    assert ql.misses(store) == []
    assert [m.query for m in ql.misses(store, below=0.5)] == ["fraca"]


def test_question_key_ignores_case_spacing_and_unicode_form():
    composed, decomposed = "Informação", "Informac\u0327a\u0303o"
    assert ql.question_key(f"  {composed}   sobre X ") == ql.question_key(f"{decomposed} sobre x")
    assert ql.question_key("a b") != ql.question_key("ab")
    # fullwidth letters (an East Asian keyboard's) are the plain ones: they were apart
    assert ql.question_key("Ｘｉｌｏｆｏｎｅ") == ql.question_key("xilofone")


def test_a_miss_asked_with_two_methods_keeps_the_last_methods_best_score(store):
    """bm25 scores and cosines are on other scales: the max of both meant nothing (6.97
    shown beside a --below of 0.2)."""
    _log(store, "xilofone", scores=[6.97], at="2026-01-01T10:00:00+00:00", method="bm25")
    _log(store, "xilofone", scores=[0.12], at="2026-01-02T10:00:00+00:00", method="tfidf")
    miss, = ql.misses(store)
    assert miss.methods == ("bm25", "tfidf") and miss.best == 0.12 and miss.count == 2


def test_golden_skeleton_is_the_seed_format_and_round_trips(store, tmp_path):
    _log(store, "Qual a senha do wifi?", scores=[0.1], at="2026-01-01T10:00:00+00:00")
    _log(store, "Tem estacionamento?", at="2026-01-01T11:00:00+00:00")
    found = ql.misses(store)
    path = tmp_path / "golden.json"
    assert ql.write_golden(path, found) == 2
    items = json.loads(path.read_text(encoding="utf-8"))
    assert items == [{"pergunta": "Tem estacionamento?", "trecho": ""},
                     {"pergunta": "Qual a senha do wifi?", "trecho": ""}]
    assert path.read_text(encoding="utf-8").count("\n") == 4  # one question per line
    with pytest.raises(FileExistsError, match="already exists"):
        ql.write_golden(path, found)
    assert list(tmp_path.glob("golden.json.tmp-*")) == []


def test_prune_forgets_the_questions_older_than_days(store):
    """A public site's log grows with every visitor's question: `prune` keeps the last days."""
    _log(store, "antiga", at="2026-01-01T09:59:59+00:00")
    _log(store, "limite", at="2026-01-01T10:00:00+00:00")
    _log(store, "nova", at="2026-01-30T10:00:00+00:00")
    now = datetime(2026, 1, 31, 10, 0, 0, tzinfo=timezone.utc)
    assert ql.prune(store, 30, now=now) == 1
    assert [e.query for e in ql.logged(store)] == ["limite", "nova"]
    assert ql.prune(store, 30, now=now) == 0
    assert ql.prune(store, 0, now=now) == 2 and ql.logged(store) == []
    with pytest.raises(ValueError, match="days"):
        ql.prune(store, -1)
