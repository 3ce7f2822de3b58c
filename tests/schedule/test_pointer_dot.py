"""Triton's matmul written with pointer tiles (``a_ptrs += BLOCK_K * stride_ak``, masked
loads, ``acc += nl.dot(a, b)``) compiles, schedules and simulates on both presets, also
under every debug switch, with numpy's product as the oracle; the reference and numba
recording paths give the same streams."""
import numpy as np
import pytest

from npujit import cdiv
from npujit.backends.reference.backend import run_buffered
from npujit.ir import Kind, parse_function
from npujit.sim import ASCEND_910_LIKE, ASCEND_910B_LIKE, DebugOptions

from .kernels_for_tests import pointer_matmul_kernel, shifted_pointer_matmul_kernel

FULL = DebugOptions.full()
M, N, K, B = 40, 24, 48, 16
META = {"BLOCK_M": B, "BLOCK_N": B, "BLOCK_K": B}
GRID = (cdiv(M, B), cdiv(N, B))


def _launch():
    rng = np.random.default_rng(7)
    a = rng.integers(-4, 5, (M, K)).astype(np.float16)
    b = rng.integers(-4, 5, (K, N)).astype(np.float16)
    c = np.zeros((M, N), np.float32)
    # small integers: every product and sum is exact in f32, any order gives numpy's
    return (a, b, c, M, N, K, K, 1, N, 1, N, 1), a.astype(np.float32) @ b.astype(np.float32)


def test_the_accumulating_add_folds_into_the_dot():
    args, _ = _launch()
    fn = parse_function(pointer_matmul_kernel.with_options(spec=ASCEND_910B_LIKE)
                        .compile(*args, **META).ir_text)
    dots = [op for op in fn.walk() if op.kind is Kind.DOT]
    assert len(dots) == 1 and len(dots[0].operands) == 3       # a, b, acc
    assert dots[0].attrs["pipe"] == "CUBE" and dots[0].attrs["scope"] == "L0C"


@pytest.mark.parametrize("spec", [ASCEND_910B_LIKE, ASCEND_910_LIKE], ids=lambda s: s.name)
@pytest.mark.parametrize("debug", [None, FULL], ids=["plain", "debug"])
def test_simulates_with_numpys_numbers(spec, debug):
    args, want = _launch()
    report = pointer_matmul_kernel.simulate(*args, grid=GRID, spec=spec, debug=debug,
                                            backend="reference", **META)
    np.testing.assert_array_equal(args[2], want)
    assert report.cycles >= report.bound.cycles > 0
    assert report.races == [] and report.flag_issues == []
    assert report.cube_flops == 2 * (GRID[0] * B) * (GRID[1] * B) * K
    # only the masked-in bytes cross GM -> L1: each A row block once per column block
    assert report.bytes_by_path["GM_to_L1"] == (GRID[1] * M * K + GRID[0] * K * N) * 2


def test_reference_and_numba_record_the_same_streams():
    reports = {}
    for backend in ("reference", "numba"):
        args, want = _launch()
        reports[backend] = pointer_matmul_kernel.simulate(
            *args, grid=GRID, spec=ASCEND_910B_LIKE, backend=backend, **META)
        np.testing.assert_array_equal(args[2], want)
    ref, nb = reports["reference"], reports["numba"]
    assert (ref.cycles, ref.instr_count, ref.bytes_by_path) == \
        (nb.cycles, nb.instr_count, nb.bytes_by_path)


@pytest.mark.parametrize("spec", [ASCEND_910B_LIKE, ASCEND_910_LIKE], ids=lambda s: s.name)
def test_copies_landing_at_their_wait_give_the_right_sums(spec):
    """A's pointer load (the general path) sets MTE2 -> V, B's block load MTE2 -> MTE1:
    the dot's wait on MTE2 -> MTE1 must land A's copy too (MTE2 runs in order), not leave
    it for the Vector's wait in the next iteration."""
    (a, b, c, *_), want = _launch()
    args = (a, b, c, M, N, K, 0, K, 1, N, 1)
    k = shifted_pointer_matmul_kernel.with_options(backend="reference", spec=spec)
    compiled = k.compile(*args, **META)
    fn = parse_function(compiled.ir_text)
    kinds = [op.kind for op in fn.walk()]
    assert Kind.LOAD in kinds and Kind.BLOCK_LOAD in kinds
    rt = compiled.signature.runtime_args(compiled.sigs, compiled.runtime_index,
                                         compiled.signature.bind(args, META))
    run_buffered(fn, GRID, rt, poison=True, on_wait=True)
    np.testing.assert_array_equal(c, want)


@pytest.mark.parametrize("spec", [ASCEND_910B_LIKE, ASCEND_910_LIKE], ids=lambda s: s.name)
@pytest.mark.parametrize("stages", [3, 4])
def test_deep_pipelines_keep_two_l0_slots(spec, stages):
    """Triton's autotune configs pair num_stages 3-4 with 128x256 tiles of K 64: the L1
    copies get a slot per stage, L0A / L0B two (ping-pong).  A slot per stage asked 96 or
    128 KB of the 64 KB L0B (OutOfResources)."""
    m, n, k = 40, 200, 4 * 64
    rng = np.random.default_rng(3)
    a = rng.integers(-4, 5, (m, k)).astype(np.float16)
    b = rng.integers(-4, 5, (k, n)).astype(np.float16)
    c = np.zeros((m, n), np.float32)
    meta = {"BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 64, "NUM_STAGES": stages}
    args = (a, b, c, m, n, k, k, 1, n, 1, n, 1)
    fn = parse_function(pointer_matmul_kernel.with_options(spec=spec)
                        .compile(*args, **meta).ir_text)
    (dot,) = [op for op in fn.walk() if op.kind is Kind.DOT]
    slots = {op.attrs["buffer"][0]: op.attrs["stages"] for op in fn.walk()
             if op.attrs.get("scope") == "L1" and op.kind in (Kind.LOAD, Kind.BLOCK_LOAD)}
    assert sorted(slots.values()) == [stages, stages]
    l0b = dot.attrs["operand_bytes"][1]
    assert l0b == 64 * 256 * 2 and 2 * l0b <= spec.capacity["L0B"]
    # the flags between MTE1 and the Cube rotate over the two L0 slots
    l0_flags = [f for key in ("wait_flags", "set_flags") for f in dot.attrs.get(key, ())
                if {f.src, f.dst} == {"MTE1", "CUBE"}]
    assert l0_flags and all(f.count == 2 for f in l0_flags)
    report = pointer_matmul_kernel.simulate(*args, grid=(1, 1), spec=spec, debug=FULL,
                                            backend="reference", **meta)
    np.testing.assert_array_equal(c, a.astype(np.float32) @ b.astype(np.float32))
    assert report.races == [] and report.flag_issues == []
