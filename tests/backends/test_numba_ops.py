"""The numba backend on single features: masked and block memory access, atomics, loops
with carried values, fused regions with broadcast inputs, dot, topk/sort ties and NaN,
half-float rounding, the vectorised exp.  Expectations are numpy models written here;
the reference backend runs the same kernels where it is there.
"""
from __future__ import annotations

import numpy as np
import pytest

import npujit.language as nl
from npujit import npu_kernel
from npujit.ir import Block, Kind
from npujit.ir import types as T

from numba_support import (BF16, EPS, F16, F32, _isfloat, irt, kernel, offsets, rnd,
                           run_numba, run_reference, same, splat, wrap)

R, C = 4, 16


# --- memory: masks, bounds, block pointers, atomics -----------------------------------

def _masked_copy_kernel(dt):
    """out[i] = load(x, offs[i], mask[i], other=-1) for 8 lanes; store under the same mask
    to out2 at the same (possibly wild) offsets."""
    fn, b = kernel("masked", [np.int64, np.bool_, dt, dt, dt])
    offs_p, mask_p, x, out, out2 = fn.args
    lanes = offsets(b, (8,))
    offs = b.op(Kind.LOAD, [offs_p, lanes])
    mask = b.op(Kind.LOAD, [mask_p, lanes])
    other = splat(b, b.constant(-1, irt(dt)), (8,))
    v = b.op(Kind.LOAD, [x, offs, mask, other])
    b.create(Kind.STORE, [out, lanes, v])
    b.create(Kind.STORE, [out2, offs, v, mask])
    b.create(Kind.RETURN, [])
    return fn


@pytest.mark.parametrize("debug", [False, True], ids=["fast", "debug"])
@pytest.mark.parametrize("dt", [F32, F16, np.int8], ids=["f32", "f16", "i8"])
def test_masked_off_lanes_never_touch_memory(dt, debug):
    fn = _masked_copy_kernel(dt)
    offs = np.array([0, 10**12, -5, 3, -(10**12), 2, 1 << 40, 7], np.int64)
    mask = np.array([1, 0, 0, 1, 0, 1, 0, 1], np.bool_)
    x = np.arange(8).astype(dt)
    args = [offs, mask, x, np.zeros(8, dt), np.zeros(8, dt)]
    ref = [a.copy() for a in args]
    run_numba(fn, (1, 1, 1), args, debug=debug)
    run_reference(fn, (1, 1, 1), ref)
    want = np.where(mask, x[np.where(mask, offs, 0)], -1).astype(dt)
    same(args[3], want)
    same(args[4], np.where(np.isin(np.arange(8), offs[mask]), x, 0).astype(dt))
    same(args[3], ref[3])
    same(args[4], ref[4])


def test_debug_mode_names_the_op_of_an_out_of_bounds_access():
    fn, b = kernel("oob", [F32, F32])
    lanes = offsets(b, (4,))
    far = b.op(Kind.ADD, [lanes, splat(b, b.constant(100, T.int32), (4,))])
    b.create(Kind.STORE, [fn.args[1], lanes, b.op(Kind.LOAD, [fn.args[0], far])])
    b.create(Kind.RETURN, [])
    with pytest.raises(IndexError, match=r"npu.load at test_numba.py:1"):
        run_numba(fn, (1, 1, 1), [np.zeros(4, F32), np.zeros(4, F32)], debug=True)


def _block_kernel(dt, padding, check):
    """Load a 4x4 block at (r0, c0) of an R x C matrix (shape/strides/offsets as scalar
    arguments), store it to out (4x4), and store it back into y at the same place."""
    fn, b = kernel("blocks", [dt, dt, dt], [T.int32] * 4)
    x, out, y, rows, cols, r0, c0 = fn.args
    one = b.constant(1, T.int32)
    attrs = {"block_shape": (4, 4), "boundary_check": check, "padding": padding}
    blk = b.op(Kind.BLOCK_LOAD, [x, rows, cols, cols, one, r0, c0], attrs)
    b.create(Kind.STORE, [out, offsets(b, (4, 4)), blk])
    b.create(Kind.BLOCK_STORE, [y, rows, cols, cols, one, r0, c0, blk],
             {"block_shape": (4, 4), "boundary_check": check})
    b.create(Kind.RETURN, [])
    return fn


@pytest.mark.parametrize("padding", ["zero", "nan"])
def test_block_load_store_boundary_check_and_padding(padding):
    fn = _block_kernel(F16, padding, (0, 1))
    rows, cols = 5, 6
    x = np.arange(rows * cols).astype(F16)
    for r0, c0 in [(0, 0), (3, 4), (-2, -1)]:
        args = [x, np.zeros(16, F16), np.zeros(rows * cols, F16), rows, cols, r0, c0]
        ref = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
        run_numba(fn, (1, 1, 1), args)
        run_reference(fn, (1, 1, 1), ref)
        pad = np.nan if padding == "nan" else 0.0
        want = np.full((4, 4), pad, F16)
        back = np.zeros((rows, cols), F16)
        for i in range(4):
            for j in range(4):
                r, c = r0 + i, c0 + j
                if 0 <= r < rows and 0 <= c < cols:
                    want[i, j] = x[r * cols + c]
                    back[r, c] = x[r * cols + c]
        same(args[1].reshape(4, 4), want)
        same(args[2].reshape(rows, cols), back)
        same(args[1], ref[1])
        same(args[2], ref[2])


def test_block_coordinates_outside_an_unchecked_axis_raise_in_debug_mode():
    fn = _block_kernel(F32, "zero", (0,))
    args = [np.zeros(30, F32), np.zeros(16, F32), np.zeros(30, F32), 5, 6, 0, 4]
    with pytest.raises(IndexError, match="axis 1 is not in boundary_check"):
        run_numba(fn, (1, 1, 1), args, debug=True)


@pytest.mark.parametrize("dt", [F32, F16, np.int32], ids=["f32", "f16", "i32"])
def test_atomic_add_applies_lanes_in_order_and_returns_old_values(dt):
    """8 programs each add 8 lanes into 3 cells (duplicates within a program too)."""
    fn, b = kernel("atomics", [dt, dt, dt])
    mem, vals, old_p = fn.args
    lanes = offsets(b, (8,))
    three = splat(b, b.constant(3, T.int32), (8,))
    cell = b.op(Kind.REM, [lanes, three])
    pid = b.op(Kind.PROGRAM_ID, [], {"axis": 0})
    base = splat(b, b.op(Kind.MUL, [pid, b.constant(8, T.int32)]), (8,))
    where = b.op(Kind.ADD, [base, lanes])
    mask = b.op(Kind.CMP, [lanes, splat(b, b.constant(7, T.int32), (8,))], {"predicate": "lt"})
    v = b.op(Kind.LOAD, [vals, where])
    old = b.op(Kind.ATOMIC_RMW, [mem, cell, v, mask])
    b.create(Kind.STORE, [old_p, where, old])
    b.create(Kind.RETURN, [])
    vals = (np.arange(64) % 5 + 0.25 if _isfloat(dt) else np.arange(64) % 5).astype(dt)
    args = [np.zeros(3, dt), vals, np.full(64, 99, dt)]
    run = run_numba(fn, (8, 1, 1), args, parallel=True)
    assert run.has_atomics and not run.parallel
    # sequential model: programs in order, lanes in row-major order, rounding per add
    mem = np.zeros(3, dt)
    old = np.zeros(64, dt)
    for p in range(8):
        for i in range(7):
            c = i % 3
            old[p * 8 + i] = mem[c]
            mem[c] = rnd(np.float32(mem[c]) + np.float32(vals[p * 8 + i]), dt) if _isfloat(dt) \
                else mem[c] + vals[p * 8 + i]
    same(args[0], mem)
    same(args[2], old)


# --- control flow ---------------------------------------------------------------------

def _loop_kernel(step):
    """acc (a 4-tile) and s (a scalar) carried through for i in range(lb, ub, step):
    acc = acc * 0.5 + i; (a, b) swapped every iteration; s += 1."""
    fn, b = kernel("loop", [F32, F32, F32, np.int32], [T.int32, T.int32])
    out_acc, out_a, out_b, out_s, lb, ub = fn.args
    lanes = offsets(b, (4,))
    zeros = splat(b, b.constant(0.0, T.float32), (4,))
    ones = splat(b, b.constant(1.0, T.float32), (4,))
    loop = b.for_loop(lb, ub, b.constant(step, T.int32),
                      [zeros, ones, b.op(Kind.NEG, [ones]), b.constant(0, T.int32)])
    iv, acc, ta, tb, s = loop.body.args
    with b.at(loop.body):
        half = splat(b, b.constant(0.5, T.float32), (4,))
        ivf = splat(b, b.op(Kind.CAST, [iv], {"dtype": T.float32}), (4,))
        nxt = b.op(Kind.ADD, [b.op(Kind.MUL, [acc, half]), ivf])
        s1 = b.op(Kind.ADD, [s, b.constant(1, T.int32)])
        b.create(Kind.YIELD, [nxt, tb, ta, s1])
    acc_r, a_r, b_r, s_r = loop.results
    b.create(Kind.STORE, [out_acc, lanes, acc_r])
    b.create(Kind.STORE, [out_a, lanes, a_r])
    b.create(Kind.STORE, [out_b, lanes, b_r])
    b.create(Kind.STORE, [out_s, b.constant(0, T.int32), s_r])
    b.create(Kind.RETURN, [])
    return fn


@pytest.mark.parametrize("step,lb,ub", [(1, 0, 5), (2, 1, 8), (-1, 4, -1), (-3, 10, 0),
                                        (1, 5, 5), (1, 7, 2), (-1, 0, 3)])
def test_loop_carries_tiles_and_scalars(step, lb, ub):
    fn = _loop_kernel(step)
    args = [np.zeros(4, F32), np.zeros(4, F32), np.zeros(4, F32), np.zeros(1, np.int32), lb, ub]
    ref = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    run_numba(fn, (1, 1, 1), args)
    run_reference(fn, (1, 1, 1), ref)
    acc, a, bb, s = np.float32(0), np.float32(1), np.float32(-1), 0
    for i in range(lb, ub, step):
        acc = np.float32(np.float32(acc * np.float32(0.5)) + np.float32(i))
        a, bb = bb, a
        s += 1
    same(args[0], np.full(4, acc, F32))
    same(args[1], np.full(4, a, F32))
    same(args[2], np.full(4, bb, F32))
    assert args[3][0] == s
    for g, r in zip(args[:4], ref[:4]):
        same(g, r)


def test_loop_step_zero_is_an_error():
    fn = _loop_kernel(0)
    with pytest.raises(ValueError, match="step is 0"):
        run_numba(fn, (1, 1, 1), [np.zeros(4, F32), np.zeros(4, F32), np.zeros(4, F32),
                                  np.zeros(1, np.int32), 0, 4])


def test_loop_yielding_a_transpose_of_its_own_tile():
    """acc = trans(acc) + acc[0,0]-free update: reading acc at other elements while
    writing it must see the previous iteration's values."""
    fn, b = kernel("transloop", [F32, F32])
    init = b.op(Kind.LOAD, [fn.args[0], offsets(b, (4, 4))])
    loop = b.for_loop(b.constant(0, T.int32), b.constant(3, T.int32), b.constant(1, T.int32), [init])
    _, acc = loop.body.args
    with b.at(loop.body):
        one = splat(b, b.constant(1.0, T.float32), (4, 4))
        b.create(Kind.YIELD, [b.op(Kind.ADD, [b.op(Kind.TRANS, [acc], {"perm": (1, 0)}), one])])
    b.create(Kind.STORE, [fn.args[1], offsets(b, (4, 4)), loop.result])
    b.create(Kind.RETURN, [])
    x = np.arange(16, dtype=F32)
    out = np.zeros(16, F32)
    run_numba(fn, (1, 1, 1), [x, out])
    want = x.reshape(4, 4)
    for _ in range(3):
        want = want.T + 1
    same(out.reshape(4, 4), want.astype(F32))


def test_program_ids_of_a_3d_grid():
    fn, b = kernel("ids", [np.int32])
    ids = [b.op(Kind.PROGRAM_ID, [], {"axis": a}) for a in range(3)]
    nps = [b.op(Kind.NUM_PROGRAMS, [], {"axis": a}) for a in range(3)]
    # linear id = x + nx * (y + ny * z); store x, y, z, nx, ny, nz at 6 * id + k
    lin = b.op(Kind.ADD, [ids[0], b.op(Kind.MUL, [nps[0], b.op(Kind.ADD, [ids[1], b.op(Kind.MUL, [nps[1], ids[2]])])])])
    base = b.op(Kind.MUL, [lin, b.constant(6, T.int32)])
    for k, v in enumerate(ids + nps):
        b.create(Kind.STORE, [fn.args[0], b.op(Kind.ADD, [base, b.constant(k, T.int32)]), v])
    b.create(Kind.RETURN, [])
    grid = (3, 2, 4)
    out = np.full(6 * 24, -1, np.int32)
    run_numba(fn, grid, [out], parallel=True, num_threads=2)
    want = [(x, y, z) + grid for z in range(4) for y in range(2) for x in range(3)]
    np.testing.assert_array_equal(out.reshape(24, 6), np.array(want, np.int32))


# --- fused regions --------------------------------------------------------------------

def test_fused_region_reads_broadcast_inputs_in_place():
    """fused(x: RxC, row: 1xC, s: scalar) { u = x * broadcast(row) + splat(s); e = exp(u) }
    with u also reduced (so the region is computed into tiles)."""
    fn, b = kernel("fused", [F32, F32, F32, F32, F32])
    xp, rowp, out_u, out_e, out_sum = fn.args
    x = b.op(Kind.LOAD, [xp, offsets(b, (R, C))])
    row = b.op(Kind.LOAD, [rowp, offsets(b, (1, C))])
    s = b.constant(0.25, T.float32)
    body = Block([x.type, row.type, s.type])
    with b.at(body):
        bx, brow, bs = body.args
        t = b.op(Kind.MUL, [bx, b.op(Kind.BROADCAST, [brow], {"shape": (R, C)})])
        u = b.op(Kind.ADD, [t, b.op(Kind.SPLAT, [bs], {"shape": (R, C)})])
        e = b.op(Kind.EXP, [u])
        b.create(Kind.YIELD, [u, e])
    fused = b.create(Kind.FUSED, [x, row, s], result_types=[u.type, e.type], regions=[body])
    u_r, e_r = fused.results
    b.create(Kind.STORE, [out_u, offsets(b, (R, C)), u_r])
    b.create(Kind.STORE, [out_e, offsets(b, (R, C)), e_r])
    total = b.op(Kind.REDUCE, [b.op(Kind.REDUCE, [e_r], {"kind": "sum", "axis": 1})],
                 {"kind": "sum", "axis": 0})
    b.create(Kind.STORE, [out_sum, b.constant(0, T.int32), total])
    b.create(Kind.RETURN, [])
    rng = np.random.default_rng(3)
    xv = rng.uniform(-2, 2, (R, C)).astype(F32)
    rv = rng.uniform(-2, 2, (1, C)).astype(F32)
    args = [xv.reshape(-1), rv.reshape(-1), np.zeros(R * C, F32), np.zeros(R * C, F32),
            np.zeros(1, F32)]
    run = run_numba(fn, (1, 1, 1), args)
    u = (xv * rv + np.float32(0.25)).astype(F32)
    same(args[2].reshape(R, C), u)
    same(args[3].reshape(R, C), np.exp(u), tol=2 * EPS[F32])
    same(args[4], np.array([np.exp(u.astype(np.float64)).sum()], F32), tol=1e-5)
    # one nest for the region; the broadcast row and the splat are never materialised
    fused_code = run.source.split("# npu.fused")[1].split("# npu.")[0]
    assert fused_code.count("for ") == 2 and "np.empty" not in fused_code
    assert "np.empty(64" not in run.source.replace(f"np.empty({R * C}", "")  # no (R,C) row copy


def test_unfused_elementwise_and_fused_give_the_same_bits():
    """The same f16 chain, once as separate ops and once inside npu.fused."""
    def build(fuse):
        fn, b = kernel("chain", [F16, F16])
        x = b.op(Kind.LOAD, [fn.args[0], offsets(b, (R, C))])
        if fuse:
            body = Block([x.type])
            with b.at(body):
                y = b.op(Kind.SIGMOID, [b.op(Kind.MUL, [body.args[0], body.args[0]])])
                b.create(Kind.YIELD, [y])
            y = b.create(Kind.FUSED, [x], result_types=[y.type], regions=[body]).result
        else:
            y = b.op(Kind.SIGMOID, [b.op(Kind.MUL, [x, x])])
        b.create(Kind.STORE, [fn.args[1], offsets(b, (R, C)), y])
        b.create(Kind.RETURN, [])
        return fn
    x = np.random.default_rng(2).uniform(-6, 6, R * C).astype(F16)
    outs = []
    for fuse in (False, True):
        out = np.zeros(R * C, F16)
        run_numba(build(fuse), (1, 1, 1), [x, out])
        outs.append(out)
    same(outs[0], outs[1])


@npu_kernel
def _where_chain(x_ptr, y_ptr, DEPTH: nl.constexpr):
    offs = nl.arange(0, 16)
    x = nl.load(x_ptr + offs)
    acc = x
    for _ in nl.static_range(DEPTH):    # each step reads acc three times
        acc = nl.where(acc > 0.5, nl.exp(acc * 0.01) + x, acc * 1.001 - 0.1)
    nl.store(y_ptr + offs, acc)


def test_a_deep_chain_reading_each_value_several_times_compiles_in_linear_time():
    """40 fused steps, each reading the previous three times: the region's values form a
    DAG whose tree has 3**40 nodes.  Code generation walked it as a tree (leaves, sizes,
    broadcasts), which never finished past ~20 steps; each value is now visited once."""
    x = np.random.default_rng(4).uniform(-1, 2, 16).astype(F32)
    y = np.zeros(16, F32)
    _where_chain.with_options(backend="numba")[(1,)](x, y, DEPTH=40)
    want = x.copy()
    for _ in range(40):
        want = np.where(want > 0.5, np.exp(want * F32(0.01)) + x,
                        want * F32(1.001) - F32(0.1)).astype(F32)
    np.testing.assert_allclose(y, want, rtol=1e-5)


# --- the Cube, selection --------------------------------------------------------------

@pytest.mark.parametrize("m,k,n", [(4, 8, 16), (33, 63, 30)], ids=["even", "odd"])
@pytest.mark.parametrize("dt", [F16, BF16, F32, np.int8], ids=["f16", "bf16", "f32", "i8"])
def test_dot_accumulates_in_f32_or_i32(dt, m, k, n):
    acc_dt = np.int32 if dt is np.int8 else F32
    fn, b = kernel("dot", [dt, dt, acc_dt, acc_dt])
    a = b.op(Kind.LOAD, [fn.args[0], offsets(b, (m, k))])
    bb = b.op(Kind.LOAD, [fn.args[1], offsets(b, (k, n))])
    acc = b.op(Kind.LOAD, [fn.args[2], offsets(b, (m, n))])
    b.create(Kind.STORE, [fn.args[3], offsets(b, (m, n)), b.op(Kind.DOT, [a, bb, acc])])
    b.create(Kind.RETURN, [])
    rng = np.random.default_rng(5)
    if dt is np.int8:
        av = rng.integers(-128, 128, (m, k)).astype(dt)
        bv = rng.integers(-128, 128, (k, n)).astype(dt)
        accv = rng.integers(-2**31, 2**31, (m, n)).astype(np.int32)
        want = wrap(accv.astype(object) + av.astype(object) @ bv.astype(object), np.int32)
    else:
        av = rng.uniform(-1, 1, (m, k)).astype(dt)
        bv = rng.uniform(-1, 1, (k, n)).astype(dt)
        accv = rng.uniform(-1, 1, (m, n)).astype(F32)
        want = (accv.astype(np.float64) + av.astype(np.float64) @ bv.astype(np.float64))
    args = [av.reshape(-1), bv.reshape(-1), accv.reshape(-1), np.zeros(m * n, acc_dt)]
    run_numba(fn, (1, 1, 1), args)
    got = args[3].reshape(m, n)
    if dt is np.int8:
        same(got, want)
    else:
        np.testing.assert_allclose(got, want, rtol=0, atol=k * 2.0 ** -22)


@pytest.mark.parametrize("reread", [False, True], ids=["acc-dies", "acc-reread"])
def test_k_loop_dot_accumulates_into_its_carried_tile(reread):
    """``acc = dot(a_k, b_k, acc)`` in a loop adds into the carried slot itself (no copies);
    when the body reads ``acc`` again after the dot, the old value must survive."""
    m = k = n = 4
    fn, b = kernel("kloop", [F32, F32, F32])
    init = splat(b, b.constant(0.0, T.float32), (m, n))
    loop = b.for_loop(b.constant(0, T.int32), b.constant(3, T.int32), b.constant(1, T.int32),
                      [init])
    iv, acc = loop.body.args
    with b.at(loop.body):
        base = b.op(Kind.MUL, [iv, b.constant(m * k, T.int32)])
        offs = b.op(Kind.ADD, [offsets(b, (m, k)), splat(b, base, (m, k))])
        a = b.op(Kind.LOAD, [fn.args[0], offs])
        bb = b.op(Kind.LOAD, [fn.args[1], offs])
        nxt = b.op(Kind.DOT, [a, bb, acc])
        if reread:
            nxt = b.op(Kind.ADD, [nxt, acc])
        b.create(Kind.YIELD, [nxt])
    b.create(Kind.STORE, [fn.args[2], offsets(b, (m, n)), loop.result])
    b.create(Kind.RETURN, [])
    rng = np.random.default_rng(7)
    av = rng.integers(-3, 4, (3, m, k)).astype(F32)
    bv = rng.integers(-3, 4, (3, k, n)).astype(F32)
    out = np.zeros(m * n, F32)
    src = run_numba(fn, (1, 1, 1), [av.reshape(-1), bv.reshape(-1), out]).source
    want = np.zeros((m, n))
    for i in range(3):
        want = want + av[i].astype(np.float64) @ bv[i] + (want if reread else 0)
    same(out.reshape(m, n), want.astype(F32))
    if not reread:
        assert "dot_f(load, load_1, carried," in src.replace("cl.", "")


def test_topk_ties_go_to_the_lower_index_and_nan_ranks_first():
    row = np.array([1.0, 3.0, np.nan, 3.0, -np.inf, np.nan, 3.0, 2.0], F32)
    fn, b = kernel("topk", [F32, F32, np.int32])
    x = b.op(Kind.LOAD, [fn.args[0], offsets(b, (8,))])
    for k in (5, 8):
        vals, idx = b.create(Kind.TOPK, [x], {"k": k, "axis": 0}).results
        base = b.constant(0 if k == 5 else 5, T.int32)
        where = b.op(Kind.ADD, [splat(b, base, (k,)), offsets(b, (k,))])
        b.create(Kind.STORE, [fn.args[1], where, vals])
        b.create(Kind.STORE, [fn.args[2], where, idx])
    b.create(Kind.RETURN, [])
    args = [row, np.zeros(13, F32), np.zeros(13, np.int32)]
    run_numba(fn, (1, 1, 1), args)
    order = [2, 5, 1, 3, 6, 7, 0, 4]        # NaNs by index, then 3s by index, ...
    np.testing.assert_array_equal(args[2], order[:5] + order)
    same(args[1], row[order[:5] + order])


def test_sort_is_stable_for_signed_zeros():
    row = np.array([0.0, -0.0, 1.0, -0.0, 0.0, np.nan, -1.0, 0.0], F32)
    got = []
    for desc in (False, True):
        fn, b = kernel("sort", [F32, F32])
        x = b.op(Kind.LOAD, [fn.args[0], offsets(b, (8,))])
        b.create(Kind.STORE, [fn.args[1], offsets(b, (8,)),
                              b.op(Kind.SORT, [x], {"axis": 0, "descending": desc})])
        b.create(Kind.RETURN, [])
        out = np.zeros(8, F32)
        run_numba(fn, (1, 1, 1), [row, out])
        got.append(out)
    want = np.sort(row, kind="stable")
    same(got[0], want)
    same(got[1], want[::-1])


# --- numerics -------------------------------------------------------------------------

@pytest.mark.parametrize("dt,tie", [(F16, 2.0 ** -11), (BF16, 2.0 ** -8)], ids=["f16", "bf16"])
def test_halves_round_after_every_op(dt, tie):
    """1 + tie + tie: each add is a tie that rounds back to 1 (even); rounding once at
    the end would give 1 + ulp."""
    fn, b = kernel("ties", [dt, dt])
    x = b.op(Kind.LOAD, [fn.args[0], offsets(b, (2,))])
    t = splat(b, b.constant(tie, irt(dt)), (2,))
    b.create(Kind.STORE, [fn.args[1], offsets(b, (2,)), b.op(Kind.ADD, [b.op(Kind.ADD, [x, t]), t])])
    b.create(Kind.RETURN, [])
    out = np.zeros(2, dt)
    run_numba(fn, (1, 1, 1), [np.ones(2, dt), out])
    assert float(out[0]) == 1.0


def test_exp_f32_is_within_its_ulp_bound():
    """The numba backend's f32 exp against float64 exp: at most 1.01 ulp of the
    correctly rounded result (every f32 input measured 1.0095; docs/semantics.md), and
    exactly the rounded result's inf, 0 and NaN at the edges."""
    from numba import njit

    from npujit.backends.numba.scalar_lib import exp_f32

    @njit(cache=True)
    def apply(xs, out):
        for i in range(xs.shape[0]):
            out[i] = exp_f32(xs[i])
    big = np.float32(88.72283935546875)            # the first input whose exp rounds to inf
    tiny = np.float32(-103.97207708)               # about where exp rounds to 0
    edges = [np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-30, -1e-30, 1e-45,
             np.finfo(F32).max, -np.finfo(F32).max, 89.0, -104.0, 200.0, -200.0,
             -59.921878814697266, -87.33654, -87.3366, 88.0, -88.0]
    near = [np.nextafter(v, d, dtype=F32) if k else v
            for v in (big, tiny) for d in (-np.inf, np.inf) for k in range(3)]
    walk = np.concatenate([np.arange(-1024, 1024, dtype=np.int32) + np.int32(b.view(np.int32))
                           for b in (big, tiny)]).view(F32)
    xs = np.concatenate([np.linspace(-104, 89, 1 << 21, dtype=F32),
                         np.array(edges + near, F32), walk])
    out = np.empty_like(xs)
    apply(xs, out)
    with np.errstate(all="ignore"):
        exact = np.exp(xs.astype(np.float64))
        r32 = exact.astype(F32)
    np.testing.assert_array_equal(np.isnan(out), np.isnan(xs))
    edge = np.isinf(r32) | (r32 == 0)
    np.testing.assert_array_equal(out[edge], r32[edge])
    ok = np.isfinite(r32) & (r32 != 0)
    assert np.all(np.isfinite(out[ok]) & (out[ok] != 0))
    ulps = np.abs(out[ok] - exact[ok]) / np.spacing(r32[ok]).astype(np.float64)
    assert ulps.max() <= 1.01


def test_half_scalar_arguments_round_once():
    fn, b = kernel("scalar_arg", [F16], [T.float16])
    b.create(Kind.STORE, [fn.args[0], b.constant(0, T.int32), fn.args[1]])
    b.create(Kind.RETURN, [])
    v = 1.0 + 2.0 ** -11 + 2.0 ** -30   # just above a tie: f64 -> f16 rounds up
    out = np.zeros(1, F16)
    run_numba(fn, (1, 1, 1), [out, v])
    assert out[0] == np.float16(v)


@pytest.mark.parametrize("half", [F16, BF16], ids=["f16", "bf16"])
def test_half_encoders_match_numpy_bit_for_bit(half):
    """Every half value, the f32 midpoints between neighbours (the ties) and their f32
    neighbours, plus 1M random f32 bit patterns (NaN payloads included).  The encoders
    were also checked on all 2**32 f32 patterns once (not in the suite: ~15 min)."""
    from numba import njit

    from npujit.backends.numba import halfprec as hp

    name = "f16" if half is F16 else "bf16"
    encode, rounder = getattr(hp, f"f32_to_{name}_bits"), getattr(hp, f"round_{name}")

    @njit(cache=True)
    def apply(xs, bits, rounded):
        for i in range(xs.shape[0]):
            bits[i] = encode(xs[i])
            rounded[i] = rounder(xs[i])
    values = np.arange(1 << 16, dtype=np.uint16).view(half).astype(F32)
    values = np.sort(values[np.isfinite(values)])
    mids = ((values[:-1].astype(np.float64) + values[1:]) / 2).astype(F32)
    rng = np.random.default_rng(11)
    xs = np.concatenate([values, mids, np.nextafter(mids, np.inf), np.nextafter(mids, -np.inf),
                         rng.integers(0, 1 << 32, 1 << 20, dtype=np.uint64).astype(np.uint32).view(F32)])
    bits = np.empty(xs.size, np.uint16)
    rounded = np.empty(xs.size, F32)
    apply(xs, bits, rounded)
    with np.errstate(all="ignore"):
        want = xs.astype(half)
    np.testing.assert_array_equal(bits, want.view(np.uint16))
    same(rounded, want.astype(F32))


def _fmax_run(v, largest):
    """np.fmax/np.fmin over a run, with +0.0 above -0.0 (the order of the IEEE bits)."""
    nums = v[~np.isnan(v)]
    if nums.size == 0:
        return np.float32(np.nan)
    best = nums.max() if largest else nums.min()
    if best == 0:
        pos = np.any((nums == 0) & ~np.signbit(nums))
        neg = np.any((nums == 0) & np.signbit(nums))
        return F32(0.0) if (pos if largest else not neg) else F32(-0.0)
    return best


def test_line_max_and_min_skip_nans_of_either_sign():
    from npujit.backends.numba import reduce_lib as rl
    rng = np.random.default_rng(11)
    pos_nan, neg_nan = np.array([0x7FC00000, 0xFFC00001], np.uint32).view(F32)
    pool = np.array([pos_nan, neg_nan, 0.0, -0.0, np.inf, -np.inf, 1.5, -2.5, 1e-45], F32)
    for trial in range(400):
        n = int(rng.integers(0, 40))
        v = np.concatenate([rng.choice(pool, 3), rng.choice(pool, n)]).astype(F32)
        start = 3 if trial % 2 else 0
        run = v[start:]
        for largest, fn in ((True, rl.line_max_f), (False, rl.line_min_f)):
            got, want = fn(v, start, run.size), _fmax_run(run, largest)
            assert (np.isnan(got) and np.isnan(want)) or (
                got == want and np.signbit(got) == np.signbit(want)), (run, largest, got)
