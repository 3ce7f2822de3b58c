"""The emitted files themselves: a golden file of one small kernel, every Ascend C name in
the documented subset (docs/ascendc.md), the lowering table complete, clear errors for
what cannot be lowered, and a CANN build when CANN is installed."""
from __future__ import annotations

import os
import re
import shutil
import subprocess

import ml_dtypes
import numpy as np
import pytest

import npujit.language as nl
from npujit import npu_kernel
from npujit.backends.ascendc import lowering
from npujit.ir.ops import Kind
from npujit.kernels import layernorm, matmul, softmax
from npujit.kernels.elementwise import add_kernel, add_stream_kernel
from npujit.kernels.triton_gallery import matmul as tg_matmul, moe_router as tg_router
from npujit.kernels.moe.launch import KernelLaunch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
GOLDEN = os.path.join(HERE, "golden", "add_kernel.cpp")


def _emit_add(out_dir):
    x = np.zeros(1000, np.float32)
    return add_kernel.emit("ascendc", str(out_dir), x, x, x.copy(), 1000, BLOCK=256)


def test_emit_writes_the_kernel_directory(tmp_path):
    paths = _emit_add(tmp_path)
    assert sorted(os.path.basename(p) for p in paths) == [
        "CMakeLists.txt", "add_kernel.cpp", "add_kernel_tiling.h", "launch_add_kernel.cpp"]
    host = (tmp_path / "launch_add_kernel.cpp").read_text()
    assert "add_kernel<<<blockDim, nullptr, stream>>>(x_ptrDevice, y_ptrDevice, out_ptrDevice, nullptr, tilingDevice);" in host
    assert "ascendc_library(add_kernel SHARED add_kernel.cpp launch_add_kernel.cpp)" in \
        (tmp_path / "CMakeLists.txt").read_text()
    tiling = (tmp_path / "add_kernel_tiling.h").read_text()
    assert re.search(r"struct AddKernelTiling \{\s*int32_t n;\s*uint32_t grid0;", tiling)


def test_golden_add_kernel(tmp_path):
    """The structure of the emitted vector add, line for line.  After an intended change
    to the emitter, regenerate with NPUJIT_UPDATE_GOLDEN=1 and review the diff."""
    _emit_add(tmp_path)
    got = (tmp_path / "add_kernel.cpp").read_text()
    if os.environ.get("NPUJIT_UPDATE_GOLDEN"):
        os.makedirs(os.path.dirname(GOLDEN), exist_ok=True)
        with open(GOLDEN, "w") as f:
            f.write(got)
    with open(GOLDEN) as f:
        want = f.read()
    assert got == want, "the emitted add_kernel.cpp differs from tests/backends/ascendc/golden/"


def _shipped_sources(tmp_path) -> str:
    """The emitted .cpp of every shipped kernel (vector and Cube), concatenated."""
    rng = np.random.default_rng(0)
    x1 = np.zeros(1000, np.float32)
    dirs = []

    def emit(kernel, *args, **kw):
        d = tmp_path / f"k{len(dirs)}"
        dirs.append(d)
        kernel.emit("ascendc", str(d), *args, **kw)

    emit(add_kernel, x1, x1, x1.copy(), 1000, BLOCK=256)
    emit(add_stream_kernel, x1, x1, x1.copy(), 1000, 500, BLOCK=128, NUM_STAGES=2)
    x2 = rng.standard_normal((4, 100)).astype(np.float16)
    emit(softmax.softmax_kernel, x2, x2.copy(), 100, 100, 100, BLOCK=128)
    w = np.ones(100, np.float16)
    emit(layernorm.layernorm_kernel, x2, w, w, x2.copy(), 100, 1e-5, BLOCK=128)
    emit(layernorm.rmsnorm_kernel, x2, w, x2.copy(), 100, 1e-5, BLOCK=128)
    a = np.ones((64, 32), ml_dtypes.bfloat16)
    for out_dtype in (np.float32, np.float16):
        c = np.zeros((64, 64), out_dtype)
        emit(matmul.matmul_kernel, a, a.T.copy(), c, 64, 64, 32, 32, 1, 64, 1, 64, 1,
             BLOCK_M=32, BLOCK_N=32, BLOCK_K=16, NUM_STAGES=2)
    f = np.ones((64, 32), np.float32)     # f32 operands: B row-major (LoadDataWithTranspose)
    emit(matmul.matmul_kernel, f, f.T.copy(), np.zeros((64, 64), np.float32), 64, 64, 32, 32, 1,
         64, 1, 64, 1, BLOCK_M=32, BLOCK_N=32, BLOCK_K=16, NUM_STAGES=2)
    for launch in _moe_launches():
        emit(launch.kernel, *launch.args, **launch.meta)
    # the Triton tutorial's matmul (pointer tiles, `% M`) and router ([16, 8] logits, argmax)
    h = np.zeros((40, 48), np.float16)
    emit(tg_matmul.matmul_kernel, h, h.T.copy(), np.zeros((40, 40), np.float16), 40, 40, 48,
         48, 1, 40, 1, 40, 1, BLOCK_SIZE_M=32, BLOCK_SIZE_N=32, BLOCK_SIZE_K=16,
         GROUP_SIZE_M=2, ACTIVATION="leaky_relu")
    emit(tg_router.router_kernel, h, np.zeros((48, 6), np.float16), np.zeros((40, 2), np.float32),
         np.zeros((40, 2), np.int32), 40, 48, 6, 48, 6, BLOCK_T=16, BLOCK_H=16, BLOCK_E=8, TOP_K=2)
    # and on f32 with 3 experts ([16, 4] logits, rows shorter than a 32-byte block)
    emit(tg_router.router_kernel, np.zeros((40, 48), np.float32), np.zeros((48, 3), np.float32),
         np.zeros((40, 2), np.float32), np.zeros((40, 2), np.int32), 40, 48, 3, 48, 3,
         BLOCK_T=16, BLOCK_H=16, BLOCK_E=4, TOP_K=2)
    return "\n".join(p.read_text() for d in dirs for p in d.glob("*.cpp") if not p.name.startswith("launch_"))


def _moe_launches() -> list:
    """One launch of each MoE kernel that emits (kernels/moe/)."""
    from npujit.kernels.moe import combine, dispatch, experts
    from npujit.kernels.moe.router import route_unfused_launches, router_launch, score_kernel
    ids = np.array([[0, 1], [2, 0], [1, 3]], np.int32)
    align = dispatch.align_launches(ids, 4, 16)[0]
    count, aligned = align[0], dispatch.align(ids, 4, backend="reference")
    y = np.zeros((aligned.sorted_ids.size, 32), np.float32)
    logits = np.zeros((3, 4), np.float32)
    xr, wr = np.zeros((3, 32), np.float16), np.zeros((4, 32), np.float16)
    return [count, align[2], router_launch(xr, wr, 2)[0], route_unfused_launches(xr, wr, 2)[0][2], combine.combine_launch(y, aligned.row_idx, np.ones((3, 2), np.float32),
                                          np.zeros((3, 32), np.float32)),
            dispatch.permute_launch(y, aligned, y.copy()),
            experts.act_launch(np.zeros((3, 64), np.float32), np.zeros((3, 32), np.float32)),
            experts.act_launch(np.zeros((3, 64), np.float32), np.zeros((3, 32), np.float32), "gelu"),
            KernelLaunch(score_kernel, (1,), (logits, logits.copy(), 3, 4),
                         dict(SIGMOID=False, BLOCK_T=16, BLOCK_E=16)),
            *_expert_launches(experts, aligned),
            experts.grouped_gemm_launch(np.zeros((aligned.sorted_ids.size, 200), np.float16),
                                        aligned.expert_ids, np.zeros((4, 80, 200), np.float16),
                                        np.zeros((aligned.sorted_ids.size, 80), np.float16), 16)]


def _expert_launches(experts, aligned):
    x = np.zeros((3, 48), np.float16)
    return [launch for form in ("workspace", "onchip") for launch in experts.experts_launches(
        x, aligned, np.ones((3, 2), np.float32), np.zeros((4, 80, 48), np.float16),
        np.zeros((4, 48, 40), np.float16), np.zeros((3, 48), np.float32), form=form)]


def _documented_names() -> set:
    with open(os.path.join(ROOT, "docs", "ascendc.md")) as f:
        doc = f.read()
    section = doc.split("## Ascend C API subset", 1)[1]
    names = set(re.findall(r"^\| `(\w+)` \|", section, re.M))
    members = section.split("Member functions written by the emitter:", 1)[1]
    return names, set(re.findall(r"`(\w+)`", members))


def test_every_emitted_api_name_is_documented(tmp_path):
    src = _shipped_sources(tmp_path)
    names, members = _documented_names()
    used = set(re.findall(r"AscendC::(\w+)", src))
    assert used, "no Ascend C names found"
    assert used <= names, f"undocumented Ascend C names: {sorted(used - names)}"
    called = set(re.findall(r"\w+_\.(\w+)\s*[<(]", src)) | set(re.findall(r"\.(\w+)<\w+>\(", src))
    assert called <= members, f"undocumented member functions: {sorted(called - members)}"
    # and the documented subset is what the twin implements
    twin = "".join(open(os.path.join(r, f)).read()
                   for r, _, fs in os.walk(os.path.join(ROOT, "backends", "ascendc", "twin")) for f in fs)
    missing = [n for n in names | members if not re.search(rf"\b{n}\b", twin)]
    assert not missing, f"documented but not in the twin: {missing}"


def test_lowering_table_covers_every_op_kind():
    lowered, not_lowered = lowering.LOWERED, set(lowering.NOT_LOWERED)
    assert not lowered & not_lowered
    assert lowered | not_lowered == set(Kind)


@npu_kernel
def sin_kernel(x_ptr, out_ptr, BLOCK: nl.constexpr):
    offs = nl.arange(0, BLOCK)
    nl.store(out_ptr + offs, nl.sin(nl.load(x_ptr + offs)))


def test_an_op_that_cannot_be_lowered_names_itself_and_its_line(tmp_path):
    x = np.zeros(64, np.float32)
    with pytest.raises(NotImplementedError, match=r"npu\.sin at test_ascendc_emit\.py:\d+ "
                                                   r"\(`nl\.store\(out_ptr \+ offs, nl\.sin"):
        sin_kernel.emit("ascendc", str(tmp_path), x, x.copy(), BLOCK=64)


@npu_kernel
def wrapped_rows_kernel(x_ptr, out_ptr, N, BLOCK: nl.constexpr):
    rows = nl.arange(0, BLOCK)
    cols = nl.arange(0, BLOCK) % N
    x = nl.load(x_ptr + rows[:, None] * BLOCK + cols[None, :])
    nl.store(out_ptr + rows[:, None] * BLOCK + nl.arange(0, BLOCK)[None, :], x)


def test_wrapped_columns_of_a_vector_tile_are_refused_by_name(tmp_path):
    # `% N` column offsets are emitted for Cube operands only (emit_cube_pointers.py)
    x = np.zeros((16, 16), np.float32)
    with pytest.raises(NotImplementedError, match=r"npu\.load at test_ascendc_emit\.py:\d+ .*wrap"):
        wrapped_rows_kernel.emit("ascendc", str(tmp_path), x, x.copy(), 10, BLOCK=16)


def _cann_root():
    root = os.environ.get("ASCEND_HOME_PATH") or os.environ.get("ASCEND_TOOLKIT_HOME")
    if not root or not os.path.isdir(root) or shutil.which("cmake") is None:
        return None
    return root


@pytest.mark.skipif(_cann_root() is None, reason="CANN is not installed (set ASCEND_HOME_PATH)")
def test_builds_with_cann(tmp_path):
    _emit_add(tmp_path / "src")
    build = tmp_path / "build"
    for cmd in (["cmake", "-S", str(tmp_path / "src"), "-B", str(build),
                 f"-DASCEND_CANN_PACKAGE_PATH={_cann_root()}"],
                ["cmake", "--build", str(build)]):
        run = subprocess.run(cmd, capture_output=True, text=True, check=False)
        assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
