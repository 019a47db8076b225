"""A method's arrays written side by side: all of them, or the first error."""

import threading

import numpy as np
import pytest

from busca.index.lexical.arrays import save_arrays


class Writer:
    def __init__(self, fail: str | None = None):
        self.saved, self.fail, self.threads = {}, fail, set()

    def save_array(self, method, name, array):
        self.threads.add(threading.get_ident())
        if name == self.fail:
            raise OSError(28, "No space left on device")
        self.saved[f"{method}.{name}"] = array.copy()


def test_every_array_is_handed_over_whole():
    arrays = {name: np.arange(i * 1000, dtype=np.int32) for i, name in enumerate("abcdef")}
    out = Writer()
    save_arrays(out, "bm25", arrays)
    assert set(out.saved) == {f"bm25.{n}" for n in arrays}
    assert all((out.saved[f"bm25.{n}"] == a).all() for n, a in arrays.items())
    assert threading.get_ident() not in out.threads  # written by the writer threads


def test_a_failed_write_raises_after_the_others_are_done():
    out = Writer(fail="b")
    with pytest.raises(OSError, match="No space"):
        save_arrays(out, "tfidf", {n: np.zeros(3) for n in "abc"})
    assert set(out.saved) == {"tfidf.a", "tfidf.c"}
