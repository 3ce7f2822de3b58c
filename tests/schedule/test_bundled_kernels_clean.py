"""Every bundled kernel (kernels/ and kernels/moe/) is clean under the full debug options on
both presets: NaN-poisoned buffers, copies landing at their wait, the race detector and the
1-bit flag check, on the reference backend with small shapes; the outputs against the
kernels' own numpy references."""
from __future__ import annotations

import importlib

import numpy as np
import pytest

from npujit.jit.kernel import NPUKernel
from npujit.kernels.moe import reference as ref
from npujit.kernels.moe.layer import fused_plan, unfused_plan
from npujit.sim import ASCEND_910_LIKE, ASCEND_910B_LIKE, DebugOptions
from npujit.testing.tiers import expected_outputs, stored_arguments


FULL = DebugOptions.full()
PRESETS = [ASCEND_910B_LIKE, ASCEND_910_LIKE]
EXAMPLES = [("elementwise", "add_kernel"), ("elementwise", "add_stream_kernel"),
            ("softmax", "softmax_kernel"), ("layernorm", "layernorm_kernel"),
            ("layernorm", "rmsnorm_kernel"), ("matmul", "matmul_kernel")]

def _l0c_zero_init(race) -> bool:
    """An UNINIT read of an L0C accumulator: its zero init is the hardware's
    ``cmatrixInitVal`` on the first ``mmad`` (no instruction of its own), which the stream
    recorder (sim/lower.py) does not mark as a write, so the first mmad -- or, when the K
    loop runs zero times (an unused expert block), the epilogue -- shows as reading it.
    The NaN-poisoned numbers below show the accumulator does start from zero."""
    return race.kind == "UNINIT" and race.buffer.startswith("L0C")


def _clean(name, report):
    races = [r for r in report.races if not _l0c_zero_init(r)]
    assert races == [], (name, races[:3])
    assert report.flag_issues == [], (name, report.flag_issues[:3])


@pytest.mark.parametrize("spec", PRESETS, ids=lambda s: s.name)
@pytest.mark.parametrize("module,name", EXAMPLES, ids=[n for _, n in EXAMPLES])
def test_example_is_clean(module, name, spec):
    mod = importlib.import_module(f"npujit.kernels.{module}")
    kernel = getattr(mod, name)
    grid, args, kwargs, reference = mod.example_args(name)
    outputs = stored_arguments(kernel, args, kwargs)
    want = expected_outputs(reference, [np.copy(a) if isinstance(a, np.ndarray) else a
                                        for a in args], kwargs, kernel, outputs)
    report = kernel.simulate(*args, grid=grid, spec=spec, debug=FULL, backend="reference",
                             **kwargs)
    got = dict(zip(kernel.params, args))
    for out in outputs:
        np.testing.assert_allclose(got[out], want[out], rtol=1e-3, atol=1e-3)
    _clean(name, report)


def _simulate_plan(launches, spec):
    for launch in launches:
        report = launch.kernel.simulate(*launch.args, grid=launch.grid, spec=spec, debug=FULL,
                                        backend="reference", **launch.meta)
        _clean(launch.kernel.name, report)


def _moe_problem():
    """A tiny fp16 layer: 20 tokens, H 32, I 16, 8 experts, top 2, a shared expert."""
    T, H, I, E, k = 20, 32, 16, 8, 2
    rng = np.random.default_rng(3)
    x, router = rng.standard_normal((T, H)), rng.standard_normal((E, H))
    gate_up, down = rng.standard_normal((E, 2 * I, H)) / 6, rng.standard_normal((E, H, I)) / 4
    shared = rng.standard_normal((2 * I, H)) / 6, rng.standard_normal((H, I)) / 4
    f16 = [a.astype(np.float16) for a in (x, router, gate_up, down, *shared)]
    return (*f16[:4], k, "qwen"), tuple(f16[4:])


def _plans(spec):
    """The fused and the unfused MoE layer's launches and outputs.  910B-like: the expert
    FFN in its workspace form (the default; the one-kernel form's split is
    tests/sim/test_core_split.py's); 910-like: the one-kernel form."""
    layer, shared = _moe_problem()
    form = ({"form": "workspace"} if spec is ASCEND_910B_LIKE
            else {"form": "onchip", "num_stages": 1})
    return [fused_plan(*layer, shared_expert=shared, **form),
            unfused_plan(*layer, shared_expert=shared)]


@pytest.mark.parametrize("spec", PRESETS, ids=lambda s: s.name)
def test_moe_layers_are_clean(spec):
    layer, shared = _moe_problem()
    want = ref.moe(*layer, shared_expert=shared)
    for launches, out in _plans(spec):
        _simulate_plan(launches, spec)
        scale = max(1.0, float(np.abs(want).max()))     # fp16 output, fp32 oracle
        np.testing.assert_allclose(out.astype(np.float32), want, rtol=0, atol=2e-2 * scale)


def test_every_bundled_kernel_is_checked():
    """The examples and the MoE plans above launch every kernel of kernels/ and
    kernels/moe/."""
    checked = {n for _, n in EXAMPLES}
    for spec in PRESETS:
        for launches, _ in _plans(spec):
            checked |= {launch.kernel.name for launch in launches}
    bundled = set()
    for module in ("elementwise", "softmax", "layernorm", "matmul", "moe.router",
                   "moe.dispatch", "moe.experts", "moe.combine"):
        mod = importlib.import_module(f"npujit.kernels.{module}")
        bundled |= {v.name for v in vars(mod).values() if isinstance(v, NPUKernel)}
    assert bundled and bundled - checked == set()
