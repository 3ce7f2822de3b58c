"""512-bit vectors for the generated loops on AVX-512 hosts.

LLVM's tuning for the AVX-512 parts of x86 includes ``prefer-256-bit``, a guard against
the clock drop that heavy 512-bit code caused on the first such parts.  As a result,
numba's loops use 256-bit registers even where 512-bit ones would do twice the
arithmetic per instruction.  Before numba builds its CPU target (the first compile or
cache load in the process), ``prefer_512_bit_vectors`` sets numba's CPU features to the
host's plus ``-prefer-256-bit``, the setting numba reads from ``NUMBA_CPU_FEATURES``.

It does nothing when any of these holds:
- the host has no AVX-512;
- the user set ``NUMBA_CPU_FEATURES``;
- numba already built its target: code compiled earlier in the process keeps the
  default, and so does everything compiled after it;
- ``NPUJIT_WIDE_VECTORS=0``.

It is numba's setting, so it covers every function numba compiles in the process,
not only npujit's kernels.

Measured on this 2-core AVX-512 machine (runs interleaved, ms):
- the 64^3 f32 tile dot (``cube_lib.dot_f``): 38 to 75 GFLOP/s in one run;
- matmul 512^3 f16 (``npujit.kernels.matmul``), 1 thread: 5.8, 5.7, 4.3 to
  4.0, 3.6, 4.7 (numpy 3.4-3.8);
- the same matmul, 2 threads: 3.2, 3.2, 3.9 to 3.2, 2.5, 2.4 (numpy 2.2-3.1).

Example::

    >>> from npujit.backends.numba.vector_width import prefer_512_bit_vectors
    >>> prefer_512_bit_vectors()          # doctest: +SKIP
    True
"""
from __future__ import annotations

import os

from npujit import knobs


def prefer_512_bit_vectors() -> bool:
    """Ask numba for 512-bit vectors if this host has AVX-512 and nothing decided it yet;
    True when the setting was made."""
    if not knobs.wide_vectors() or os.environ.get("NUMBA_CPU_FEATURES"):
        return False
    import llvmlite.binding as ll
    from numba.core import config
    from numba.core.registry import cpu_target
    if config.CPU_FEATURES is not None or "_toplevel_target_context" in vars(cpu_target):
        return False
    features = ll.get_host_cpu_features()
    if not features.get("avx512f", False):
        return False
    config.CPU_FEATURES = features.flatten() + ",-prefer-256-bit"
    return True
