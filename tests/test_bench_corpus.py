"""bench/zipf_corpus.py, the held-out corpus of bench_lexical.py: its vocabulary grows by Heaps'
law to at least 100k `pt` terms at a million chunks, and its questions are all different."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))

import zipf_corpus  # noqa: E402

from busca.index.text.analyzers import pt_terms  # noqa: E402

SIZES = (125, 250, 500, 1000)


def test_heaps_fit_reaches_100k_pt_terms_at_a_million_chunks():
    seen: set[str] = set()
    growth = []
    for i, text in enumerate(zipf_corpus.chunks(SIZES[-1]), 1):
        seen.update(pt_terms(text))
        if i in SIZES:
            growth.append(len(seen))
    beta, log_k = np.polyfit(np.log(SIZES), np.log(growth), 1)
    at_million = np.exp(log_k + beta * np.log(1_000_000))
    assert 0.45 <= beta <= 0.8  # Heaps' exponents of natural text, not a closed vocabulary
    assert at_million >= 100_000
    assert growth[0] >= 2_000  # not FaQuAD's 2,884 terms in all


def test_a_smaller_corpus_is_the_start_of_a_larger_one():
    assert list(zipf_corpus.chunks(2_100))[:2_050] == list(zipf_corpus.chunks(2_050))


def test_chunks_have_the_window_and_portuguese_function_words():
    text = next(zipf_corpus.chunks(1))
    words = text.split()
    assert len(words) == zipf_corpus.WINDOW
    share = sum(w.strip(",.").lower() in zipf_corpus.FUNCTION for w in words) / len(words)
    assert 0.2 < share < 0.5


def test_questions_are_distinct_and_deterministic():
    questions = zipf_corpus.questions(3_000)
    assert len(set(questions)) == 3_000
    assert questions[:50] == zipf_corpus.questions(50)
    assert all(q.endswith("?") and len(q.split()) >= 3 for q in questions)
