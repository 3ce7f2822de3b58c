"""backends/numba/vector_width.py: numba is asked for 512-bit vectors on AVX-512 hosts,
unless the user chose (``NUMBA_CPU_FEATURES``, ``NPUJIT_WIDE_VECTORS=0``) or numba
already built its CPU target.  Each case runs in a fresh interpreter: the setting is
made once per process."""
from __future__ import annotations

import os
import subprocess
import sys

import llvmlite.binding as ll
import pytest

AVX512 = ll.get_host_cpu_features().get("avx512f", False)

PROBE = """
import sys
if sys.argv[1] == "numba-first":
    from numba import njit
    njit(lambda x: x + 1)(1)          # numba builds its CPU target before npujit
import numpy as np
import npujit.language as nl
from npujit import npu_kernel
from numba.core import config

@npu_kernel
def scale(x_ptr, y_ptr, n, BLOCK: nl.constexpr):
    offs = nl.program_id(0) * BLOCK + nl.arange(0, BLOCK)
    nl.store(y_ptr + offs, nl.load(x_ptr + offs, mask=offs < n) * 3.0, mask=offs < n)

x = np.arange(1000, dtype=np.float32)
y = np.zeros_like(x)
scale.with_options(backend="numba")[(4,)](x, y, 1000, BLOCK=256)
assert np.array_equal(y, x * np.float32(3.0))
print(config.CPU_FEATURES or "")
"""


def _features(tmp_path, mode="plain", **env):
    e = {k: v for k, v in os.environ.items() if k not in ("NUMBA_CPU_FEATURES",
                                                            "NPUJIT_WIDE_VECTORS")}
    e.update(env, NPUJIT_CACHE_DIR=str(tmp_path / "cache"))
    probe = tmp_path / "probe.py"       # a kernel needs a source file
    probe.write_text(PROBE)
    out = subprocess.run([sys.executable, str(probe), mode], env=e, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip().splitlines()[-1] if out.stdout.strip() else ""


def test_512_bit_vectors_follow_the_host(tmp_path):
    got = _features(tmp_path)
    if AVX512:
        assert got == ll.get_host_cpu_features().flatten() + ",-prefer-256-bit"
    else:
        assert got == ""


@pytest.mark.parametrize("mode,env", [("plain", {"NPUJIT_WIDE_VECTORS": "0"}),
                                      ("numba-first", {}),
                                      ("plain", {"NUMBA_CPU_FEATURES": "+sse2"})],
                         ids=["knob-off", "numba-first", "user-features"])
def test_a_choice_already_made_is_kept(tmp_path, mode, env):
    want = env.get("NUMBA_CPU_FEATURES", "")
    assert _features(tmp_path, mode, **env) == want
