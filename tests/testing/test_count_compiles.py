"""count_compiles and fresh_cache, checked with a kernel of this file (reference backend:
no numba compile)."""
import os

import numpy as np

import npujit.language as nl
from npujit import npu_kernel
from npujit.testing import count_compiles, fresh_cache


@npu_kernel(backend="reference")
def scale_kernel(x_ptr, out_ptr, n, BLOCK: nl.constexpr):
    offs = nl.arange(0, BLOCK)
    nl.store(out_ptr + offs, nl.load(x_ptr + offs, mask=offs < n) * 2, mask=offs < n)


def _launch(block=16):
    x = np.arange(16, dtype=np.float32)
    out = np.empty_like(x)
    scale_kernel[(1,)](x, out, 16, BLOCK=block)
    assert (out == 2 * x).all()


def test_counts_only_new_specialisations():
    with fresh_cache(scale_kernel), count_compiles() as c:
        _launch()
        assert c.count == 1                   # live inside the block
        _launch()                             # cached: no compile
        _launch(block=32)                     # a new constexpr value: one more
    assert c.count == 2 and c.kernels == ["scale_kernel", "scale_kernel"]
    assert [r.constexprs["BLOCK"] for r in c.records] == [16, 32]
    _launch(block=64)                          # after the block: not counted
    assert c.count == 2


def test_fresh_cache_sets_and_restores_the_cache_dir():
    before = os.environ.get("NPUJIT_CACHE_DIR")
    _launch()
    with fresh_cache(scale_kernel) as d, count_compiles() as c:
        assert os.environ["NPUJIT_CACHE_DIR"] == d and os.path.isdir(d)
        _launch()                              # compiled again: the caches were emptied
    assert c.count == 1
    assert os.environ.get("NPUJIT_CACHE_DIR") == before and not os.path.exists(d)
