import unicodedata

from busca.crawler.store import Document, Store, text_hash


def test_put_reports_added_updated_unchanged(tmp_path):
    store = Store(tmp_path)
    assert store.put(Document("u", "T", "texto")) == "added"
    assert store.put(Document("u", "T", "texto")) == "unchanged"
    assert store.put(Document("u", "T", "texto novo")) == "updated"
    assert store.put(Document("u", "Outro título", "texto novo")) == "updated"
    assert store.count() == 1
    assert store.get("u").text == "texto novo"


def test_text_is_nfc_normalised_and_hashed(tmp_path):
    store = Store(tmp_path)
    decomposed = unicodedata.normalize("NFD", "ação")
    store.put(Document("u", decomposed, decomposed))
    doc = store.get("u")
    assert doc.text == "ação" and doc.title == "ação"
    assert doc.sha256 == text_hash("ação")


def test_delete_and_reopen_keep_data(tmp_path):
    with Store(tmp_path) as store:
        store.put(Document("a", "A", "um"))
        store.put(Document("b", "B", "dois"))
        assert store.delete("a") and not store.delete("a")
    with Store(tmp_path) as store:
        assert [d.url for d in store.documents()] == ["b"]


def test_meta_round_trips_json(tmp_path):
    store = Store(tmp_path)
    store.set_meta("k", {"a": [1, 2]})
    assert store.get_meta("k") == {"a": [1, 2]}
    assert store.get_meta("missing", 7) == 7
