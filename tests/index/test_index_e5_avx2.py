"""e5-small's engine choice on an AVX2-only CPU, run here under qemu's Haswell model.

A VNNI machine cannot run AVX2's saturating u8 x s8 kernel natively: `qemu-x86_64 -cpu
Haswell` (Debian's qemu-user, installed by .ci/run) emulates a CPU without AVX-512, so
onnxruntime picks that kernel. /proc/cpuinfo still shows the host's flags under qemu — one more
reason the choice probes the product instead of reading flags.
"""

import json
import platform
import shutil
import subprocess
import sys

import pytest

PROBE = """
import json, numpy as np
from busca.index.dense.e5_encoder import default_engine
from busca.index.dense.e5_int8 import PROBE_DEPTH, _onnxruntime_product, int8_exact
x = np.ones((1, PROBE_DEPTH), np.float32)
got = _onnxruntime_product(x, np.full((PROBE_DEPTH, 4), 127, np.int8), np.full(4, 1 / 127, np.float32))
print(json.dumps({"product": float(got[0, 0]), "exact": int8_exact(), "engine": default_engine()}))
"""


def test_on_an_avx2_cpu_the_product_saturates_and_e5_small_picks_the_4_bit_engine():
    pytest.importorskip("onnxruntime")
    pytest.importorskip("onnx")
    if platform.machine() != "x86_64":
        pytest.skip("qemu's Haswell model runs x86-64 binaries only")
    qemu = shutil.which("qemu-x86_64")
    if qemu is None:
        pytest.skip("qemu-user is not installed (.ci/run installs it: apt-get install qemu-user)")
    done = subprocess.run([qemu, "-cpu", "Haswell", sys.executable, "-c", PROBE],
                          capture_output=True, text=True, timeout=280, check=True)
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["product"] == pytest.approx(32 * 32767 / (255 * 127), rel=1e-4)  # 64 saturated
    assert seen == {**seen, "exact": False, "engine": "onnx"}
