"""The chunk table of a build (index/text/chunks.py): written once into the build's folder."""

import sqlite3
import threading

from busca.index.text.chunks import FILE, ChunkRow, ChunkTable, drop_legacy, write_chunks


def test_chunk_rows_per_build(tmp_path):
    b1, b2 = tmp_path / "b1", tmp_path / "b2"
    b1.mkdir(), b2.mkdir()
    write_chunks(b1, [ChunkRow(0, "u", 0, 0, 5, "h"), ChunkRow(1, "u", 1, 3, 9, "h")])
    write_chunks(b2, [ChunkRow(0, "v", 0, 0, 2)])
    assert [r.id for r in ChunkTable(b1).rows([1, 0])] == [1, 0]
    assert ChunkTable(b1).rows() == [ChunkRow(0, "u", 0, 0, 5, "h"), ChunkRow(1, "u", 1, 3, 9, "h")]
    assert len(ChunkTable(b2).rows()) == 1


def test_unknown_ids_are_skipped_and_order_kept(tmp_path):
    rows = [ChunkRow(i, f"u{i % 3}", i, i, i + 1) for i in range(1200)]  # more than one batch
    write_chunks(tmp_path, rows)
    table = ChunkTable(tmp_path)
    wanted = [1199, 5, 7000, 600, 0]
    assert [r.id for r in table.rows(wanted)] == [1199, 5, 600, 0]
    assert table.rows([]) == []


def test_rewriting_replaces_the_table(tmp_path):
    write_chunks(tmp_path, [ChunkRow(0, "a", 0, 0, 1), ChunkRow(1, "a", 1, 1, 2)])
    write_chunks(tmp_path, [ChunkRow(0, "b", 0, 0, 3)])
    assert ChunkTable(tmp_path).rows() == [ChunkRow(0, "b", 0, 0, 3)]


def test_the_table_is_opened_read_only(tmp_path):
    write_chunks(tmp_path, [ChunkRow(0, "a", 0, 0, 1)])
    table = ChunkTable(tmp_path)
    table.rows()
    try:
        table._connect().execute("DELETE FROM chunks")
    except sqlite3.OperationalError as e:
        assert "readonly" in str(e)
    else:
        raise AssertionError("a reader could write the chunk table")
    table.close()
    assert (tmp_path / FILE).exists()


def test_threads_sharing_a_table_each_read_their_own_rows(tmp_path):
    # a server's requests share the loaded build's table: on Python 3.12 and later, threads
    # on one sqlite3 connection got each other's rows (or "bad parameter or other API misuse")
    rows = [ChunkRow(i, f"https://site/{i % 50}/", i, i, i + 1, f"h{i}") for i in range(400)]
    write_chunks(tmp_path, rows)
    table = ChunkTable(tmp_path)
    start, wrong = threading.Barrier(8), []

    def read(n: int) -> None:
        wanted = [(n * 7 + j) % 400 for j in range(3)]
        start.wait()
        for _ in range(2000):
            try:
                got = table.rows(wanted)
                every = table.urls() if n == 0 else None
            except sqlite3.Error as e:
                wrong.append(repr(e))
                continue
            if got != [rows[i] for i in wanted]:
                wrong.append(got)
            if every is not None and every != [r.url for r in rows]:
                wrong.append("urls")

    threads = [threading.Thread(target=read, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    table.close()
    assert wrong == []


def test_drop_legacy_removes_the_format_1_table(tmp_path):
    db = sqlite3.connect(tmp_path / "busca.db")
    db.execute("CREATE TABLE chunks (build TEXT, id INTEGER)")
    drop_legacy(db)
    drop_legacy(db)  # a second time is harmless
    assert db.execute("SELECT name FROM sqlite_master WHERE name = 'chunks'").fetchone() is None
