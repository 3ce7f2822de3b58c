"""Argument checks of the MoE entry points: every error names the argument, the expected
and the actual shape / dtype / layout, and what to do.

Example::

    >>> check_layer(np.zeros((4, 8), np.float32), np.zeros((3, 8), np.float32),
    ...             np.zeros((3, 6, 8), np.float32), np.zeros((3, 8, 3), np.float32), 2)
    (4, 8, 3, 3)
"""
from __future__ import annotations

import ml_dtypes
import numpy as np

FLOAT_DTYPES = (np.dtype(np.float32), np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16))


def as_array(a, name: str) -> np.ndarray:
    """A numpy view of ``a`` (torch CPU tensors pass through ``.numpy()``)."""
    if hasattr(a, "detach") and hasattr(a, "numpy"):
        import torch
        if a.dtype == torch.bfloat16:
            return a.detach().view(torch.int16).numpy().view(ml_dtypes.bfloat16)
        return a.detach().numpy()
    if not isinstance(a, np.ndarray):
        raise TypeError(f"{name} must be a numpy array or a torch CPU tensor, got "
                        f"{type(a).__name__}")
    return a


def check_float(a: np.ndarray, name: str) -> None:
    if a.dtype not in FLOAT_DTYPES:
        raise TypeError(f"{name} must be float32, float16 or bfloat16, got {a.dtype}")


def check_contiguous(a: np.ndarray, name: str) -> None:
    if not a.flags.c_contiguous:
        raise ValueError(f"{name} must be C-contiguous (shape {a.shape}, strides "
                         f"{a.strides}); pass np.ascontiguousarray({name})")


def check_x(x: np.ndarray) -> tuple[int, int]:
    if x.ndim != 2:
        raise ValueError(f"x must be 2-D [tokens, hidden], got shape {x.shape}")
    check_float(x, "x")
    if x.size and x.strides[1] != x.itemsize:     # an empty batch's strides mean nothing
        raise ValueError(f"x must have contiguous rows (stride 1 along hidden), got strides "
                         f"{x.strides}; pass np.ascontiguousarray(x)")
    return x.shape


def check_router(x: np.ndarray, router_weight: np.ndarray, top_k) -> tuple[int, int, int]:
    """(T, H, E) for a router call."""
    T, H = check_x(x)
    if router_weight.ndim != 2 or router_weight.shape[1] != H:
        raise ValueError(f"router_weight must be [num_experts, hidden={H}] (an nn.Linear "
                         f"weight), got shape {router_weight.shape}")
    check_float(router_weight, "router_weight")
    check_contiguous(router_weight, "router_weight")
    E = router_weight.shape[0]
    if isinstance(top_k, bool) or not isinstance(top_k, (int, np.integer)) \
            or not 1 <= top_k <= E:
        raise ValueError(f"top_k must be an int between 1 and the number of experts "
                         f"({E}), got {top_k!r}")
    return T, H, E


def check_experts(x: np.ndarray, gate_up_proj: np.ndarray,
                  down_proj: np.ndarray) -> tuple[int, int, int, int]:
    """(T, H, E, I) for the expert weights."""
    T, H = check_x(x)
    if gate_up_proj.ndim != 3 or gate_up_proj.shape[2] != H or gate_up_proj.shape[1] % 2:
        raise ValueError(f"gate_up_proj must be [num_experts, 2*intermediate, hidden={H}] "
                         f"(gate rows first, then up rows), got shape {gate_up_proj.shape}")
    E, I = gate_up_proj.shape[0], gate_up_proj.shape[1] // 2
    if down_proj.shape != (E, H, I):
        raise ValueError(f"down_proj must be [num_experts={E}, hidden={H}, "
                         f"intermediate={I}] to match gate_up_proj {gate_up_proj.shape}, "
                         f"got shape {down_proj.shape}")
    for a, name in ((gate_up_proj, "gate_up_proj"), (down_proj, "down_proj")):
        check_float(a, name)
        check_contiguous(a, name)
    return T, H, E, I


def check_layer(x, router_weight, gate_up_proj, down_proj, top_k) -> tuple:
    """(T, H, E, I) for a whole layer."""
    T, H, E = check_router(x, router_weight, top_k)
    _, _, E2, I = check_experts(x, gate_up_proj, down_proj)
    if E2 != E:
        raise ValueError(f"router_weight has {E} experts but gate_up_proj has {E2}")
    return T, H, E, I


def check_topk(topk_weights, topk_ids, T: int, E: int) -> tuple[np.ndarray, np.ndarray]:
    """fp32 weights and int32 ids, both [T, k], ids in [0, E)."""
    w, ids = np.asarray(topk_weights), np.asarray(topk_ids)
    if ids.ndim != 2 or ids.shape[0] != T:
        raise ValueError(f"topk_ids must be [tokens={T}, top_k], got shape {ids.shape}")
    if w.shape != ids.shape:
        raise ValueError(f"topk_weights must have topk_ids' shape {ids.shape}, got {w.shape}")
    if ids.dtype.kind not in "iu":
        raise TypeError(f"topk_ids must be integer, got {ids.dtype}")
    if ids.size and (ids.min() < 0 or ids.max() >= E):
        raise ValueError(f"topk_ids must lie in [0, {E}), got values in "
                         f"[{ids.min()}, {ids.max()}]")
    return (np.ascontiguousarray(w, dtype=np.float32),
            np.ascontiguousarray(ids, dtype=np.int32))


def check_shared(shared_expert, H: int):
    """A shared expert ``(gate_up [2I_s, H], down [H, I_s])`` or None."""
    if shared_expert is None:
        return None
    if not isinstance(shared_expert, (tuple, list)) or len(shared_expert) != 2:
        raise ValueError("shared_expert must be a pair (gate_up [2*I_s, hidden], "
                         "down [hidden, I_s])")
    gu, dn = (as_array(a, n) for a, n in zip(shared_expert, ("shared_expert[0]",
                                                              "shared_expert[1]")))
    if gu.ndim != 2 or gu.shape[1] != H or gu.shape[0] % 2:
        raise ValueError(f"shared_expert[0] (gate_up) must be [2*I_s, hidden={H}], got "
                         f"shape {gu.shape}")
    if dn.shape != (H, gu.shape[0] // 2):
        raise ValueError(f"shared_expert[1] (down) must be [hidden={H}, "
                         f"I_s={gu.shape[0] // 2}], got shape {dn.shape}")
    for a, name in ((gu, "shared_expert[0]"), (dn, "shared_expert[1]")):
        check_float(a, name)
        check_contiguous(a, name)
    return gu, dn
