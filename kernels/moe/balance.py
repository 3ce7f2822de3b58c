"""Load-balance statistics of a routing, computed by the kernels: per-expert load (the
dispatch's histogram), the mean router probability per expert (summed on chip by the fused
router), the Switch-style auxiliary loss, the coefficient of variation of the load and the
slots each expert drops under a capacity.

``route_and_balance`` runs the fused router with its ``PROB_SUM`` output on (each program
adds its tokens' probabilities into an [E] fp32 array with ``nl.atomic_add``) and the
dispatch's count kernel (the histogram of ``topk_ids``, also by atomics); nothing else
reaches GM.  The numpy oracle is ``reference.load_stats``.

The auxiliary loss is ``E * sum_i f_i * P_i`` with ``f_i`` the fraction of the T*k slots
routed to expert i and ``P_i`` the mean over tokens of expert i's router probability
(softmax scores; sigmoid scores normalised per token to sum to 1): 1.0 when the routing is
perfectly balanced, E when every slot goes to one expert whose probability is 1.  The loss
of transformers' Mixtral (``load_balancing_loss_func``) counts ``f`` per top-k position and
equals ``top_k`` times this one.

Example::

    >>> rng = np.random.default_rng(0)
    >>> x = rng.standard_normal((40, 32)).astype(np.float32)
    >>> w, ids, lb = route_and_balance(x, rng.standard_normal((8, 32)).astype(np.float32), 2)
    >>> int(lb.load.sum()), lb.load.shape
    (80, (8,))
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .checks import as_array, check_router
from .dispatch import align_launches
from .layer import expert_capacity
from .router import router_launch


@dataclass(frozen=True)
class LoadBalance:
    """The load-balance statistics of one routing of ``num_tokens`` tokens to ``top_k``
    of ``len(load)`` experts.

    * ``load [E]`` int: slots routed to each expert (before the capacity rule);
    * ``mean_prob [E]`` fp32: each expert's router probability averaged over the tokens;
    * ``capacity``: slots an expert keeps (None: dropless);
    * ``dropped [E]``, ``cv``, ``aux_loss``, ``imbalance``: derived, see their docs.
    """

    load: np.ndarray
    mean_prob: np.ndarray
    num_tokens: int
    top_k: int
    capacity: int | None = None

    @property
    def num_experts(self) -> int:
        return self.load.size

    @property
    def dropped(self) -> np.ndarray:
        """Slots each expert drops under ``capacity`` (zeros when dropless)."""
        if self.capacity is None:
            return np.zeros_like(self.load)
        return self.load - np.minimum(self.load, self.capacity)

    @property
    def cv(self) -> float:
        """Coefficient of variation of the load (std / mean; 0.0 when balanced)."""
        mean = float(self.load.mean()) if self.load.size else 0.0
        return float(self.load.std()) / mean if mean else 0.0

    @property
    def imbalance(self) -> float:
        """The busiest expert's load over the mean (1.0 when balanced)."""
        mean = float(self.load.mean()) if self.load.size else 0.0
        return float(self.load.max()) / mean if mean else 1.0

    @property
    def aux_loss(self) -> float:
        """Switch's auxiliary loss ``E * sum_i f_i * P_i`` (1.0 when balanced)."""
        slots = max(int(self.load.sum()), 1)
        f = self.load / slots
        return float(self.num_experts * np.sum(f * self.mean_prob.astype(np.float64)))

    def summary(self) -> str:
        """One line: the load per expert and the derived numbers.

        Example::

            >>> LoadBalance(np.array([3, 1]), np.array([0.7, 0.3], np.float32), 2, 2).summary()
            'load [3 1]  cv 0.50  max/mean 1.50  aux loss 1.20  dropped 0'
        """
        return (f"load {np.array2string(self.load, separator=' ')}  cv {self.cv:.2f}  "
                f"max/mean {self.imbalance:.2f}  aux loss {self.aux_loss:.2f}  "
                f"dropped {int(self.dropped.sum())}")


def route_and_balance(x, router_weight, top_k: int, scoring="mixtral",
                      capacity_factor: float | None = None, backend: str | None = None,
                      block_t: int | None = None):
    """``(topk_weights [T, k], topk_ids [T, k], LoadBalance)``: the fused router (as
    ``route``) with its probability sums on, and the dispatch's histogram of the ids.
    ``capacity_factor`` sets the capacity the drop counts use (``expert_capacity``).

    Example::

        w, ids, lb = route_and_balance(x, router_weight, 2, capacity_factor=1.25)
        print(lb.summary())
    """
    x, router_weight = as_array(x, "x"), as_array(router_weight, "router_weight")
    T, _, E = check_router(x, router_weight, top_k)
    prob_sum = np.zeros(E, np.float32)
    launch, (weights, ids) = router_launch(x, router_weight, top_k, scoring, block_t,
                                           prob_sum=prob_sum)
    launch.run(backend)
    launches, aligned = align_launches(ids, E)
    launches[0].run(backend)                   # count_kernel: the histogram only
    return weights, ids, LoadBalance(
        load=aligned.counts.copy(), mean_prob=prob_sum / max(T, 1), num_tokens=T,
        top_k=int(top_k), capacity=expert_capacity(T, E, top_k, capacity_factor))
