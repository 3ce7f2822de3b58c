"""kernel.simulate: outputs as a normal launch writes them, a report at or above the
roofline, streams free of races and unbalanced flags, data-dependent work in the timing."""
import numpy as np
import pytest

from npujit.ir import parse_function
from npujit.kernels.elementwise import add_kernel
from npujit.kernels.matmul import matmul_kernel
from npujit.kernels.softmax import softmax_kernel
from npujit.sim import ASCEND_910_LIKE, ASCEND_910B_LIKE, TINY, DebugOptions, Launch
from npujit.jit.simulate import lower

from npujit.kernels.elementwise import add_stream_kernel as stream_add_kernel

from .kernels_for_tests import counted_scale_kernel

# Every debug switch on (races, NaN-poisoned buffers, copies landing at their wait, flag
# checks), as every schedule test runs.
CHECKS = DebugOptions.full()


def _clean(report):
    assert report.cycles >= report.bound.cycles > 0
    assert report.races == [] and report.flag_issues == []


@pytest.mark.parametrize("spec", [ASCEND_910B_LIKE, TINY], ids=lambda s: s.name)
def test_add(spec):
    rng = np.random.default_rng(0)
    x, y = rng.random(5000).astype(np.float16), rng.random(5000).astype(np.float16)
    out = np.zeros_like(x)
    report = add_kernel.simulate(x, y, out, 5000, grid=(5,), spec=spec, debug=CHECKS,
                                 BLOCK=1024)
    np.testing.assert_array_equal(out, x + y)
    _clean(report)
    assert report.bytes_by_path["GM_to_UB"] == 2 * 5000 * 2     # masks: only real bytes
    assert report.bytes_by_path["UB_to_GM"] == 5000 * 2


def test_softmax():
    x = np.random.default_rng(1).standard_normal((6, 100)).astype(np.float32)
    out = np.zeros_like(x)
    report = softmax_kernel.simulate(x, out, 100, 100, 100, grid=(6,), debug=CHECKS,
                                     BLOCK=128)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    np.testing.assert_allclose(out, e / e.sum(axis=1, keepdims=True), rtol=1e-5)
    _clean(report)
    assert report.ratios["aiv_vec_ratio"] > 0


@pytest.mark.parametrize("spec", [ASCEND_910B_LIKE, ASCEND_910_LIKE], ids=lambda s: s.name)
def test_matmul(spec):
    rng = np.random.default_rng(2)
    a = rng.random((96, 80)).astype(np.float16)
    b = rng.random((80, 64)).astype(np.float16)
    c = np.zeros((96, 64), np.float32)
    report = matmul_kernel.simulate(a, b, c, 96, 64, 80, 80, 1, 64, 1, 64, 1, grid=(3, 2),
                                    spec=spec, debug=CHECKS, BLOCK_M=32, BLOCK_N=32,
                                    BLOCK_K=32, NUM_STAGES=2)
    np.testing.assert_allclose(c, a.astype(np.float32) @ b.astype(np.float32), rtol=1e-3)
    _clean(report)
    assert report.cube_flops > 0
    # K = 80 in steps of 32: the last K block is partly out of bounds, and only its
    # in-bounds part crosses GM -> L1
    assert report.bytes_by_path["GM_to_L1"] == 6 * (32 * 80 + 80 * 32) * 2
    if "FIXP" in spec.pipes["AIC"]:
        assert report.bytes_by_path["L0C_to_GM"] == 96 * 64 * 4
    else:       # coupled 910: no FixPipe, L0C leaves through the Vector unit into UB
        assert report.bytes_by_path["L0C_to_UB"] == report.bytes_by_path["UB_to_GM"] == 96 * 64 * 4


def test_double_buffering_beats_single_buffering():
    x = np.random.default_rng(3).random(1 << 14).astype(np.float16)
    cycles = {}
    for stages in (1, 2):
        out = np.zeros_like(x)
        report = stream_add_kernel.simulate(x, x, out, x.size, x.size // 2, grid=(2,),
                                            debug=CHECKS, BLOCK=512, NUM_STAGES=stages)
        np.testing.assert_array_equal(out, x + x)
        _clean(report)
        cycles[stages] = report.cycles
    assert cycles[2] < cycles[1]


def test_data_dependent_trip_count_changes_the_cycles():
    x = np.random.default_rng(4).random(4 * 64 * 128).astype(np.float32)
    cycles = []
    for counts in ([1, 1, 1, 1], [1, 1, 1, 9], [9, 9, 9, 9]):
        out = np.zeros_like(x)
        report = counted_scale_kernel.simulate(x, out, np.array(counts, np.int32), grid=(4,),
                                               debug=CHECKS, BLOCK=128)
        _clean(report)
        for pid, n in enumerate(counts):
            part = slice(pid * 64 * 128, (pid * 64 + n) * 128)
            np.testing.assert_array_equal(out[part], x[part] * 2)
        cycles.append(report.cycles)
    assert cycles[0] < cycles[1] <= cycles[2]


def test_lower_shares_identical_programs_and_needs_a_schedule():
    x = np.ones(4096, np.float32)
    c = add_kernel.with_options(backend="reference").compile(x, x, x.copy(), 4096, BLOCK=1024)
    fn = parse_function(c.ir_text)      # a private copy: the cached one stays scheduled
    launch = lower(fn, (4,), [x, x, np.zeros_like(x), 4096])
    assert isinstance(launch, Launch) and len(launch.programs) == 4
    assert len({id(p) for p in launch.programs}) == 1       # same stream, one object
    from npujit.ir.schedule import clear_schedule
    clear_schedule(fn)
    with pytest.raises(ValueError, match="not scheduled"):
        lower(fn, (4,), [x, x, np.zeros_like(x), 4096])


def _matmul_case():
    rng = np.random.default_rng(5)
    a = rng.random((64, 64)).astype(np.float16)
    b = rng.random((64, 64)).astype(np.float16)
    args = (a, b, np.zeros((64, 64), np.float32), 64, 64, 64, 64, 1, 64, 1, 64, 1)
    meta = {"BLOCK_M": 32, "BLOCK_N": 32, "BLOCK_K": 16, "NUM_STAGES": 2}
    rt = [a.ravel(), b.ravel(), args[2].ravel()] + list(args[3:])
    return args, meta, rt


def test_the_printed_schedule_is_the_source_of_truth():
    from npujit.ir import parse_function
    from npujit.sim import simulate

    args, meta, rt = _matmul_case()
    report = matmul_kernel.simulate(*args, grid=(2, 2), **meta)
    fn = parse_function(matmul_kernel.inspect(*args, **meta)["schedule"])
    # the recorder needs the spec: its GM burst decides the bytes a strided copy moves
    again = simulate(lower(fn, (2, 2), rt, spec=ASCEND_910B_LIKE), ASCEND_910B_LIKE)
    assert again.cycles == report.cycles


def test_dropping_a_wait_is_caught_by_the_race_detector():
    from npujit.ir import parse_function
    from npujit.ir.schedule.model import scheduled_ops
    from npujit.sim import simulate

    args, meta, rt = _matmul_case()
    fn = parse_function(matmul_kernel.inspect(*args, **meta)["schedule"])
    (dot,) = [op for op in scheduled_ops(fn.body) if op.kind.value == "npu.dot"]
    # without MTE2_MTE1 the MTE1 stage may read L1 before the GM copy landed (a RAW race)
    dot.attrs["wait_flags"] = [f for f in dot.attrs["wait_flags"] if not str(f).startswith("MTE2_")]
    setter = [op for op in scheduled_ops(fn.body) if any(
        str(f).startswith("MTE2_MTE1") for f in op.attrs.get("set_flags", ()))]
    for op in setter:
        op.attrs["set_flags"] = [f for f in op.attrs["set_flags"] if not str(f).startswith("MTE2_")]
    launch = lower(fn, (2, 2), rt)
    # MTE1 now runs ahead and frees its L1 slot twice before MTE2 waits: 1-bit flags (the
    # default) stop the launch there; counting flags let the race detector report it.
    from npujit.sim import FlagStillSetError
    with pytest.raises(FlagStillSetError, match="MTE1->MTE2"):
        simulate(launch, ASCEND_910B_LIKE)
    report = simulate(launch, ASCEND_910B_LIKE, debug=CHECKS, one_bit_flags=False)
    assert any(r.kind == "RAW" for r in report.races)


def test_flags_share_ids_when_a_pair_runs_out():
    from .kernels_for_tests import many_sums_kernel

    x = np.random.default_rng(6).random(9 * 64).astype(np.float32)
    out = np.zeros(1, np.float32)
    report = many_sums_kernel.simulate(x, out, grid=(1,), spec=ASCEND_910_LIKE, debug=CHECKS,
                                       BLOCK=64)
    np.testing.assert_allclose(out[0], x.sum(), rtol=1e-5)
    _clean(report)


@pytest.mark.parametrize("case", ["stream", "matmul", "counted"])
def test_numba_and_reference_runs_give_the_same_report(case):
    """kernel.simulate on the numba backend (recorded, replayed) and on the reference
    interpreter: the same outputs (dot: up to summation order), the same streams, so the
    same cycles and bytes."""
    x = np.random.default_rng(11).random(3000).astype(np.float16)
    counts = np.array([5, 0, 2, 9], np.int32)
    reports, outs = [], []
    for backend in ("reference", "numba"):
        if case == "stream":
            out = np.zeros_like(x)
            r = stream_add_kernel.simulate(x, x, out, 3000, 1024, grid=(3,), backend=backend,
                                           BLOCK=256, NUM_STAGES=2)
        elif case == "matmul":
            args, meta, _ = _matmul_case()
            out = args[2]
            r = matmul_kernel.simulate(*args, grid=(2, 2), backend=backend, **meta)
        else:
            src = np.arange(4 * 64 * 16, dtype=np.float32)
            out = np.zeros_like(src)
            r = counted_scale_kernel.simulate(src, out, counts, grid=(4,), backend=backend,
                                              BLOCK=16)
        reports.append(r)
        outs.append(out.copy())
    np.testing.assert_allclose(outs[0], outs[1], rtol=1e-6, atol=0)
    assert reports[0].cycles == reports[1].cycles > 0
    assert reports[0].bytes_by_path == reports[1].bytes_by_path
    assert reports[0].instr_count == reports[1].instr_count


def test_kernel_simulate_passes_one_bit_flags_to_the_engine(monkeypatch):
    import npujit.jit.simulate as jsim
    seen = []
    real = jsim.simulate

    def spy(launch, spec, **kw):
        seen.append(kw.get("one_bit_flags"))
        return real(launch, spec, **kw)
    monkeypatch.setattr(jsim, "simulate", spy)
    x = np.ones(512, np.float16)
    out = np.zeros_like(x)
    counted = add_kernel.simulate(x, x, out, 512, grid=(1,), one_bit_flags=False, BLOCK=512)
    one_bit = add_kernel.simulate(x, x, out, 512, grid=(1,), BLOCK=512)
    assert seen == [False, None] and counted.cycles == one_bit.cycles
    np.testing.assert_array_equal(out, x + x)
