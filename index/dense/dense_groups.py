"""Sentence groups of a window, each with a vector: a window scored by its best group.

`busca index --dense-groups WORDS` cuts every window into groups of whole sentences of about
WORDS words (index/text/chunking.py's sentences: cut at whitespace after `.`, `!` or `?`) and
stores one vector per group next to the window's own, so one matching sentence is not
diluted by the window's other words. A window's dense score is then
`blend * cos(q, window) + (1 - blend) * max over its groups cos(q, group)` ("max-sim").
A window with one group reuses its own vector (the group's text is the window's).

Files per dense model (prefix as dense.py's): `.group-vectors.npy` (float32, groups x
dimension), `.group-owners.npy` (int64, each group's window id, ascending; every window has
at least one group), `.group-hashes.npy` (BLAKE2b-128 of each group's text, reused by the
next build). The model's manifest entry gets `"groups": {"words": WORDS, "blend": BLEND}` (a
change of either resets its floor) and the counts `group_vectors`, `groups_encoded`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from ...errors import BuscaError
from ..text.chunking import sentences

GROUP_WORDS = 40  # the group size measured best (docs/dense.md); groups are opt-in
# (`busca index --dense-groups 40`): PostgreSQL homes cannot store them, so a default would
# make the two backends rank differently
GROUP_BLEND = 0.5  # the window vector's share beside its best group's, measured in docs/dense.md
VECTORS, OWNERS, HASHES = "group-vectors", "group-owners", "group-hashes"


class BadGroups(BuscaError, ValueError):
    """Stored sentence groups that do not match the index's windows."""


def group_texts(text: str, words: int) -> list[str]:
    """`text` as consecutive groups of whole sentences of at least `words` words (the last
    group joined to the one before when it has fewer than half); one group: `text` itself."""
    groups: list[list[str]] = []
    size = 0
    for start, end in sentences(text):
        if not groups or size >= words:
            groups.append([])
            size = 0
        groups[-1].append(text[start:end])
        size += len(text[start:end].split())
    if len(groups) > 1 and size < words / 2:
        last = groups.pop()
        groups[-1] += last
    if len(groups) <= 1:
        return [text]
    return [" ".join(g) for g in groups]


def build_groups(texts: Sequence[str], vectors: np.ndarray, hashes: np.ndarray, out, key: str,
                 *, words: int, blend: float, previous_groups, encode: Callable,
                 text_hashes: Callable) -> dict:
    """Encode and store the groups of every window; the manifest entry's `groups` (the
    settings), `group_vectors` (how many) and `groups_encoded` (how many were not reused).
    `previous_groups`: (vectors, hashes) of the previous build's groups made by the same
    encoder, or None; `encode(texts)`: the checked batch encoder;
    `text_hashes(texts)`: dense.py's digests."""
    cut = [group_texts(t, words) for t in texts]
    owners = np.repeat(np.arange(len(texts), dtype=np.int64), [len(c) for c in cut])
    flat = [g for c in cut for g in c]
    group_hashes = text_hashes(flat)
    known = {h.tobytes(): v for h, v in zip(hashes, vectors)}
    if previous_groups is not None:
        known.update((h.tobytes(), v) for v, h in zip(*previous_groups))
    todo = [i for i, h in enumerate(group_hashes) if h.tobytes() not in known]
    encoded = encode([flat[i] for i in todo]) if todo else np.empty((0, vectors.shape[1]))
    out_vectors = np.empty((len(flat), vectors.shape[1]), np.float32)
    for i, h in enumerate(group_hashes):
        if h.tobytes() in known:
            out_vectors[i] = known[h.tobytes()]
    out_vectors[todo] = encoded
    out.save_array(key, VECTORS, out_vectors)
    out.save_array(key, OWNERS, owners)
    out.save_array(key, HASHES, group_hashes)
    return {"groups": {"words": words, "blend": blend}, "group_vectors": len(flat),
            "groups_encoded": len(todo)}


def previous_groups(previous, key: str):
    """(vectors, hashes) of the groups of a previous build's model stored under `key`."""
    if previous is None or not previous.has_array(key, VECTORS):
        return None
    return previous.array(key, VECTORS), previous.array(key, HASHES)


class Groups:
    """A model's group vectors, searched as max-sim per window blended with the window's."""

    def __init__(self, index, key: str, settings: dict, windows: int):
        self.vectors = index.array(key, VECTORS)
        owners = np.asarray(index.array(key, OWNERS))
        self.starts = np.flatnonzero(np.r_[True, owners[1:] != owners[:-1]])
        self.ends = np.r_[self.starts[1:], owners.size]
        if self.starts.size != windows or owners[self.starts].tolist() != list(range(windows)):
            raise BadGroups("the sentence groups do not cover every window — rebuild:"
                            " busca index")
        self.blend = float(settings.get("blend", GROUP_BLEND))

    def combine(self, window_scores: np.ndarray, group_scores: np.ndarray) -> np.ndarray:
        """blend * window + (1 - blend) * the window's best group."""
        best = np.maximum.reduceat(group_scores, self.starts)
        return self.blend * window_scores + (1 - self.blend) * best

    def exact(self, window_rows: np.ndarray, ids: np.ndarray, q: np.ndarray) -> np.ndarray:
        """The scores of windows `ids` (their rows `window_rows`) in float64."""
        q = q.astype(np.float64)
        out = np.empty(ids.size)
        for x, i in enumerate(ids.tolist()):
            rows = np.asarray(self.vectors[self.starts[i]:self.ends[i]], np.float64)
            best = (rows * q).sum(axis=1).max()
            out[x] = self.blend * float((window_rows[x] * q).sum()) + (1 - self.blend) * best
        return out
