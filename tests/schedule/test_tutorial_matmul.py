"""Triton's tutorial matmul (kernels/triton_gallery/matmul.py: wrapped ``% M`` / ``% N``
offsets, pointer tiles advanced in the loop, ``other=0.0`` K-tail masks) at the tile and
stage configs of the tutorial's autotune list, simulated on both presets under every
debug switch, with numpy's product as the oracle.  Every config raised OutOfResources
before: the advanced pointer tiles and the zero fills were Vector work with an event id
per slot, and K-128 tiles overflowed L0."""
import numpy as np
import pytest

from npujit.ir import Kind, parse_function
from npujit.kernels.triton_gallery.matmul import matmul_kernel
from npujit.sim import ASCEND_910_LIKE, ASCEND_910B_LIKE, DebugOptions
from npujit.target import Pipe

FULL = DebugOptions.full()
M, N, K = 130, 200, 288        # a row, a column and a K tail in every config


def _args():
    rng = np.random.default_rng(5)
    a = rng.integers(-3, 4, (M, K)).astype(np.float16)
    b = rng.integers(-3, 4, (K, N)).astype(np.float16)
    c = np.zeros((M, N), np.float16)
    want = (a.astype(np.float32) @ b.astype(np.float32)).astype(np.float16)
    return (a, b, c, M, N, K, K, 1, N, 1, N, 1), want


def _meta(bm, bn, bk):
    return {"BLOCK_SIZE_M": bm, "BLOCK_SIZE_N": bn, "BLOCK_SIZE_K": bk, "GROUP_SIZE_M": 8,
            "ACTIVATION": ""}


@pytest.mark.parametrize("spec", [ASCEND_910B_LIKE, ASCEND_910_LIKE], ids=lambda s: s.name)
@pytest.mark.parametrize("bm,bn,bk,stages", [(128, 256, 64, 3), (64, 256, 32, 4),
                                             (128, 64, 32, 4), (128, 256, 128, 3),
                                             (64, 128, 64, 4)])
def test_tutorial_configs_simulate_with_numpys_numbers(spec, bm, bn, bk, stages):
    args, want = _args()
    grid = (-(-M // bm) * -(-N // bn),)
    k = matmul_kernel.with_options(num_stages=stages)
    report = k.simulate(*args, grid=grid, spec=spec, debug=FULL, backend="reference",
                        **_meta(bm, bn, bk))
    np.testing.assert_array_equal(args[2], want)
    assert report.races == [] and report.flag_issues == []
    assert report.cube_flops == 2 * grid[0] * bm * bn * (-(-K // bk) * bk)   # K tail padded


def test_the_k_loop_has_no_vector_work_and_big_tiles_run_in_l0_chunks():
    """The pointer tiles the loop advances are address work (the scalar unit moves each
    row's descriptor), their rows and columns are per-row / per-column descriptors and
    the ``other=0.0`` fill is MTE2's: nothing in the loop runs on the Vector, so the
    910B-like launch is Cube-only; a K-128 step beside a 256-wide B runs as two L0
    chunks of K 64."""
    args, _ = _args()
    fn = parse_function(matmul_kernel.with_options(spec=ASCEND_910B_LIKE, num_stages=3)
                        .compile(*args, **_meta(128, 256, 128)).ir_text)
    (loop,) = [op for op in fn.walk() if op.kind is Kind.FOR]
    carried = [str(a.type) for a in loop.body.args[1:]]
    assert carried == ["tensor<128x256xf32>", "tensor<128x128xi32>", "tensor<128x256xi32>"]
    pipes = {op.attrs["pipe"] for op in loop.body.ops if "pipe" in op.attrs}
    assert pipes == {Pipe.SCALAR, Pipe.MTE2, Pipe.CUBE}
    assert fn.attrs["npu.core"] == "AIC" and "npu.sides" not in fn.attrs
    (dot,) = [op for op in fn.walk() if op.kind is Kind.DOT]
    assert dot.attrs["k_chunk"] == 64


def test_a_carried_pointer_read_after_the_loop_stays_right():
    """The carried tile is still advanced when the loop's result is used (here: a store
    through the pointer after the loop), and the loads inside read the recomputed one."""
    import npujit.language as nl
    from npujit import npu_kernel

    @npu_kernel
    def walk(x_ptr, out_ptr, n_steps, BLOCK: nl.constexpr):
        rows = (nl.arange(0, BLOCK) * 7) % BLOCK           # not affine: stays a pointer
        ptrs = x_ptr + rows
        acc = nl.zeros((BLOCK,), nl.float32)
        for _ in range(0, n_steps):
            acc += nl.load(ptrs)
            ptrs += BLOCK
        nl.store(out_ptr + nl.arange(0, BLOCK), acc)
        nl.store(out_ptr + BLOCK + nl.arange(0, BLOCK), nl.load(ptrs))
    x = np.arange(5 * 16, dtype=np.float32)
    out = np.zeros(32, np.float32)
    walk.with_options(backend="reference")[(1,)](x, out, 4, BLOCK=16)
    rows = (np.arange(16) * 7) % 16
    np.testing.assert_array_equal(out[:16], sum(x[rows + 16 * i] for i in range(4)))
    np.testing.assert_array_equal(out[16:], x[rows + 64])
