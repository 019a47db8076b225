"""The sentence chunker against a literal copy of the seed's `chunk_por_frase` (000_…)."""

import random
import re

import pytest

from busca.index.text.chunking import (ChunkingError, chunk_sentences, chunk_with, chunker_label,
                                  parse_chunker, sentences)

DOC = (
    "Política de pagamentos. Todo pedido aprovado gera uma nota fiscal enviada por e-mail. "
    "Pagamentos por boleto compensam em até três dias úteis. "
    "Reembolso. Quando o cliente cancela a assinatura dentro do período de garantia, "
    "o valor pago é devolvido integralmente. O prazo para o estorno aparecer na fatura "
    "é de até 7 dias úteis após a confirmação do cancelamento. "
    "Pedidos cancelados depois da garantia não geram devolução. "
    "Suporte. O atendimento funciona de segunda a sexta, das 9h às 18h, pelo chat do painel."
)


def chunk_por_frase(texto: str, max_chars: int = 220, overlap_frases: int = 1) -> list[str]:
    # the seed's code, verbatim
    frases = re.split(r"(?<=[.!?])\s+", texto.strip())
    chunks: list[str] = []
    atual: list[str] = []
    for frase in frases:
        if atual and len(" ".join(atual + [frase])) > max_chars:
            chunks.append(" ".join(atual))
            atual = atual[-overlap_frases:] if overlap_frases else []
        atual.append(frase)
    if atual:
        chunks.append(" ".join(atual))
    return chunks


def test_the_seeds_document_cuts_as_in_the_seed():
    chunks = chunk_sentences(DOC)
    assert [c.text for c in chunks] == chunk_por_frase(DOC)
    assert chunks[1].text.startswith("Reembolso. Quando o cliente cancela")
    assert "7 dias úteis" in chunks[1].text


@pytest.mark.parametrize("seed", range(40))
def test_parity_with_the_seed_on_random_text(seed):
    rng = random.Random(seed)
    pieces = ["Sim", "não", "R$ 1.234,56", "e-mail", "ação", "fim", "3.5", "Dr", "x" * 50]
    ends = [".", "!", "?", "", ",", "..."]
    gaps = [" ", "  ", "\n", "\n\n", "\t", "\u00a0", ""]
    text = "".join(rng.choice(pieces) + rng.choice(ends) + rng.choice(gaps)
                   for _ in range(rng.randint(1, 60)))
    text = rng.choice(["", " ", "\n"]) + text
    max_chars, overlap = rng.choice([20, 60, 220]), rng.choice([0, 1, 2])
    chunks = chunk_sentences(text, max_chars=max_chars, overlap=overlap)
    expected = chunk_por_frase(text, max_chars, overlap) if text.strip() else []
    assert [c.text for c in chunks] == expected
    for n, c in enumerate(chunks):
        assert c.position == n
        assert " ".join(text[c.start:c.end].split()) == " ".join(c.text.split())
        assert not text[c.start].isspace() and not text[c.end - 1].isspace()


def test_sentence_spans_and_blank_text():
    assert sentences("  Um. Dois!  Três?\n") == [(2, 5), (6, 11), (13, 18)]
    assert chunk_sentences("") == [] and chunk_sentences(" \n ") == []


def test_chunker_specs():
    assert parse_chunker("words:200:40") == {"kind": "words", "size": 200, "overlap": 40}
    assert parse_chunker("words") == {"kind": "words", "size": 200, "overlap": 40}
    assert parse_chunker("sentences:300") == {"kind": "sentences", "max_chars": 300,
                                              "overlap": 1}
    for spec in ("words:200:40", "sentences:220:1"):
        assert chunker_label(parse_chunker(spec)) == spec
    assert [c.text for c in chunk_with(parse_chunker("sentences"), DOC)] == chunk_por_frase(DOC)


@pytest.mark.parametrize("spec, message", [
    ("frases:220", "unknown chunker"), ("words:a", "whole numbers"),
    ("words:1:2:3", "whole numbers"), ("words:40:40", "overlap \\(40 words\\) must be smaller"),
    ("sentences:0:1", "max_chars must be at least 1"), ("words:-5", "whole numbers"),
])
def test_bad_chunker_specs(spec, message):
    with pytest.raises(ChunkingError, match=message):
        parse_chunker(spec)
