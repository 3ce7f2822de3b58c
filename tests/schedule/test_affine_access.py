"""affine-access (ir/passes/affine_access.py): 2-D pointer tiles with affine offsets and box
masks become strided block copies -- no Vector address arithmetic, no UB address tile --
with the same numbers on every tier; what cannot be proved keeps the general path."""
import numpy as np
import pytest

import npujit.language as nl
from npujit import cdiv, npu_kernel
from npujit.ir import Kind, parse_function
from npujit.jit.simulate import lower
from npujit.kernels.matmul import matmul_kernel
from npujit.sim import ASCEND_910B_LIKE, DebugOptions, simulate
from npujit.testing import check_kernel

from .kernels_for_tests import pointer_matmul_kernel

M, N, K, B = 40, 24, 48, 16
GRID = (cdiv(M, B), cdiv(N, B))
META = {"BLOCK_M": B, "BLOCK_N": B, "BLOCK_K": B}


@npu_kernel
def tile_copy_kernel(x_ptr, out_ptr, R, C, stride_x, stride_out, BR: nl.constexpr,
                     BC: nl.constexpr):
    rows = nl.program_id(0) * BR + nl.arange(0, BR)
    cols = nl.program_id(1) * BC + nl.arange(0, BC)
    inside = (rows[:, None] < R) & (cols[None, :] < C)
    x = nl.load(x_ptr + rows[:, None] * stride_x + cols[None, :], mask=inside, other=0.0)
    nl.store(out_ptr + rows[:, None] * stride_out + cols[None, :], x * 2.0, mask=inside)


@npu_kernel
def shifted_copy_kernel(x_ptr, out_ptr, R, C, start, BR: nl.constexpr, BC: nl.constexpr):
    # start may be negative (nothing proves it is not): the load keeps the general path;
    # the store's +1 column shift moves its mask's bound (1 + j < C <=> j < C - 1), so it
    # becomes a block store of columns [1, C)
    rows = nl.arange(0, BR)
    cols = nl.arange(0, BC)
    x = nl.load(x_ptr + start + rows[:, None] * C + cols[None, :], mask=rows[:, None] < R)
    nl.store(out_ptr + rows[:, None] * C + cols[None, :] + 1, x,
             mask=(rows[:, None] < R) & (cols[None, :] < C - 1))


def _kinds(kernel, args, meta, spec=None):
    k = kernel.with_options(backend="reference", **({"spec": spec} if spec else {}))
    fn = parse_function(k.compile(*args, **meta).ir_text)
    return [op.kind for op in fn.walk()]


def _matmul_args():
    rng = np.random.default_rng(11)
    a = rng.integers(-4, 5, (M, K)).astype(np.float16)
    b = rng.integers(-4, 5, (K, N)).astype(np.float16)
    return [a, b, np.zeros((M, N), np.float32), M, N, K, K, 1, N, 1, N, 1]


def test_pointer_matmul_becomes_block_copies_with_the_same_numbers_on_every_tier():
    args = _matmul_args()
    kinds = _kinds(pointer_matmul_kernel, args, META)
    assert kinds.count(Kind.BLOCK_LOAD) == 2 and kinds.count(Kind.BLOCK_STORE) == 1
    assert Kind.LOAD not in kinds and Kind.STORE not in kinds
    res = check_kernel(pointer_matmul_kernel, GRID, args,
                       lambda a, b, *_: a.astype(np.float32) @ b.astype(np.float32),
                       kwargs=META)
    assert res.ok and res["reference"].status == "ok" and res["numba"].status == "ok"


def test_pointer_matmul_streams_have_no_vector_work_and_match_the_block_pointer_kernel():
    """Per program and K step: two GM -> L1 copies, two L1 -> L0 copies, one mmad; one
    L0C -> GM store per program; nothing on the Vector, no UB buffer -- exactly the block
    pointer matmul's streams."""
    launches = {}
    for name, kernel in (("pointer", pointer_matmul_kernel), ("block", matmul_kernel)):
        args = _matmul_args()
        meta = dict(META, NUM_STAGES=1)
        c = kernel.with_options(spec=ASCEND_910B_LIKE).compile(*args, **meta)
        rt = c.signature.runtime_args(c.sigs, c.runtime_index, c.signature.bind(args, meta))
        launches[name] = lower(c.ir, GRID, rt, spec=ASCEND_910B_LIKE)
        np.testing.assert_array_equal(args[2], args[0].astype(np.float32) @
                                      args[1].astype(np.float32))
    programs = GRID[0] * GRID[1]
    steps = cdiv(K, B)
    instrs = [i for p in launches["pointer"].programs for i in p.instrs]
    work = [i for i in instrs if i.kind not in ("set_flag", "wait_flag")]
    assert not [i for i in work if i.pipe == "VECTOR" or "UB" in (i.path or "")]
    paths = [i.path for i in work if i.kind == "copy"]
    assert paths.count("GM_to_L1") == 2 * programs * steps
    assert paths.count("L1_to_L0A") == paths.count("L1_to_L0B") == programs * steps
    assert paths.count("L0C_to_GM") == programs
    assert sum(i.kind == "mmad" for i in work) == programs * steps
    assert len(work) == programs * (5 * steps + 1)
    # the block pointer kernel's streams, instruction for instruction (tags aside)
    def strip(launch):
        return [[i._replace(tag=None, gm_region=None) for i in p.instrs]
                for p in launch.programs]
    assert strip(launches["pointer"]) == strip(launches["block"])
    rp = simulate(launches["pointer"], ASCEND_910B_LIKE, debug=DebugOptions.full())
    rb = simulate(launches["block"], ASCEND_910B_LIKE, debug=DebugOptions.full())
    assert (rp.cycles, rp.bytes_by_path) == (rb.cycles, rb.bytes_by_path)
    assert rp.bytes_by_path["GM_to_L1"] == (GRID[1] * M * K + GRID[0] * K * N) * 2


def test_a_masked_2d_copy_becomes_block_copies_and_keeps_its_numbers():
    R, C = 13, 37
    x = np.random.default_rng(12).standard_normal((R, C + 3)).astype(np.float32)
    out = np.full((R, C + 5), -1.0, np.float32)
    args = [x, out, R, C, C + 3, C + 5]
    meta = {"BR": 8, "BC": 16}
    kinds = _kinds(tile_copy_kernel, args, meta, spec=ASCEND_910B_LIKE)
    assert (kinds.count(Kind.BLOCK_LOAD), kinds.count(Kind.BLOCK_STORE)) == (1, 1)
    assert Kind.ARANGE not in kinds          # no address tile left at all

    def want(x, out, R, C, *_):
        out = out.copy()
        out[:, :C] = 2 * x[:, :C]
        return out

    res = check_kernel(tile_copy_kernel, (cdiv(R, 8), cdiv(C, 16)), args, want, kwargs=meta,
                       backends="reference,scheduled")
    assert res.ok
    report = tile_copy_kernel.simulate(*args, grid=(cdiv(R, 8), cdiv(C, 16)),
                                       backend="reference", debug=DebugOptions.full(),
                                       **meta)
    assert report.bytes_by_path["GM_to_UB"] == report.bytes_by_path["UB_to_GM"] == R * C * 4


@pytest.mark.parametrize("start", [0, 3])
def test_what_cannot_be_proved_keeps_the_general_path_and_a_shifted_mask_moves_its_bound(start):
    R, C = 5, 8
    x = np.arange(64, dtype=np.float32)
    out = np.zeros(R * C + 1, np.float32)
    args = [x, out, R, C, start]
    meta = {"BR": 8, "BC": 8}
    kinds = _kinds(shifted_copy_kernel, args, meta)
    assert Kind.BLOCK_LOAD not in kinds and kinds.count(Kind.BLOCK_STORE) == 1

    def want(x, out, R, C, start):
        out = out.copy()
        rows = x[start:start + R * C].reshape(R, C)
        flat = out[1:1 + R * C].reshape(R, C)
        flat[:, :C - 1] = rows[:, :C - 1]
        return out

    assert check_kernel(shifted_copy_kernel, (1,), args, want, kwargs=meta,
                        backends="reference,scheduled").ok
