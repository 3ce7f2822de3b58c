"""Issue 16's Mixtral-style MoE layer row: 512 tokens, H 1024, I 3584, 8 experts, top-2,
fp32 (``--quick``: 64 tokens, H 256, I 512).

Implementations, all on the same weights (layouts as HF holds them: ``router_weight
[E, H]``, ``gate_up_proj [E, 2I, H]`` gate rows first, ``down_proj [E, H, I]``):

* ``npujit``, ``npujit llvm``: ``npujit.moe.fused_moe(..., backend=...)`` on each CPU
  backend (cpu_rows.OURS);
* ``numpy``: ``npujit.moe.reference.moe`` (float32 matmuls through numpy's BLAS);
* ``torch``: the layer in torch eager as one writes it by hand: router matmul, top-k of
  the logits, softmax over the chosen, then per expert the gathered tokens' gate/up
  matmul, SiLU * up, down matmul, scaled and ``index_add_``-ed into the output;
* ``transformers``: transformers' ``MixtralSparseMoeBlock`` in eval mode (transformers 5
  keeps the experts as ``gate_up_proj`` / ``down_proj`` tensors; 4.x as ``w1/w3/w2``
  per expert: both are filled).

cpu_rows.py times it as one of its rows (result of each checked against numpy's).  Run from
the repository root as ``python -m benchmarks``: the children run with ``benchmarks/`` as
their first path entry, so the repository's ``kernels/`` folder does not shadow the
``kernels`` package that transformers imports.
"""
from __future__ import annotations

import numpy as np

ROW = "moe layer"


def transformers_block(torch, rw, gu, dn, top_k):
    from transformers.models.mixtral.configuration_mixtral import MixtralConfig
    from transformers.models.mixtral.modeling_mixtral import MixtralSparseMoeBlock
    E, two_i, H = gu.shape
    cfg = MixtralConfig(hidden_size=H, intermediate_size=two_i // 2, num_local_experts=E,
                        num_experts_per_tok=top_k)
    block = MixtralSparseMoeBlock(cfg).eval()
    with torch.no_grad():
        gate = block.gate.weight if hasattr(block.gate, "weight") else block.gate
        gate.copy_(torch.from_numpy(rw))
        experts = block.experts
        if hasattr(experts, "gate_up_proj"):            # transformers 5
            experts.gate_up_proj.copy_(torch.from_numpy(gu))
            experts.down_proj.copy_(torch.from_numpy(dn))
        else:                                           # transformers 4: per-expert MLPs
            i = two_i // 2
            for e, ex in enumerate(experts):
                ex.w1.weight.copy_(torch.from_numpy(gu[e, :i]))
                ex.w3.weight.copy_(torch.from_numpy(gu[e, i:]))
                ex.w2.weight.copy_(torch.from_numpy(dn[e]))
    return block


def _torch_eager(torch, x, rw, gu, dn, top_k):
    tx, trw, tgu, tdn = (torch.from_numpy(a) for a in (x, rw, gu, dn))

    def run():
        with torch.no_grad():
            top = torch.topk(tx @ trw.T, top_k, dim=1)
            w = torch.softmax(top.values, dim=1)
            out = torch.zeros_like(tx)
            for e in range(tgu.shape[0]):
                tok, slot = torch.where(top.indices == e)
                if tok.numel() == 0:
                    continue
                gate, up = (tx[tok] @ tgu[e].T).chunk(2, dim=-1)
                y = (torch.nn.functional.silu(gate) * up) @ tdn[e].T
                out.index_add_(0, tok, y * w[tok, slot, None])
            return out
    return run


def layer(quick: bool):
    """``(x, router_weight, gate_up_proj, down_proj, top_k)`` of the row's layer, fp32."""
    T, H, I, E, k = (64, 256, 512, 8, 2) if quick else (512, 1024, 3584, 8, 2)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((T, H)).astype(np.float32)
    rw = rng.standard_normal((E, H)).astype(np.float32)
    gu = (rng.standard_normal((E, 2 * I, H)) * 0.02).astype(np.float32)
    dn = (rng.standard_normal((E, H, I)) * 0.02).astype(np.float32)
    return x, rw, gu, dn, k


def row(quick: bool, torch=None, ours=None):
    """``(name, problem, {impl: callable}, tol)`` as cpu_rows.rows yields them; ``ours``
    is cpu_rows.ours (npujit's implementations, one per backend), else numba's alone."""
    import npujit.moe as moe
    x, rw, gu, dn, k = layer(quick)
    (T, H), (E, two_i, _) = x.shape, gu.shape
    I = two_i // 2           # noqa: E741
    if ours is None:
        ours = lambda run: {"npujit": lambda: run("numba")}      # noqa: E731
    impls = {**ours(lambda b: moe.fused_moe(x, rw, gu, dn, k, backend=b)),
             "numpy": lambda: moe.reference.moe(x, rw, gu, dn, k)}
    if torch is not None:
        impls["torch"] = _torch_eager(torch, x, rw, gu, dn, k)
        try:
            block = transformers_block(torch, rw, gu, dn, k)
        except ImportError:
            block = None
        if block is not None:
            tx = torch.from_numpy(x)[None]

            def hf():
                with torch.no_grad():
                    out = block(tx)
                return (out[0] if isinstance(out, tuple) else out)[0]
            impls["transformers"] = hf
    yield ROW, f"{T} tok, H {H}, I {I}, {E} experts top-{k} f32", impls, 1e-4
