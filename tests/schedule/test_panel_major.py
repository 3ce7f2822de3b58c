"""A dot operand read from a panel-major workspace (``kernels/moe/experts.py``'s activation):
column ``c`` of row ``r`` at ``(c // P) * R * P + r * P + c % P``.  The integer division and
remainder by one value are address work for the scalar unit (ir/schedule/placement.py), so
no address tile goes to UB; the numbers match numpy on every tier, through the simulator
under the full debug options, and on the Ascend C twin (one ND -> NZ copy per row and panel,
backends/ascendc/emit_cube_pointers.py); the HBM bytes are the bursts of the panels' rows."""
import numpy as np

import npujit.language as nl
from npujit import npu_kernel
from npujit.ir import parse_function
from npujit.sim import ASCEND_910B_LIKE, DebugOptions
from npujit.testing import check_kernel

R, K, N, P, BM, BK = 24, 96, 32, 32, 16, 64


@npu_kernel
def panel_dot_kernel(ws_ptr, b_ptr, out_ptr, R, K, N, P: nl.constexpr, BM: nl.constexpr,
                     BK: nl.constexpr, BN: nl.constexpr):
    r = nl.program_id(0) * BM        # named as the emitted row loops' variable once was
    rows = r + nl.arange(0, BM)
    kk = nl.arange(0, BK)
    ns = nl.arange(0, BN)
    acc = nl.zeros((BM, BN), dtype=nl.float32)
    for k in nl.range(0, K, BK, num_stages=2):
        cols = k + kk
        a = nl.load(ws_ptr + ((cols // P) * (R * P) + cols % P)[None, :] + rows[:, None] * P,
                    mask=(rows < R)[:, None] & (cols < K)[None, :], other=0.0)
        b = nl.load(b_ptr + cols[:, None] * N + ns[None, :], mask=(cols < K)[:, None], other=0.0)
        acc = nl.dot(a, b, acc)
    nl.store(out_ptr + rows[:, None] * N + ns[None, :], acc, mask=(rows < R)[:, None])


def _panels(a: np.ndarray) -> np.ndarray:
    """``a`` [R, K] as the flat panel-major workspace: panel j holds columns j*P..j*P+P-1
    of every row, row after row."""
    rows, k = a.shape
    padded = np.zeros((rows, -(-k // P) * P), a.dtype)
    padded[:, :k] = a
    return np.ascontiguousarray(padded.reshape(rows, -1, P).transpose(1, 0, 2)).ravel()


def _args(dtype=np.float16, seed=3):
    rng = np.random.default_rng(seed)
    a = rng.integers(-4, 5, (R, K)).astype(dtype)
    b = rng.integers(-4, 5, (K, N)).astype(dtype)
    return a, [_panels(a), b, np.zeros((R, N), np.float32), R, K, N]


def _want(a, b):
    return a.astype(np.float64) @ b.astype(np.float64)    # small integers: exact in f32


KW = dict(P=P, BM=BM, BK=BK, BN=N)


def test_panel_major_rows_are_the_matrix_on_the_cpu_tiers():
    a, args = _args()
    res = check_kernel(panel_dot_kernel, (-(-R // BM),), args,
                       lambda ws, b, out, *_: _want(a, b).astype(np.float32),
                       kwargs=KW, backends="reference,numba,scheduled")
    assert res.ok, res


def test_the_division_and_remainder_are_address_work_not_ub_tiles():
    _, args = _args()
    k = panel_dot_kernel.with_options(backend="reference", spec=ASCEND_910B_LIKE)
    fn = parse_function(k.compile(*args, **KW).ir_text)
    ub_int_2d = [op for op in fn.walk() if op.attrs.get("scope") == "UB" and op.results
                 and getattr(op.results[0].type, "rank", 0) == 2
                 and op.results[0].type.dtype.is_int]
    assert not ub_int_2d, [(op.kind.value, str(op.results[0].type)) for op in ub_int_2d]


@npu_kernel
def data_division_kernel(x_ptr, d_ptr, out_ptr, B: nl.constexpr):
    i = nl.arange(0, B)
    d = nl.load(d_ptr + i)                     # a divisor per lane: data, not an address
    nl.store(out_ptr + i, nl.load(x_ptr + i // d))


def test_a_division_by_a_loaded_tile_stays_vector_work():
    x, d = np.arange(16, dtype=np.float32), np.full(16, 2, np.int32)
    k = data_division_kernel.with_options(backend="reference", spec=ASCEND_910B_LIKE)
    fn = parse_function(k.compile(x, d, np.zeros(16, np.float32), B=16).ir_text)
    divs = [op for op in fn.walk() if op.kind.value == "npu.idiv"] + [
        inner for op in fn.walk() if op.kind.value == "npu.fused" for inner in op.body.ops
        if inner.kind.value == "npu.idiv"]
    assert divs
    placed = [op for op in fn.walk() if str(op.attrs.get("pipe")) == "VECTOR"]
    assert any(op.kind.value == "npu.idiv" or (op.kind.value == "npu.fused" and any(
        i.kind.value == "npu.idiv" for i in op.body.ops)) for op in placed)
    out = np.zeros(16, np.float32)
    data_division_kernel.with_options(backend="numba")[(1,)](x, d, out, B=16)
    np.testing.assert_array_equal(out, x[np.arange(16) // 2])


def test_panel_major_rows_simulate_right_under_the_full_debug_options():
    a, args = _args(seed=4)
    r = panel_dot_kernel.with_options(backend="reference").simulate(
        *args, grid=(-(-R // BM),), spec=ASCEND_910B_LIKE, debug=DebugOptions.full(), **KW)
    np.testing.assert_array_equal(args[2], _want(a, args[1]).astype(np.float32))
    assert not r.races


def test_panel_major_rows_on_the_ascend_c_twin():
    a, args = _args(seed=5)
    panel_dot_kernel.with_options(backend="ascendc-twin")[(-(-R // BM),)](*args, **KW)
    np.testing.assert_array_equal(args[2], _want(a, args[1]).astype(np.float32))
