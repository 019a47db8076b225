"""Late chunking: sentence-group vectors pooled from the window's own forward pass.

    python bench/late_chunking.py HOME [--pool span|span+ends]

HOME: a local busca home indexed with e5-small and sentence groups (`busca index --dense
e5-small --dense-groups 40`), whose groups were encoded each on its own. Every window with
more than one group is encoded once more, its tokens being the `passage: ` prefix's and its
groups' one after another (the window's own tokens: the script checks that the pooled
vector is the stored window vector), and each group's vector becomes the mean of the last
hidden states over the group's tokens ("span"; "span+ends" adds <s> and </s>): the group
seen with the whole window around it, at no encoding cost beyond the window's. The group
vectors file is replaced in place (copy the home first); then `busca eval` on the copy
against the original compares the two (docs/eval.md, "Late chunking").
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

from busca.index import open_home
from busca.index.dense.dense_groups import OWNERS, VECTORS, group_texts
from busca.index.dense.dense_models import array_key
from busca.index.dense.e5_encoder import E5SmallEncoder
from busca.index.dense.e5_small import PASSAGE


def window_states(model, ids: list[int]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The last hidden states of the content tokens `ids` (<s> and </s> left out), passed
    through the model a window at a time as `E5Small.encode` cuts a long text, and the
    window's vector as `encode` pools it (each pass's mean over <s> + its ids + </s>,
    averaged by the passes' token counts), and the first pass's <s> and </s> states."""
    content, pooled, weights, ends = [], [], [], None
    for lo in range(0, len(ids), model.window):
        part = ids[lo:lo + model.window]
        hidden, lengths = model._hidden([part])
        content.append(hidden[0, 1:lengths[0] - 1])
        pooled.append(hidden[0, :lengths[0]].mean(axis=0))
        weights.append(len(part))
        ends = hidden[0, [0, lengths[0] - 1]] if ends is None else ends
    return np.concatenate(content), np.average(pooled, axis=0, weights=weights), ends


def late_vectors(model, text: str, words: int, pool: str) -> tuple[np.ndarray, np.ndarray]:
    """The window's vector and its groups' late-chunked vectors (unit rows)."""
    tokenizer = model.model.tokenizer
    ids = tokenizer.content_ids(PASSAGE.rstrip())
    spans = []
    for group in group_texts(text, words):
        more = tokenizer.content_ids(group)
        spans.append((len(ids), len(ids) + len(more)))
        ids = ids + more
    content, window, ends = window_states(model, ids)
    groups = [content[lo:hi].mean(axis=0) if pool == "span"
              else np.vstack([content[lo:hi], ends]).mean(axis=0) for lo, hi in spans]
    unit = lambda x: x / np.linalg.norm(x, axis=-1, keepdims=True)  # noqa: E731
    return unit(window), unit(np.array(groups))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("home")
    parser.add_argument("--pool", choices=("span", "span+ends"), default="span")
    args = parser.parse_args()
    store = open_home(args.home)
    index = store.current()
    key = array_key("dense")
    words = index.manifest.entry("dense")["groups"]["words"]
    bodies = {d.url: d.text for d in store.documents()}
    texts = [bodies[r.url][r.start:r.end] for r in index.chunks()]
    owners = np.asarray(index.array(key, OWNERS))
    stored, windows = np.array(index.array(key, VECTORS)), index.array(key, "vectors")
    model = E5SmallEncoder()._model
    out, window_cos, started = stored.copy(), [], time.perf_counter()
    for w, first in enumerate(np.searchsorted(owners, np.arange(len(texts)))):
        count = int(np.count_nonzero(owners == w))
        if count > 1:
            window, groups = late_vectors(model, texts[w], words, args.pool)
            if len(groups) != count:
                raise SystemExit(f"window {w}: {count} stored groups, {len(groups)} cut here")
            window_cos.append(float(window @ windows[w]))
            out[first:first + count] = groups
    print(f"{len(texts)} windows, {owners.size} groups, {time.perf_counter() - started:.1f} s;"
          f" window vector against the stored one: cosine >= {min(window_cos):.4f};"
          f" late against separate groups: median cosine "
          f"{np.median((out * stored).sum(axis=1)):.4f}")
    target = index.path / f"{key}.{VECTORS}.npy"
    np.save(f"{target}.late.npy", out)
    os.replace(f"{target}.late.npy", target)


if __name__ == "__main__":
    from cli_errors import guarded
    guarded(main)
