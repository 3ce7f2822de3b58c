"""Analytic floors of an MoE layer: the bytes it must move (each touched expert's weights
once, x in, y out, the routing) and the FLOPs it must do, as time on a spec's HBM and
Cube peak.  The simulator's numbers go beside these (a lower bound, not a prediction).

Mixtral 8x7B (H 4096, I 14336, 8 experts, top-2, bf16): one expert's gate, up and down
weights are 3 * 4096 * 14336 * 2 B = 352.3 MB, all eight 2.82 GB; 2048 tokens do
2 * 2048 * 2 * 3 * 4096 * 14336 = 1.44 TFLOP in the experts.

Example::

    >>> from npujit.target import ASCEND_910B_LIKE
    >>> f = layer_floor(2048, 4096, 14336, 8, 2, 2, ASCEND_910B_LIKE)
    >>> round(f.weight_bytes / 1e9, 2), round(f.flops / 1e12, 2), f.bound
    (2.82, 1.44, 'cube')
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Floor:
    """Bytes and FLOPs a launch cannot avoid, and the time they take at peak.

    Example::

        >>> from npujit.target import ASCEND_910B_LIKE
        >>> router_floor(2048, 4096, 8, 2, 2, ASCEND_910B_LIKE).bound
        'hbm'
    """

    weight_bytes: float
    bytes: float
    flops: float
    seconds_memory: float
    seconds_compute: float

    @property
    def seconds(self) -> float:
        return max(self.seconds_memory, self.seconds_compute)

    @property
    def bound(self) -> str:
        return "hbm" if self.seconds_memory >= self.seconds_compute else "cube"


def _floor(weight_bytes, other_bytes, flops, spec) -> Floor:
    total = weight_bytes + other_bytes
    return Floor(weight_bytes, total, flops, total / spec.hbm_bytes_per_s,
                 flops / spec.peak_cube_flops)


def expected_active_experts(num_tokens: int, num_experts: int, top_k: int) -> float:
    """Experts touched by T tokens routed uniformly at random (k distinct each):
    ``E * (1 - ((E - k) / E) ** T)``.

    Example::

        >>> round(expected_active_experts(4, 8, 2), 2)
        5.47
    """
    return num_experts * (1.0 - ((num_experts - top_k) / num_experts) ** num_tokens)


def active_experts(topk_ids) -> int:
    """Experts a concrete routing touches."""
    return int(np.unique(np.asarray(topk_ids)).size)


def layer_floor(T: int, H: int, I: int, E: int, top_k: int, itemsize: int, spec,
                active: float | None = None, shared_i: int = 0) -> Floor:
    """The fused layer's floor: touched experts' weights (``active``, default the uniform
    expectation) and a shared expert of width ``shared_i`` read once, the router weight,
    x read and y written once, the routing (fp32 weight + int32 id per slot) written.

    Example::

        >>> from npujit.target import ASCEND_910B_LIKE
        >>> f = layer_floor(64, 4096, 14336, 8, 2, 2, ASCEND_910B_LIKE)
        >>> f.bound, round(f.seconds * 1e3, 2)
        ('hbm', 1.76)
    """
    a = expected_active_experts(T, E, top_k) if active is None else active
    weights = (a * 3 * H * I + 3 * H * shared_i + E * H) * itemsize
    other = 2 * T * H * itemsize + T * top_k * 8
    flops = 2.0 * T * (top_k * 3 * H * I + 3 * H * shared_i + H * E)
    return _floor(weights, other, flops, spec)


def workspace_bytes(T: int, I: int, top_k: int, itemsize: int, shared_i: int = 0) -> float:
    """The GM workspace of the two-kernel expert FFN (``experts.gate_up_act_kernel`` ->
    ``down_combine_kernel``) as the design needs it: the ``[rows, I]`` activation of every
    routed slot (and every token's shared-expert row) written once and read once.  This is
    the one GM traffic the fused layer may add to its floor (the workspace a separated
    AIC + AIV part needs between the two GEMMs); the floor itself leaves it out.

    Example::

        >>> round(workspace_bytes(512, 14336, 2, 2) / 1e6, 1)       # Mixtral, 512 tokens
        58.7
    """
    return 2.0 * T * (top_k * I + shared_i) * itemsize


def router_floor(T: int, H: int, E: int, top_k: int, itemsize: int, spec) -> Floor:
    """The fused router's floor: x and the router weight read once, the routing written."""
    return _floor(E * H * itemsize, T * H * itemsize + T * top_k * 8, 2.0 * T * H * E, spec)
