"""The sections chunker: word windows cut anew at each heading, prefixed by the heading path,
spans over the document's own text."""

from __future__ import annotations

import json

import pytest

from busca.crawler.files import read_files
from busca.index.text.chunking import (ChunkingError, chunk_sections, chunk_with, chunk_words,
                                   parse_chunker)

TEXT = ("Introdução curta da loja.\nReembolso\nO valor pago é devolvido em até sete dias úteis"
        " após o pedido.\nPrazos\nO estorno aparece na fatura seguinte.")
HEADINGS = [[26, 2, "Reembolso", "reembolso"], [99, 3, "Prazos", "prazos"]]


def test_windows_restart_at_each_heading_and_carry_its_path():
    assert TEXT[26:].startswith("Reembolso") and TEXT[99:].startswith("Prazos")
    chunks = chunk_sections(TEXT, HEADINGS, size=6, overlap=2)
    assert chunks[0].text == "Introdução curta da loja."  # no heading above: no prefix
    prefixes = ["", "Reembolso", "Reembolso", "Reembolso", "Reembolso › Prazos",
                "Reembolso › Prazos"]
    assert len(chunks) == len(prefixes)
    for chunk, prefix in zip(chunks, prefixes):
        words = " ".join(TEXT[chunk.start:chunk.end].split())
        assert chunk.text == (f"{prefix}\n{words}" if prefix else words)
        assert not (chunk.start < 26 < chunk.end or chunk.start < 99 < chunk.end)
    assert [c.position for c in chunks] == list(range(len(chunks)))


def test_without_headings_it_is_the_java_windows():
    plain = chunk_sections(TEXT, (), size=6, overlap=2)
    assert plain == chunk_words(TEXT, size=6, overlap=2)


def test_spec_and_dispatch():
    assert parse_chunker("sections") == {"kind": "sections", "size": 200, "overlap": 40}
    spec = parse_chunker("sections:6:2")
    assert chunk_with(spec, TEXT, HEADINGS) == chunk_sections(TEXT, HEADINGS, size=6, overlap=2)
    with pytest.raises(ChunkingError, match="sections"):
        parse_chunker("secoes:1")


def test_jsonl_lines_keep_their_meta(tmp_path):
    path = tmp_path / "docs.jsonl"
    path.write_text(json.dumps({"url": "u", "title": "t", "text": TEXT,
                                "meta": {"headings": HEADINGS}}) + "\n", encoding="utf-8")
    [document] = list(read_files([str(path)]))
    assert document.meta == {"headings": HEADINGS}
