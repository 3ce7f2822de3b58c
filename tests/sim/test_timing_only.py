"""kernel.simulate(..., numerics=False): only what decides the instruction streams runs
(ir/slice.py stream_slice), and every bundled kernel (kernels/ and kernels/moe/) gets the
same cycles, instruction counts and bytes as the full run, on the reference and the numba
recording paths; the report says the outputs were not computed."""
import copy

import numpy as np
import pytest

from npujit.ir import Kind
from npujit.ir.slice import stream_slice
from npujit.kernels import elementwise, layernorm, matmul, softmax
from npujit.kernels.moe.launch import KernelLaunch
from npujit.kernels.moe.layer import fused_plan, unfused_plan
from npujit.sim import ASCEND_910_LIKE, ASCEND_910B_LIKE

from moe.conftest import problem
from schedule.kernels_for_tests import counted_scale_kernel, pointer_matmul_kernel

EXAMPLES = [(elementwise, "add_kernel"), (elementwise, "add_stream_kernel"),
            (softmax, "softmax_kernel"), (layernorm, "layernorm_kernel"),
            (layernorm, "rmsnorm_kernel"), (matmul, "matmul_kernel")]


def _facts(report):
    return (report.cycles, report.instr_count, report.bytes_by_path, report.hbm_read_bytes,
            report.hbm_write_bytes, report.cube_flops, report.vector_elems)


def _same_timing(launch: KernelLaunch, spec, **kwargs):
    """The launch timing-only on copies of its arrays, then for real (so later launches of
    a plan read real inputs): the same facts, and only the full run's report has numbers."""
    args = copy.deepcopy(launch.args)
    fast = launch.kernel.simulate(*args, grid=launch.grid, spec=spec, numerics=False,
                                  **kwargs, **launch.meta)
    full = launch.simulate(spec, **kwargs)
    assert fast.numerics is False and full.numerics is True
    assert "timing only" in str(fast) and "timing only" not in str(full)
    assert _facts(fast) == _facts(full), launch.kernel.name
    return args


@pytest.mark.parametrize("module,name", EXAMPLES, ids=[n for _, n in EXAMPLES])
def test_bundled_kernels_time_the_same(module, name):
    grid, args, kwargs, reference = module.example_args(name)
    kernel = getattr(module, name)
    for spec in (ASCEND_910B_LIKE, ASCEND_910_LIKE):
        _same_timing(KernelLaunch(kernel, grid, copy.deepcopy(tuple(args)), kwargs), spec)


def test_moe_plans_time_the_same():
    T, H, I, E, k = 24, 64, 32, 8, 2
    x, router, gate_up, down, shared = problem(T=T, H=H, I=I, E=E, dtype=np.float16, seed=4,
                                               shared_i=16)
    plans = [(fused_plan(x, router, gate_up, down, k, "mixtral", form="workspace")[0],
              ASCEND_910B_LIKE),
             (fused_plan(x, router, gate_up, down, k, "qwen", shared_expert=shared,
                         num_stages=1, form="onchip")[0], ASCEND_910_LIKE),
             (unfused_plan(x, router, gate_up, down, k, "mixtral")[0], ASCEND_910B_LIKE)]
    names = set()
    for launches, spec in plans:
        for launch in launches:
            _same_timing(launch, spec)
            names.add(launch.kernel.name)
    assert {"router_kernel", "count_kernel", "offsets_kernel", "scatter_kernel",
            "gate_up_act_kernel", "down_combine_kernel", "cast_kernel", "fused_experts_kernel",
            "permute_kernel", "grouped_gemm_kernel", "act_kernel", "combine_kernel",
            "score_kernel", "select_kernel", "matmul_kernel"} <= names


def test_numba_recording_skips_the_arithmetic_and_times_the_same():
    x = np.random.default_rng(3).standard_normal((6, 100)).astype(np.float32)
    launch = KernelLaunch(softmax.softmax_kernel, (6,), (x, np.zeros_like(x), 100, 100, 100),
                          {"BLOCK": 128})
    args = _same_timing(launch, ASCEND_910B_LIKE, backend="numba")
    # the exp / max / sum / div never ran: the output holds what it held
    assert not args[1].any() and launch.args[1].any()
    c = launch.kernel.with_options(spec=ASCEND_910B_LIKE).compile(*launch.args, **launch.meta)
    from npujit.backends.numba.codegen import generate
    text = generate(c.ir, {"record": True, "numerics": False}).text
    assert "math.exp" not in text and "np.exp" not in text
    assert "exp" in generate(c.ir, {"record": True}).text


def test_data_dependent_trip_counts_and_pointer_dots_still_run():
    """A trip count read from GM stays in the slice (the load runs); the pointer matmul's
    dot and its Vector-free accumulation do not."""
    counts = np.array([3, 0, 1], np.int32)
    x = np.arange(3 * 64 * 32, dtype=np.float32)
    launch = KernelLaunch(counted_scale_kernel, (3,), (x, np.zeros_like(x), counts),
                          {"BLOCK": 32})
    _same_timing(launch, ASCEND_910B_LIKE)
    c = counted_scale_kernel.with_options(spec=ASCEND_910B_LIKE).compile(
        *launch.args, **launch.meta)
    needed = [op for op in c.ir.walk() if id(op) in stream_slice(c.ir).ops]
    assert [op.kind for op in needed if op.kind is Kind.LOAD] == [Kind.LOAD]   # the count
    assert not [op for op in needed if any(r.type.dtype.is_float for r in op.results)]
    rng = np.random.default_rng(5)
    a = rng.integers(-4, 5, (40, 48)).astype(np.float16)
    b = rng.integers(-4, 5, (48, 24)).astype(np.float16)
    mm = KernelLaunch(pointer_matmul_kernel, (3, 2),
                      (a, b, np.zeros((40, 24), np.float32), 40, 24, 48, 48, 1, 24, 1, 24, 1),
                      {"BLOCK_M": 16, "BLOCK_N": 16, "BLOCK_K": 16})
    _same_timing(mm, ASCEND_910B_LIKE)
    c = pointer_matmul_kernel.with_options(spec=ASCEND_910B_LIKE).compile(*mm.args, **mm.meta)
    needed = stream_slice(c.ir).ops
    assert not [op for op in c.ir.walk() if op.kind is Kind.DOT and id(op) in needed]


def test_the_number_checking_debug_modes_need_numerics():
    from npujit.sim import DebugOptions
    x = np.ones(8, np.float32)
    with pytest.raises(ValueError, match="numerics=True"):
        elementwise.add_kernel.simulate(x, x, np.zeros_like(x), 8, grid=(1,), numerics=False,
                                        debug=DebugOptions(uninitialized="nan"), BLOCK=8)
