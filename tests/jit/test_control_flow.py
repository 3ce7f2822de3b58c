"""Data-dependent control flow: ``if``/``elif``/``else``, ``while``, ``and``/``or``/``not``,
early ``return`` and ``a if c else b`` on run-time scalars become scf.if / scf.while and
run as plain Python says (numpy re-computes each program's answer); conditions on Python
values still run at trace time.  Reference backend, tiny grids; one numba batch."""
from __future__ import annotations

import numpy as np
import pytest

import npujit.language as nl
from npujit import CompilationError, npu_kernel

REF = "reference"


@npu_kernel(backend=REF)
def branches(x_ptr, out_ptr, n, BLOCK: nl.constexpr):
    pid = nl.program_id(0)
    offs = pid * BLOCK + nl.arange(0, BLOCK)
    x = nl.load(x_ptr + offs)
    scale = 1.0                        # defined before, reassigned in one branch
    if pid % 3 == 0:
        scale = 2.0
        y = x * scale                  # defined in every branch
    elif pid % 3 == 1:
        if n > 10:                     # nested, on an argument
            y = x + 10.0
        else:
            y = x - 10.0
    else:
        y = -x
    nl.store(out_ptr + offs, y * scale)


def _branches_ref(x, n, block, programs):
    out = np.empty_like(x)
    for pid in range(programs):
        xs = x[pid * block:(pid + 1) * block]
        scale = 1.0
        if pid % 3 == 0:
            scale = 2.0
            y = xs * scale
        elif pid % 3 == 1:
            y = xs + 10 if n > 10 else xs - 10
        else:
            y = -xs
        out[pid * block:(pid + 1) * block] = y * scale
    return out


@pytest.mark.parametrize("n", [5, 20])
def test_if_elif_else_values_from_every_branch(n):
    x = np.arange(24, dtype=np.float32)
    out = np.zeros_like(x)
    branches[(6,)](x, out, n, BLOCK=4)
    np.testing.assert_array_equal(out, _branches_ref(x, n, 4, 6))
    ir = branches.ir(x, out, n, BLOCK=4)
    assert ir.count('"scf.if"') == 3 and '"scf.for"' not in ir


@npu_kernel(backend=REF)
def loops(x_ptr, out_ptr):
    pid = nl.program_id(0)
    v = nl.load(x_ptr + pid)             # a loaded scalar decides the trip count
    steps = 0
    while v != 1 and steps < 100:        # Collatz: carried i32 scalars
        if v % 2 == 0:
            v = v // 2
        else:
            v = 3 * v + 1
        steps += 1
    acc = nl.zeros((4,), nl.float32)     # a carried tile
    i = 0
    while i < pid:
        acc = acc + i
        i += 1
    nl.store(out_ptr + pid * 5, steps)
    nl.store(out_ptr + pid * 5 + 1 + nl.arange(0, 4), acc.to(nl.int32))


def test_while_with_a_runtime_condition_and_carried_values():
    x = np.array([1, 6, 7, 27], np.int32)
    out = np.zeros(20, np.int32)
    loops[(4,)](x, out)
    for pid, v in enumerate(x.tolist()):
        steps = 0
        while v != 1 and steps < 100:
            v = v // 2 if v % 2 == 0 else 3 * v + 1
            steps += 1
        assert out[pid * 5] == steps
        assert (out[pid * 5 + 1:pid * 5 + 5] == sum(range(pid))).all()
    ir = loops.ir(x, out)
    assert ir.count('"scf.while"') == 2


@npu_kernel(backend=REF)
def logic(a_ptr, out_ptr, FLAG: nl.constexpr):
    pid = nl.program_id(0)
    a = nl.load(a_ptr + pid)
    b = nl.load(a_ptr + pid + 4)
    both = a > 0 and b > 0
    either = a > 0 or b > 0
    neither = not (a > 0 or b > 0)
    chained = a > 0 and b > 0 and a < b
    mixed = FLAG and a > 0               # a Python value first: Python's short circuit
    pick = a if a > b else b             # a conditional expression on run-time scalars
    nl.store(out_ptr + pid * 6, both.to(nl.int32))
    nl.store(out_ptr + pid * 6 + 1, either.to(nl.int32))
    nl.store(out_ptr + pid * 6 + 2, neither.to(nl.int32))
    nl.store(out_ptr + pid * 6 + 3, chained.to(nl.int32))
    nl.store(out_ptr + pid * 6 + 4, (mixed + 0) * 1)
    nl.store(out_ptr + pid * 6 + 5, pick)


def test_and_or_not_and_conditional_expressions():
    a = np.array([1, -2, 3, 0, 5, 4, -1, 0], np.int32)
    for flag in (True, False):
        out = np.zeros(24, np.int32)
        logic[(4,)](a, out, FLAG=flag)
        for pid in range(4):
            x, y = int(a[pid]), int(a[pid + 4])
            want = [x > 0 and y > 0, x > 0 or y > 0, not (x > 0 or y > 0),
                    x > 0 and y > 0 and x < y, bool(flag and x > 0), x if x > y else y]
            assert out[pid * 6:pid * 6 + 6].tolist() == [int(w) for w in want], (flag, pid)


@npu_kernel(backend=REF)
def mixed_types(out_ptr):
    pid = nl.program_id(0)
    v = pid if pid > 1 else 0.5          # an i32 scalar next to a float: both become f32
    w = pid * 2 if pid > 1 else True     # next to a bool: the bool becomes an i32
    nl.store(out_ptr + pid, v + w)


def test_a_number_next_to_a_scalar_takes_their_common_type():
    out = np.zeros(4, np.float32)
    mixed_types[(4,)](out)
    assert out.tolist() == [1.5, 1.5, 6.0, 9.0]


@nl.inline
def _relu_scalar(v):
    if v < 0:                            # a helper's early return yields its value
        return 0
    return v


@npu_kernel(backend=REF)
def guarded(x_ptr, out_ptr, n, BLOCK: nl.constexpr):
    pid = nl.program_id(0)
    if pid * BLOCK >= n:                 # the Triton guard: the rest is the else region
        return
    offs = pid * BLOCK + nl.arange(0, BLOCK)
    x = nl.load(x_ptr + offs, mask=offs < n, other=0)
    if nl.sum(x, axis=0) > 100:          # a branch guarding the rest of the kernel
        nl.store(out_ptr + offs, x * 0 - 1, mask=offs < n)
        return
    first = _relu_scalar(nl.load(x_ptr + pid * BLOCK))
    nl.store(out_ptr + offs, x + first, mask=offs < n)


def test_early_return_guard_and_inside_a_branch():
    n, block = 13, 4
    x = np.array([-3, 1, 2, 3, 50, 60, 1, 1, -1, 2, 2, 2, 9], np.int32)
    out = np.full(24, 77, np.int32)
    guarded[(6,)](x, out, n, BLOCK=block)
    want = np.full(24, 77, np.int32)
    for pid in range(6):
        if pid * block >= n:
            continue
        xs = x[pid * block:min(n, (pid + 1) * block)]
        if xs.sum() > 100:
            want[pid * block:pid * block + xs.size] = -1
            continue
        want[pid * block:pid * block + xs.size] = xs + max(int(xs[0]), 0)
    np.testing.assert_array_equal(out, want)


@npu_kernel(backend=REF)
def static_if(x_ptr, out_ptr, MODE: nl.constexpr):
    x = nl.load(x_ptr + nl.arange(0, 4))
    if MODE == 0:
        y = x + 1.0
    elif MODE == 1 and MODE > 0:
        y = x * 3.0
    else:
        nl.static_assert(False, "never traced for MODE 0 or 1")
    nl.store(out_ptr + nl.arange(0, 4), y)


def test_constexpr_conditions_stay_at_trace_time():
    x = np.arange(4, dtype=np.float32)
    out = np.zeros(4, np.float32)
    for mode, want in ((0, x + 1), (1, x * 3)):
        static_if[(1,)](x, out, MODE=mode)
        np.testing.assert_array_equal(out, want)
        assert '"scf.if"' not in static_if.ir(x, out, MODE=mode)


def _error(kernel, *args, **kw) -> str:
    with pytest.raises(CompilationError) as e:
        kernel[(1,)](*args, **kw)
    return str(e.value)


def test_clear_errors_for_what_a_runtime_if_cannot_do():
    @npu_kernel(backend=REF)
    def one_branch(x_ptr):
        v = nl.load(x_ptr)
        if v > 0:
            w = v * 2
        nl.store(x_ptr, w)

    @npu_kernel(backend=REF)
    def two_types(x_ptr, y_ptr):
        v = nl.load(x_ptr)
        if v > 0:
            w = v
        else:
            w = nl.load(y_ptr + nl.arange(0, 2))
        nl.store(x_ptr, w)

    @npu_kernel(backend=REF)
    def breaks(x_ptr):
        v = nl.load(x_ptr)
        for i in nl.static_range(3):
            if v > i:
                break
        nl.store(x_ptr, v)

    x = np.ones(2, np.float32)
    msg = _error(one_branch, x)
    assert "'w'" in msg and "only one branch" in msg and "nl.store(x_ptr, w)" in msg
    msg = _error(two_types, x, x)
    assert "Mismatched type for w " in msg and "tensor<2xf32>" in msg
    msg = _error(breaks, x)
    assert "`break`" in msg and "if v > i:" in msg


@npu_kernel(backend=REF)
def grouped_matmul(a_ptr, b_ptr, c_ptr, M, N, K, valid_rows,
                   stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                   BLOCK_M: nl.constexpr, BLOCK_N: nl.constexpr, BLOCK_K: nl.constexpr,
                   GROUP_M: nl.constexpr):
    # Triton's matmul tutorial as written (grouped ordering), plus the MoE kernels' guard
    pid = nl.program_id(0)
    num_pid_m = nl.cdiv(M, BLOCK_M)
    num_pid_n = nl.cdiv(N, BLOCK_N)
    num_pid_in_group = GROUP_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_M
    group_size_m = nl.minimum(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m
    if pid_m * BLOCK_M >= valid_rows:
        return
    offs_am = pid_m * BLOCK_M + nl.arange(0, BLOCK_M)
    offs_bn = pid_n * BLOCK_N + nl.arange(0, BLOCK_N)
    offs_k = nl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + (offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak)
    b_ptrs = b_ptr + (offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn)
    acc = nl.zeros((BLOCK_M, BLOCK_N), dtype=nl.float32)
    for k in range(0, nl.cdiv(K, BLOCK_K)):
        k_left = K - k * BLOCK_K
        a = nl.load(a_ptrs, mask=(offs_am[:, None] < M) & (offs_k[None, :] < k_left), other=0.0)
        b = nl.load(b_ptrs, mask=(offs_k[:, None] < k_left) & (offs_bn[None, :] < N), other=0.0)
        acc = nl.dot(a, b, acc)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    c_ptrs = c_ptr + stride_cm * offs_am[:, None] + stride_cn * offs_bn[None, :]
    nl.store(c_ptrs, acc, mask=(offs_am[:, None] < M) & (offs_bn[None, :] < N))


def test_triton_grouped_matmul_with_an_early_return_guard():
    from npujit.sim import ASCEND_910B_LIKE, DebugOptions
    rng = np.random.default_rng(0)
    M, N, K, valid = 48, 32, 40, 30
    a = rng.integers(-3, 4, (M, K)).astype(np.float16)
    b = rng.integers(-3, 4, (K, N)).astype(np.float16)
    want = np.full((M, N), -1.0, np.float32)
    want[:32] = (a.astype(np.float32) @ b.astype(np.float32))[:32]   # row tile 2 returns
    meta = dict(BLOCK_M=16, BLOCK_N=16, BLOCK_K=16, GROUP_M=2)
    c = np.full((M, N), -1.0, np.float32)
    args = (a, b, c, M, N, K, valid, K, 1, N, 1, N, 1)
    grouped_matmul[(6,)](*args, **meta)
    np.testing.assert_array_equal(c, want)
    c[:] = -1.0        # the AIC/AIV split of a guarded Cube kernel, every debug check on
    report = grouped_matmul.simulate(*args, grid=(6,), spec=ASCEND_910B_LIKE,
                                     debug=DebugOptions.full(raise_on_race=True), **meta)
    np.testing.assert_array_equal(c, want)
    assert report.races == [] and report.flag_issues == [] and report.cube_flops > 0


@npu_kernel(backend="numba")
def numba_batch(x_ptr, out_ptr, n, BLOCK: nl.constexpr):
    pid = nl.program_id(0)
    if pid * BLOCK >= n:
        return
    offs = pid * BLOCK + nl.arange(0, BLOCK)
    x = nl.load(x_ptr + offs)
    y = x
    if pid % 2 == 0 and n > 4:
        y = x * 2.0
    k = 0
    while k < pid:
        k += 1
        y = y + 1.0
    s = 3.0 if not pid == 1 else -3.0
    nl.store(out_ptr + offs, y + s)


def test_numba_runs_the_same_control_flow():
    x = np.arange(16, dtype=np.float32)
    out = np.full(20, 9, np.float32)
    numba_batch[(5,)](x, out, 16, BLOCK=4)
    ref = np.full(20, 9, np.float32)
    numba_batch.with_options(backend=REF)[(5,)](x, ref, 16, BLOCK=4)
    want = np.full(20, 9, np.float32)
    for pid in range(4):
        y = x[pid * 4:(pid + 1) * 4] * (2.0 if pid % 2 == 0 else 1.0) + pid
        want[pid * 4:(pid + 1) * 4] = y + (-3.0 if pid == 1 else 3.0)
    np.testing.assert_array_equal(out, want)
    np.testing.assert_array_equal(ref, want)
