"""Tracing: loops become scf.for (not unrolled), carried values, static_range unrolls,
helpers are traced, constexpr `if` works, and the IR names source lines."""
from __future__ import annotations

import numpy as np
import pytest

import npujit.language as nl
from npujit import CompilationError, npu_kernel


@npu_kernel
def loop_sum(x_ptr, out_ptr, n, BLOCK: nl.constexpr):
    acc = nl.zeros((BLOCK,), nl.float32)
    total = 0.0
    for start in nl.range(0, n, BLOCK, num_stages=2):
        offs = start + nl.arange(0, BLOCK)
        v = nl.load(x_ptr + offs, mask=offs < n, other=0.0)
        acc += v
        total += nl.sum(v, axis=0)
    nl.store(out_ptr + nl.arange(0, BLOCK), acc)
    nl.store(out_ptr + BLOCK, total)


def test_range_is_an_ir_loop_with_carried_values(backend):
    x = np.arange(1000, dtype=np.float32)
    out = np.zeros(65, np.float32)
    k = loop_sum.with_options(backend=backend)
    k[(1,)](x, out, 1000, BLOCK=64)
    want = np.zeros(64, np.float32)
    for s in range(0, 1000, 64):
        chunk = x[s:s + 64]
        want[:chunk.size] += chunk
    np.testing.assert_allclose(out[:64], want)
    assert out[64] == pytest.approx(x.sum())
    ir = k.ir(x, out, 1000, BLOCK=64)
    assert ir.count('"scf.for"') == 1          # one loop, not 16 unrolled bodies
    assert "num_stages = 2" in ir
    assert ir.count('"npu.load"') == 1


@npu_kernel
def unrolled(x_ptr, out_ptr, N: nl.constexpr, BLOCK: nl.constexpr):
    acc = nl.zeros((BLOCK,), nl.float32)
    for i in nl.static_range(N):
        acc += nl.load(x_ptr + i * BLOCK + nl.arange(0, BLOCK))
    nl.store(out_ptr + nl.arange(0, BLOCK), acc)


def test_static_range_unrolls(backend):
    x = np.random.default_rng(0).standard_normal(4 * 8).astype(np.float32)
    out = np.zeros(8, np.float32)
    k = unrolled.with_options(backend=backend)
    k[(1,)](x, out, N=4, BLOCK=8)
    np.testing.assert_allclose(out, x.reshape(4, 8).sum(0), rtol=1e-6)
    ir = k.ir(x, out, N=4, BLOCK=8)
    assert '"scf.for"' not in ir and ir.count('"npu.load"') == 4


@nl.inline
def _row_total(ptr, n, BLOCK):
    acc = nl.zeros((BLOCK,), nl.float32)
    for s in nl.range(0, n, BLOCK):
        offs = s + nl.arange(0, BLOCK)
        acc += nl.load(ptr + offs, mask=offs < n, other=0.0)
    return nl.sum(acc, axis=0)


def _scale(x, factor):
    return x * factor          # a plain Python helper is traced by simply running


@npu_kernel
def with_helpers(x_ptr, out_ptr, n, BLOCK: nl.constexpr, DOUBLE: nl.constexpr):
    t = _row_total(x_ptr, n, BLOCK)
    if DOUBLE:                 # constexpr: a plain Python `if`
        t = _scale(t, 2.0)
    nl.store(out_ptr, t)


def test_helpers_and_constexpr_if(backend):
    x = np.arange(100, dtype=np.float32)
    out = np.zeros(1, np.float32)
    k = with_helpers.with_options(backend=backend)
    k[(1,)](x, out, 100, BLOCK=32, DOUBLE=True)
    assert out[0] == pytest.approx(2 * x.sum())
    k[(1,)](x, out, 100, BLOCK=32, DOUBLE=False)
    assert out[0] == pytest.approx(x.sum())
    assert '"scf.for"' in k.ir(x, out, 100, BLOCK=32, DOUBLE=True)


@npu_kernel
def nested(x_ptr, out_ptr, R, C, BLOCK: nl.constexpr):
    total = nl.zeros((BLOCK,), nl.float32)
    for r in range(0, R):
        row = nl.zeros((BLOCK,), nl.float32)
        for c in range(0, C, BLOCK):
            offs = c + nl.arange(0, BLOCK)
            row += nl.load(x_ptr + r * C + offs, mask=offs < C, other=0.0)
        total = nl.maximum(total, row)
    nl.store(out_ptr + nl.arange(0, BLOCK), total)


def test_nested_python_range_loops(backend):
    x = np.random.default_rng(1).standard_normal((5, 40)).astype(np.float32)
    out = np.zeros(16, np.float32)
    k = nested.with_options(backend=backend)
    k[(1,)](x, out, 5, 40, BLOCK=16)
    pad = np.zeros((5, 48), np.float32)
    pad[:, :40] = x
    want = pad.reshape(5, 3, 16).sum(1).max(0)
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-6)
    assert k.ir(x, out, 5, 40, BLOCK=16).count('"scf.for"') == 2


def test_zero_trip_loop_keeps_initial_values(backend):
    out = np.full(65, -1.0, np.float32)
    k = loop_sum.with_options(backend=backend)
    k[(1,)](np.zeros(1, np.float32), out, 0, BLOCK=64)
    assert (out == 0).all()


def test_ops_carry_source_lines():
    x = np.zeros(4, np.float32)
    text = loop_sum.with_options(backend="reference").inspect(x, x, 4, BLOCK=4)["trace"]
    from npujit.ir.parser import parse_function
    fn = parse_function(text)
    lines = {op.loc.line for op in fn.walk()}
    import inspect
    src, first = inspect.getsourcelines(loop_sum.fn)
    load_line = first + next(i for i, s in enumerate(src) if "nl.load" in s)
    for_line = first + next(i for i, s in enumerate(src) if "for start" in s)
    assert load_line in lines
    loop = next(op for op in fn.walk() if op.kind.value == "scf.for")
    assert loop.loc.line == for_line


def test_if_on_a_tile_names_the_line():
    @npu_kernel
    def bad(x_ptr, n):
        v = nl.load(x_ptr + nl.arange(0, 2))
        if v > 0:
            nl.store(x_ptr + nl.arange(0, 2), v)

    with pytest.raises(CompilationError) as e:
        bad.with_options(backend="reference")[(1,)](np.zeros(2, np.float32), 1)
    assert "if v > 0" in str(e.value) and "nl.where" in str(e.value)
