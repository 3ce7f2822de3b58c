"""How a Mixture-of-Experts router turns logits into ``(topk_weights, topk_ids)``: the
``Routing`` description shared by the kernels and the numpy reference, and the presets of
the models people run (docs/moe.md has the table and where each rule comes from).

A routing is: a score function over the E logits (``softmax`` or ``sigmoid``), an optional
per-expert ``correction_bias`` added for *selection only* (DeepSeek-V3's aux-loss-free
balancing), group-limited selection (``n_group`` groups ranked by the sum of their top-2
biased scores, the best ``topk_group`` kept), top-k (ties to the lower expert id), and the
weights: the unbiased scores of the chosen experts, optionally renormalised to sum 1, times
``routed_scaling_factor``.

Example::

    >>> r = Routing.preset("deepseek_v3", n_group=4, topk_group=2)
    >>> r.scoring, r.renormalize, r.routed_scaling_factor
    ('sigmoid', True, 2.5)
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

SCORINGS = ("softmax", "sigmoid")

# Added to the renormalising sum, as DeepSeek-V3's router does, so an all-zero row of
# sigmoid scores cannot divide by zero.
RENORM_EPS = 1e-20


@dataclass(frozen=True)
class Routing:
    """One routing rule.  ``correction_bias`` is a length-E float array or None.

    Example::

        >>> Routing(scoring="softmax", renormalize=False).n_group
        1
    """

    scoring: str = "softmax"
    renormalize: bool = True
    n_group: int = 1
    topk_group: int = 1
    routed_scaling_factor: float = 1.0
    correction_bias: object = None
    max_top_k: int | None = None        # Switch routes to exactly one expert

    @staticmethod
    def preset(name: str, **overrides) -> "Routing":
        """A named rule (``PRESETS``), fields overridden by keyword.

        Example::

            >>> Routing.preset("qwen", renormalize=True).renormalize
            True
        """
        if name not in PRESETS:
            raise ValueError(f"routing: unknown preset {name!r}; choose one of "
                             f"{sorted(PRESETS)} or pass a Routing(...)")
        return dataclasses.replace(PRESETS[name], **overrides)

    def check(self, num_experts: int, top_k: int) -> "Routing":
        """Validate against E and k; returns self.  Errors name the offending field."""
        if self.scoring not in SCORINGS:
            raise ValueError(f"routing.scoring must be one of {SCORINGS}, got {self.scoring!r}")
        if not isinstance(top_k, (int, np.integer)) or not 1 <= top_k <= num_experts:
            raise ValueError(f"top_k must be an int between 1 and the number of experts "
                             f"({num_experts}), got {top_k!r}")
        if self.max_top_k is not None and top_k > self.max_top_k:
            raise ValueError(f"top_k={top_k}: this routing takes at most "
                             f"{self.max_top_k} expert(s) per token")
        g, tg = self.n_group, self.topk_group
        if g < 1 or num_experts % g:
            raise ValueError(f"routing.n_group={g} must divide the number of experts "
                             f"({num_experts})")
        if not 1 <= tg <= g:
            raise ValueError(f"routing.topk_group={tg} must be between 1 and n_group={g}")
        if g > 1 and (num_experts // g < 2 or top_k > tg * (num_experts // g)):
            raise ValueError(f"group-limited routing needs >= 2 experts per group and top_k "
                             f"({top_k}) <= topk_group x group size "
                             f"({tg} x {num_experts // g})")
        b = self.correction_bias
        if b is not None and np.shape(b) != (num_experts,):
            raise ValueError(f"routing.correction_bias must have shape ({num_experts},), "
                             f"got {np.shape(b)}")
        return self

    def bias(self, num_experts: int) -> np.ndarray:
        """The correction bias as fp32 (zeros when there is none)."""
        if self.correction_bias is None:
            return np.zeros(num_experts, np.float32)
        return np.ascontiguousarray(np.asarray(self.correction_bias, dtype=np.float32))


PRESETS = {
    # HF MixtralSparseMoeBlock: softmax over E in fp32, top-k, renormalised.
    "mixtral": Routing("softmax", renormalize=True),
    # Qwen1.5/2-MoE (norm_topk_prob False); Qwen3-MoE sets renormalize=True.
    "qwen": Routing("softmax", renormalize=False),
    "qwen3": Routing("softmax", renormalize=True),
    # DeepSeek-V3 noaux_tc: sigmoid, bias for selection, 8 groups / top-4, x 2.5.
    "deepseek_v3": Routing("sigmoid", renormalize=True, n_group=8, topk_group=4,
                           routed_scaling_factor=2.5),
    # Switch Transformer: top-1 of the softmax, the probability as the weight.
    "switch": Routing("softmax", renormalize=False, max_top_k=1),
    # CANN MoeGatingTopKSoftmax: softmax, top-k, no renormalisation.
    "gating_topk_softmax": Routing("softmax", renormalize=False),
}


def resolve(routing, num_experts: int, top_k: int) -> Routing:
    """A preset name or a ``Routing``, checked against E and k.

    Example::

        >>> resolve("mixtral", 8, 2).renormalize
        True
    """
    if isinstance(routing, str):
        routing = Routing.preset(routing)
    if not isinstance(routing, Routing):
        raise TypeError(f"routing must be a preset name ({sorted(PRESETS)}) or a Routing, "
                        f"got {type(routing).__name__}")
    return routing.check(num_experts, top_k)
