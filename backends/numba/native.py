"""The numba stage's own artifacts: a kernel's LLVM IR and its host assembly.

``CompiledKernel.asm["llir"]`` is the LLVM IR numba made for the kernel's entry function
(the program loop over the grid, with the outlined segments it calls linked in), and
``asm["native"]`` the machine code LLVM made of it for this host (x86-64 here; with
512-bit vectors on AVX-512 hosts: backends/numba/vector_width.py).  Functions of the
shared libraries (cube_lib.py, reduce_lib.py, ...) appear as calls.

numba keeps neither text for machine code it loaded from its disk cache, which is how
most launches get theirs, so the stages come from one more compile of the generated
module, in memory and without the cache: as long as the kernel's first compile, paid only
when a stage is read, and once per launcher.

Example::

    >>> c = add_kernel.compile(x, y, out, n, BLOCK=1024)       # doctest: +SKIP
    >>> "define" in c.asm["llir"], "ret" in c.asm["native"]    # doctest: +SKIP
    (True, True)
"""
from __future__ import annotations

import threading

STAGES = ("llir", "native")

_lock = threading.Lock()


def native_stages(launcher) -> dict[str, str]:
    """``{"llir": ..., "native": ...}`` for a ``runtime.Launcher``; KeyError when numba
    compiles nothing (``NUMBA_DISABLE_JIT=1`` runs the generated Python as it is)."""
    if not launcher.jit:
        raise KeyError(f"no LLVM IR for kernel '{launcher.name}': numba's JIT is off "
                       "(NUMBA_DISABLE_JIT), so the generated Python runs as it is; its "
                       "source is asm['numba']")
    from .runtime import import_source
    text = launcher.source.replace("@njit(cache=True,", "@njit(cache=False,")
    with _lock:
        entry = getattr(import_source(text, cache=False), launcher.artifact.entry)
        sig = tuple(launcher.signature)
        entry.compile(sig)
        return {"llir": entry.inspect_llvm(sig), "native": entry.inspect_asm(sig)}
