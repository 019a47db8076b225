import sqlite3
import unicodedata

from busca.crawler.store import Document, text_hash
from busca.index.home.documents import Store


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


def test_metadata_is_stored_as_json_and_a_change_rewrites_it(tmp_path):
    with Store(tmp_path) as store:
        doc = Document("https://s.example/a", "A", "texto", "mediawiki",
                       meta={"tags": ["x"], "language": "pt"})
        assert store.put(doc) == "added"
        assert store.get(doc.url).meta == {"tags": ["x"], "language": "pt"}
        assert store.put(doc) == "unchanged"
        assert store.put(Document(doc.url, "A", "texto", "mediawiki", meta={"tags": ["y"]})) \
            == "metadata_updated"  # same text and title: not re-indexed, the metadata is new
        assert next(store.documents()).meta == {"tags": ["y"]}
        assert store.put(Document(doc.url, "A", "texto", "mediawiki", "2024-05-01T10:00:00",
                                  meta={"tags": ["y"]})) == "metadata_updated"  # its date
        assert store.get(doc.url).modified == "2024-05-01T10:00:00"


def test_a_home_made_before_metadata_gains_the_column(tmp_path):
    db = sqlite3.connect(tmp_path / "busca.db")
    db.executescript("CREATE TABLE documents (url TEXT PRIMARY KEY, title TEXT NOT NULL,"
                     " text TEXT NOT NULL, source TEXT NOT NULL DEFAULT '', modified TEXT,"
                     " sha256 TEXT NOT NULL, fetched_at TEXT NOT NULL);"
                     "INSERT INTO documents VALUES ('u', 't', 'x', 'file', NULL, 'h', 'now');")
    db.close()
    with Store(tmp_path) as store:
        assert store.get("u").meta is None
        store.put(Document("v", "t", "y", meta={"page": 3}))
        assert store.get("v").meta == {"page": 3}


def test_a_stored_document_has_no_invisible_characters_and_its_offsets_follow(tmp_path):
    """Whichever way a document comes in, the store drops the characters a crawled page's
    text never holds (soft hyphen, zero-width characters, word joiner, BOM) and composes it
    (NFC); its headings' and PDF pages' offsets move with the text, so a section still
    starts at its heading and a page at its first word."""
    first = unicodedata.normalize("NFD", "Introdução à infor\u00admação\n")
    text = first + "\u200bPrazos\nO reem\u00adbolso leva sete dias.\n\ufeffPágina dois."
    meta = {"headings": [[0, 1, "Introdu\u00adção", ""], [len(first), 2, "Prazos", "p"]],
            "pages": [[1, 0], [2, text.index("\ufeffPágina")]], "tags": ["a\u00adb"]}
    store = Store(tmp_path)
    store.put(Document("u", "T\u200bítulo", text, meta=meta))
    doc = store.get("u")
    assert doc.title == "Título" and doc.sha256 == text_hash(doc.text)
    assert doc.text == ("Introdução à informação\nPrazos\nO reembolso leva sete dias.\n"
                        "Página dois.")
    (intro, _, name, _), (prazos, *_) = doc.meta["headings"]
    assert (intro, name) == (0, "Introdução")
    assert doc.text[prazos:].startswith("Prazos\n")
    assert doc.text[doc.meta["pages"][1][1]:].startswith("Página dois")
    assert doc.meta["tags"] == ["a\u00adb"]  # metadata other than the layout is as given
