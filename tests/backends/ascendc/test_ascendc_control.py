"""scf.if / scf.while emitted as C++ if/else and while, built with g++ against the CPU twin
and compared with numpy: an early-return guard, a run-time choice of a scalar, a while
loop with carried scalars, branches holding loads' consumers and stores.  An if that
yields a tile is refused, naming it."""
from __future__ import annotations

import numpy as np
import pytest

import npujit.language as nl
from npujit import npu_kernel

from ascendc_support import TWIN


@npu_kernel(backend=TWIN)
def guarded(x_ptr, out_ptr, n, BLOCK: nl.constexpr):
    pid = nl.program_id(0)
    if pid * BLOCK >= n:
        return
    offs = pid * BLOCK + nl.arange(0, BLOCK)
    x = nl.load(x_ptr + offs, mask=offs < n, other=0.0)
    scale = 2.0 if pid % 2 == 0 else 0.5
    k = 0
    while k < pid and k < 3:
        k += 1
    if pid == 1:
        nl.store(out_ptr + offs, x + 100.0, mask=offs < n)
    else:
        nl.store(out_ptr + offs, x * scale + k, mask=offs < n)


def test_if_while_and_early_return_on_the_twin():
    n, block = 100, 32
    x = np.arange(n, dtype=np.float32)
    out = np.full(160, -1.0, np.float32)
    guarded[(5,)](x, out, n, BLOCK=block)       # program 4 returns at once
    want = np.full(160, -1.0, np.float32)
    for pid in range(4):
        lo, hi = pid * block, min(n, (pid + 1) * block)
        if pid == 1:
            want[lo:hi] = x[lo:hi] + 100
        else:
            want[lo:hi] = x[lo:hi] * (2.0 if pid % 2 == 0 else 0.5) + min(pid, 3)
    np.testing.assert_array_equal(out, want)


def test_an_if_yielding_a_tile_is_refused(tmp_path):
    @npu_kernel
    def tile_if(x_ptr, out_ptr):
        x = nl.load(x_ptr + nl.arange(0, 32))
        if nl.program_id(0) == 0:
            x = x * 2.0
        nl.store(out_ptr + nl.arange(0, 32), x)

    x = np.zeros(32, np.float32)
    with pytest.raises(NotImplementedError) as e:
        tile_if.emit("ascendc", str(tmp_path), x, x)
    assert "scf.if" in str(e.value) and "if nl.program_id(0) == 0:" in str(e.value)
