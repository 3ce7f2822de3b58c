"""Helpers for unit tests of compiled kernels (docs/testing.md).

* :func:`assert_close` -- dtype-aware comparison with a report of the worst element;
* :func:`check_kernel` -- run a kernel on every execution tier and compare each with a
  reference function;
* :func:`random_inputs` / :func:`random_array` -- seeded inputs with NaN, ±inf, -0.0,
  subnormals and integer extremes;
* :func:`count_compiles` / :func:`fresh_cache` -- count compiles, isolate the cache;
* :func:`simulate_launches` -- simulate every launch and fail on deadlocks and races.

The pytest plugin (installed with npujit, module ``pytest_npujit``) adds
``--npujit-backend``, the ``npu_backend`` fixture, ``--npujit-simulate`` and markers.

Example::

    >>> import numpy as np
    >>> from npujit.testing import assert_close, random_inputs
    >>> (x,) = random_inputs((16, np.float32), seed=0, special=0)
    >>> assert_close(x * 2, x + x)
"""
from .compare import DEFAULT_TOLERANCES, assert_close, default_tolerance, mismatch_report, \
    ulp_distance
from .compiles import CompileCounter, count_compiles, fresh_cache
from .inputs import SPECIAL_VALUES, random_array, random_inputs
from .launches import simulate_launches
from .tiers import TIER_NAMES, CheckResult, TierResult, check_kernel, launch_on, \
    resolve_tiers, tier_unavailable

__all__ = ["assert_close", "mismatch_report", "ulp_distance", "default_tolerance",
           "DEFAULT_TOLERANCES", "check_kernel", "CheckResult", "TierResult", "TIER_NAMES",
           "launch_on", "resolve_tiers", "tier_unavailable", "random_inputs", "random_array",
           "SPECIAL_VALUES", "count_compiles", "fresh_cache", "CompileCounter",
           "simulate_launches"]
