"""e5-small on an AVX2-only CPU, run here under qemu's Haswell model.

A VNNI machine cannot run AVX2's saturating u8 x s8 kernel natively: `qemu-x86_64 -cpu
Haswell` (Debian's qemu-user, installed by .ci/run) emulates a CPU without AVX-512, so
onnxruntime picks that kernel. /proc/cpuinfo still shows the host's flags under qemu — one more
reason the choice probes the product instead of reading flags. There the int8 engine takes
7-bit weights, whose products cannot saturate: its vectors are those this machine computes
with the same weights, while +-127 weights drift.
"""

import json
import platform
import shutil
import subprocess
import sys

import numpy as np
import pytest

PROBE = """
import json, numpy as np
from busca.index.dense.e5_encoder import default_engine
from busca.index.dense.e5_int8 import PROBE_DEPTH, _onnxruntime_product, int8_exact
x = np.ones((1, PROBE_DEPTH), np.float32)
got = _onnxruntime_product(x, np.full((PROBE_DEPTH, 4), 127, np.int8), np.full(4, 1 / 127, np.float32))
narrow = _onnxruntime_product(x, np.full((PROBE_DEPTH, 4), 63, np.int8), np.full(4, 1 / 63, np.float32))
print(json.dumps({"product": float(got[0, 0]), "narrow": float(narrow[0, 0]), "exact": int8_exact(),
                  "engine": default_engine(), "levels": weight_levels(), "vectors": vectors()}))
"""
VECTORS = """
from busca.index.dense.e5_int8 import E5SmallInt8, weight_levels
TEXT = "Como faço para cancelar a matrícula? O prazo é de 30 dias, conforme o regulamento."
def vectors():
    return {str(levels): E5SmallInt8.load(levels=levels).encode([TEXT])[0].tolist()
            for levels in (63, 127)}
"""


def test_on_an_avx2_cpu_the_product_saturates_and_e5_small_takes_7_bit_weights():
    pytest.importorskip("onnxruntime")
    pytest.importorskip("onnx")
    if platform.machine() != "x86_64":
        pytest.skip("qemu's Haswell model runs x86-64 binaries only")
    qemu = shutil.which("qemu-x86_64")
    if qemu is None:
        pytest.skip("qemu-user is not installed (.ci/run installs it: apt-get install qemu-user)")
    done = subprocess.run([qemu, "-cpu", "Haswell", sys.executable, "-c", VECTORS + PROBE],
                          capture_output=True, text=True, timeout=280, check=True)
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["product"] == pytest.approx(32 * 32767 / (255 * 127), rel=1e-4)  # 64 saturated
    assert seen["narrow"] == pytest.approx(64, rel=1e-4)  # 7-bit weights: exact
    assert {k: seen[k] for k in ("exact", "engine", "levels")} == {
        "exact": False, "engine": "int8", "levels": 63}
    from busca.index.dense.e5_int8 import int8_exact
    here = {}
    exec(VECTORS, here)
    for levels, want in here["vectors"]().items():
        cosine = float(np.dot(seen["vectors"][levels], want))
        if levels == "63" or not int8_exact():  # no pair saturates, or both CPUs saturate alike
            assert cosine == pytest.approx(1.0, abs=1e-6)  # the same vector on both CPUs
        else:
            assert cosine < 0.99995  # saturated pairs under qemu: a vector that drifted
