"""Which shipped kernels emit as Ascend C and match the reference on the CPU twin.

Runs every kernel in kernels/, kernels/triton_gallery/ and kernels/moe/ once on a small
ragged launch on the reference backend and on ``ascendc-twin`` and prints a markdown table
(kernel, emits, matches, and the first thing the emitter refuses).  The table in
docs/ascendc.md is this script's output.

Run: NPUJIT_CACHE_DIR=/tmp/c python benchmarks/ascendc_coverage.py (the last line is the count)
"""
from __future__ import annotations

import ml_dtypes
import numpy as np

TWIN = "ascendc-twin"
RTOL = {np.dtype(np.float32): 2e-5, np.dtype(np.float16): 2.0 ** -9,
        np.dtype(ml_dtypes.bfloat16): 2.0 ** -6}


def _same(got, want) -> bool:
    for g, w in zip(got, want):
        g, w = np.asarray(g), np.asarray(w)
        if g.dtype != w.dtype or g.shape != w.shape:
            return False
        if g.dtype in RTOL:
            tol = RTOL[g.dtype]
            scale = max(1.0, float(np.max(np.abs(w.astype(np.float64)), initial=0.0)))
            if not np.allclose(g.astype(np.float64), w.astype(np.float64), rtol=tol, atol=tol * scale):
                return False
        elif not np.array_equal(g, w):
            return False
    return True


def _cases():
    """(file, kernel, run) with ``run(backend) -> tuple of output arrays``."""
    from npujit.kernels import elementwise, layernorm, matmul, softmax
    from npujit.kernels.moe import combine, dispatch, experts, router
    from npujit.kernels.triton_gallery import layernorm as tg_ln, matmul as tg_mm, moe_router as tg_router
    from npujit.kernels.triton_gallery import softmax as tg_sm, vector_add as tg_add

    rng = np.random.default_rng(5)
    x1 = rng.standard_normal(1000).astype(np.float32)
    x2 = rng.standard_normal((5, 100)).astype(np.float32)
    w1 = rng.standard_normal(100).astype(np.float32)
    a, b = (rng.standard_normal(s).astype(np.float16) for s in ((70, 40), (40, 50)))
    T, E, H, I = 21, 4, 48, 40
    ids = np.stack([rng.permutation(E)[:2] for _ in range(T)]).astype(np.int32)
    xt = rng.standard_normal((T, H)).astype(np.float16)
    wr = rng.standard_normal((8, H)).astype(np.float16)
    gate_up = (rng.standard_normal((E, 2 * I, H)) * 0.3).astype(np.float16)
    down = (rng.standard_normal((E, H, I)) * 0.3).astype(np.float16)
    wts = rng.random((T, 2)).astype(np.float32)

    def aligned():
        return dispatch.align(ids, E, block_m=16, backend="reference")

    def launches(make, pick):
        """Run the launches ``make()`` gives, ``pick`` of them on the backend."""
        def run(backend):
            ls, out = make()
            for i, launch in enumerate(ls):
                launch.run(backend if i in pick else "reference")
            return out if isinstance(out, tuple) else (out,)
        return run

    def experts_launches(fused):
        def make():
            out = np.zeros((T, H), np.float32)
            return experts.experts_launches(xt, aligned(), wts, gate_up, down, out,
                                            form="onchip" if fused else "workspace"), out
        return make

    yield "elementwise.py", "add_kernel", lambda be: (elementwise.add(x1, x1, block=256, backend=be),)
    yield "elementwise.py", "add_stream_kernel", lambda be: _stream(elementwise, x1, be)
    yield "softmax.py", "softmax_kernel", lambda be: (softmax.softmax(x2, backend=be),)
    yield "layernorm.py", "layernorm_kernel", lambda be: (layernorm.layernorm(x2, w1, w1, backend=be),)
    yield "layernorm.py", "rmsnorm_kernel", lambda be: (layernorm.rmsnorm(x2, w1, backend=be),)
    yield "matmul.py", "matmul_kernel", lambda be: (matmul.matmul(a, b, block_m=32, block_n=32,
                                                                  block_k=16, backend=be),)
    af, bf = a.astype(np.float32), b.astype(np.float32)
    yield "matmul.py", "matmul_kernel (f32)", lambda be: (matmul.matmul(af, bf, block_m=32, block_n=32,
                                                                        block_k=16, backend=be),)
    gal = lambda k, be: k.with_options(backend=be)          # noqa: E731
    yield "triton_gallery/vector_add.py", "add_kernel", lambda be: (
        tg_add.add(x1, x1, block_size=256, kernel=gal(tg_add.add_kernel, be)),)
    yield "triton_gallery/softmax.py", "softmax_kernel", lambda be: (
        tg_sm.softmax(x2, kernel=gal(tg_sm.softmax_kernel, be)),)
    yield "triton_gallery/layernorm.py", "_layer_norm_fwd_fused", lambda be: (
        tg_ln.layer_norm(x2, w1, w1, kernel=gal(tg_ln._layer_norm_fwd_fused, be))[0],)
    yield "triton_gallery/matmul.py", "matmul_kernel", lambda be: (
        tg_mm.matmul(a, b, kernel=gal(tg_mm.matmul_kernel, be)),)
    yield "triton_gallery/matmul.py", "matmul_kernel (f32)", lambda be: (
        tg_mm.matmul(af, bf, kernel=gal(tg_mm.matmul_kernel, be)),)
    w_gate = rng.standard_normal((64, 8)).astype(np.float32)
    yield "triton_gallery/moe_router.py", "router_kernel (f32 tokens)", lambda be: tg_router.route(
        x2[:, :64].astype(np.float32), w_gate, kernel=gal(tg_router.router_kernel, be))
    yield "triton_gallery/moe_router.py", "router_kernel (f32, 3 experts)", lambda be: tg_router.route(
        x2[:, :64].astype(np.float32), w_gate[:, :3].copy(), kernel=gal(tg_router.router_kernel, be))
    yield "triton_gallery/moe_router.py", "router_kernel (f16 tokens)", lambda be: tg_router.route(
        xt[:, :40], wr.T[:40, :6].copy(), block_h=16, kernel=gal(tg_router.router_kernel, be))
    yield "moe/router.py", "router_kernel (mixtral)", launches(
        lambda: ((lambda l, o: ([l], o))(*router.router_launch(xt, wr, 2))), {0})
    yield "moe/router.py", "router_kernel (deepseek_v3, groups)", launches(
        lambda: ((lambda l, o: ([l], o))(*router.router_launch(
            xt, np.tile(wr, (2, 1)), 4, scoring="deepseek_v3"))), {0})
    yield "moe/router.py", "score_kernel", launches(
        lambda: router.route_unfused_launches(xt, wr, 2), {1})
    yield "moe/router.py", "select_kernel", launches(
        lambda: router.route_unfused_launches(xt, wr, 2), {2})
    yield "matmul.py", "matmul_kernel (router logits, w.T)", launches(
        lambda: router.route_unfused_launches(xt, wr, 2), {0})
    yield "moe/dispatch.py", "count_kernel, offsets_kernel", launches(
        lambda: (lambda ls, al: (ls[:2], (al.counts, al.offsets, al.sorted_ids)))(
            *dispatch.align_launches(ids, E, 16)), {0, 1})
    yield "moe/dispatch.py", "scatter_kernel", launches(
        lambda: (lambda ls, al: (ls, (al.sorted_ids, al.row_idx)))(
            *dispatch.align_launches(ids, E, 16)), {2})
    yield "moe/dispatch.py", "permute_kernel", lambda be: (dispatch.permute(xt, aligned(), backend=be),)
    yield "moe/experts.py", "act_kernel (silu, gelu)", lambda be: tuple(
        experts.act(xt[:, :32].astype(np.float32), act, backend=be) for act in ("silu", "gelu"))
    rows = rng.standard_normal((aligned().sorted_ids.size, H)).astype(np.float16)
    yield "moe/experts.py", "grouped_gemm_kernel", lambda be: (experts.grouped_gemm(
        rows, aligned().expert_ids, gate_up, 16, np.float32, backend=be),)
    yield "moe/experts.py", "gate_up_act_kernel, down_combine_kernel", launches(
        experts_launches(False), {0, 1})
    yield "moe/experts.py", "fused_experts_kernel (on-chip)", launches(experts_launches(True), {0})
    y = rng.standard_normal((aligned().sorted_ids.size, H)).astype(np.float32)
    yield "moe/combine.py", "combine_kernel", lambda be: (combine.combine(
        y, aligned().row_idx, wts, np.float32, backend=be),)


def _stream(elementwise, x, backend):
    out = np.zeros_like(x)
    elementwise.add_stream_kernel.with_options(backend=backend)[(3,)](
        x, x, out, x.size, 334, BLOCK=64, NUM_STAGES=2)
    return (out,)


def main() -> None:
    print("| file | kernel | emits | matches | first refusal |")
    print("|---|---|---|---|---|")
    matched = total = 0
    for path, name, run in _cases():
        try:
            want = tuple(np.copy(o) for o in run("reference"))
            got = run(TWIN)
            emits, ok, why = "yes", "yes" if _same(got, want) else "**no**", ""
        except NotImplementedError as e:
            emits, ok = "no", ""
            why = str(e).split("cannot lower ", 1)[-1].split(". Run this", 1)[0]
        print(f"| {path} | `{name}` | {emits} | {ok} | {why.replace('|', '/')} |", flush=True)
        total += 1
        matched += ok == "yes"
    print(f"\n{matched} of {total} launches emit and match the reference.")


if __name__ == "__main__":
    main()
