"""The machine a bench's figures were measured on, as every bench prints it at its start: the CPU
model, the int8-relevant flags the README quotes (`avx2`, `avx512_vnni`; ARM's `asimddp`), the
cores and the load average."""

from __future__ import annotations

import os
from pathlib import Path

FLAGS = ("avx2", "avx512_vnni", "avx_vnni", "asimddp")


def cpu(cpuinfo: str | None = None) -> str:
    """`AMD EPYC (avx2 avx512_vnni)`: the model name and the flags of FLAGS it has."""
    if cpuinfo is None:
        try:
            cpuinfo = Path("/proc/cpuinfo").read_text(errors="replace")
        except OSError:
            cpuinfo = ""
    model, flags = "", set()
    for line in cpuinfo.splitlines():
        key, _, value = line.partition(":")
        key = key.strip()
        if key in ("model name", "Model", "Hardware") and not model:
            model = value.strip()
        elif key in ("flags", "Features"):
            flags |= set(value.split())
    found = [flag for flag in FLAGS if flag in flags]
    return (f"{model or 'CPU model unknown'}"
            f" ({' '.join(found) or 'neither avx2 nor avx512_vnni'})")


def machine() -> str:
    """One line: the CPU, its cores and the load average now."""
    return (f"CPU: {cpu()}, {os.cpu_count()} cores; load average at start:"
            f" {os.getloadavg()[0]:.2f}")
