import unicodedata

from busca.crawler.store import ChunkRow, Document, Store, text_hash


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


def test_chunk_rows_per_build(tmp_path):
    store = Store(tmp_path)
    store.write_chunks("b1", [ChunkRow(0, "u", 0, 0, 5, "h"), ChunkRow(1, "u", 1, 3, 9, "h")])
    store.write_chunks("b2", [ChunkRow(0, "v", 0, 0, 2)])
    assert [r.id for r in store.chunks("b1", [1, 0])] == [1, 0]
    store.drop_builds_except("b2")
    assert store.chunks("b1") == [] and len(store.chunks("b2")) == 1


def test_meta_round_trips_json(tmp_path):
    store = Store(tmp_path)
    store.set_meta("k", {"a": [1, 2]})
    assert store.get_meta("k") == {"a": [1, 2]}
    assert store.get_meta("missing", 7) == 7
