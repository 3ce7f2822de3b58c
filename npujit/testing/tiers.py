"""The execution tiers a kernel can run on, and ``check_kernel`` over all of them.

=================  ===========================================================================
tier               what runs the kernel
=================  ===========================================================================
``reference``      the numpy interpreter of the IR: the semantics every other tier must match
``llvm``           the llvm CPU backend, the default for launches (docs/llvm.md)
``numba``          the numba CPU backend (``backend="numba"``)
``scheduled``      ``kernel.simulate`` with NaN-poisoned buffers and copies that land only at
                   their wait (``DebugOptions(uninitialized="nan", dma_execution_mode=
                   "on_wait")``): every tile lives in the buffer the schedule gave it, so a
                   schedule bug (a slot reused too early, a missing flag) gives wrong numbers
``ascendc-twin``   the emitted Ascend C compiled against the CPU twin of the Ascend C API, when
                   that backend is installed (skipped otherwise)
=================  ===========================================================================

Example::

    >>> import numpy as np
    >>> from npujit.kernels.elementwise import add_kernel
    >>> from npujit.testing import check_kernel, random_inputs
    >>> x, y = random_inputs((100, np.float32), (100, np.float32), seed=0)
    >>> res = check_kernel(add_kernel, (1,), [x, y, np.empty(100, np.float32), 100],
    ...                    lambda x, y, out, n: x + y, kwargs={"BLOCK": 128},
    ...                    backends=["reference", "scheduled"])
    >>> res.ok, sorted(res)
    (True, ['reference', 'scheduled'])
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from .compare import as_numpy, mismatch_report

TIER_NAMES = ("reference", "llvm", "numba", "scheduled", "ascendc-twin")
TWIN = "ascendc-twin"


def tier_unavailable(name: str) -> str | None:
    """Why tier ``name`` cannot run here, or None when it can.  The Ascend C twin is found
    through the backend registry (``npujit.backends.get_backend``); a backend object with an
    ``available()`` method (e.g. needing a C++ compiler) is asked too.

    Example::

        >>> tier_unavailable("numba") is None
        True
    """
    if name not in TIER_NAMES:
        raise ValueError(f"unknown tier {name!r}; choose from {', '.join(TIER_NAMES)} or 'all'")
    if name != TWIN:
        return None
    from npujit.backends import get_backend
    try:
        backend = get_backend(TWIN)
    except (ValueError, ImportError) as e:
        return f"the '{TWIN}' backend is not available in this npujit ({e})"
    available = getattr(backend, "available", None)
    if callable(available):
        ok = available()
        if ok is not True and ok is not None:
            return f"the '{TWIN}' backend cannot run here: {ok or 'its toolchain is missing'}"
    return None


def resolve_tiers(backends="all") -> list[str]:
    """Tier names from ``"all"``, one name, a comma-separated string or a list (in the order
    of ``TIER_NAMES``; ``"all"`` keeps only the available ones).

    Example::

        >>> resolve_tiers("numba,reference")
        ['reference', 'numba']
    """
    if isinstance(backends, str):
        if backends == "all":
            return [t for t in TIER_NAMES if tier_unavailable(t) is None]
        backends = [b.strip() for b in backends.split(",") if b.strip()]
    names = list(backends)
    for b in names:
        if b not in TIER_NAMES:
            raise ValueError(f"unknown backend {b!r}; choose from {', '.join(TIER_NAMES)} "
                             "or 'all'")
    return [t for t in TIER_NAMES if t in names]


def scheduled_debug_options():
    """The simulator's debug switches the ``scheduled`` tier runs with."""
    from npujit.sim import DebugOptions
    return DebugOptions(uninitialized="nan", dma_execution_mode="on_wait")


def launch_on(tier: str, kernel, grid, args, kwargs=None, spec=None):
    """Launch ``kernel[grid](*args, **kwargs)`` on ``tier``, writing the outputs into
    ``args`` as a normal launch does.  Returns the ``SimReport`` for ``scheduled``, else
    None.

    Example::

        >>> from npujit.kernels.elementwise import add_kernel
        >>> out = np.zeros(8, np.float32)
        >>> _ = launch_on("reference", add_kernel, (1,), [np.ones(8, np.float32),
        ...               np.ones(8, np.float32), out, 8], {"BLOCK": 8})
        >>> out.tolist() == [2.0] * 8
        True
    """
    kwargs = kwargs or {}
    reason = tier_unavailable(tier)
    if reason is not None:
        raise RuntimeError(reason)
    if tier == "scheduled":
        return kernel.simulate(*args, grid=grid, spec=spec, debug=scheduled_debug_options(),
                               **kwargs)
    k = kernel.with_options(backend=tier, **({"spec": spec} if spec is not None else {}))
    k[grid](*args, **kwargs)
    return None


def copy_value(v):
    """A copy of an array argument (numpy array or torch tensor); other values as they are."""
    if isinstance(v, np.ndarray):
        return v.copy()
    if hasattr(v, "clone") and hasattr(v, "detach"):
        return v.detach().clone()
    return v


def stored_arguments(kernel, args, kwargs) -> list[str]:
    """Names of the kernel's parameters it stores to for these arguments, in parameter
    order (from the compiled IR; compiled with the cheap reference backend)."""
    c = kernel.with_options(backend="reference").compile(*args, **kwargs)
    return [p for p in kernel.params if p in c.stores]


@dataclass
class TierResult:
    """What one tier did: ``status`` is ``ok``, ``mismatch``, ``error`` or ``skipped``;
    ``message`` says why when not ok; ``outputs`` maps each output argument to its value;
    ``report`` is the ``SimReport`` of the ``scheduled`` tier."""

    tier: str
    status: str
    message: str = ""
    outputs: dict = field(default_factory=dict)
    seconds: float = 0.0
    report: object = None

    @property
    def ok(self) -> bool:
        return self.status in ("ok", "skipped")

    def __str__(self) -> str:
        text = f"{self.tier:<13} {self.status:<9}"
        if self.status != "skipped":
            text += f" {self.seconds * 1e3:8.1f} ms"
        if self.message:
            text += "\n" + "\n".join("    " + line for line in self.message.splitlines())
        return text


class CheckResult(dict):
    """Tier name -> :class:`TierResult`, in the order run; ``ok`` is True when no tier
    failed; ``str()`` is a short table."""

    def __init__(self, kernel_name: str):
        super().__init__()
        self.kernel_name = kernel_name

    @property
    def ok(self) -> bool:
        return all(r.ok for r in self.values())

    @property
    def failures(self) -> list[TierResult]:
        return [r for r in self.values() if not r.ok]

    def __str__(self) -> str:
        head = f"check_kernel({self.kernel_name}): " + ("ok" if self.ok else
                                                        f"{len(self.failures)} tier(s) failed")
        return "\n".join([head] + ["  " + str(r).replace("\n", "\n  ") for r in self.values()])


def expected_outputs(reference_fn, args, kwargs, kernel, outputs: list[str]) -> dict:
    ref_args = [copy_value(a) for a in args]
    ref_kwargs = {k: copy_value(v) for k, v in kwargs.items()
                  if k not in kernel.constexpr_params}
    with np.errstate(all="ignore"):
        got = reference_fn(*ref_args, **ref_kwargs)
    if got is None:       # the reference wrote its outputs in place, as the kernel does
        bound = {**dict(zip(kernel.params, ref_args)), **ref_kwargs}
        return {name: bound[name] for name in outputs}
    if isinstance(got, dict):
        missing = [n for n in outputs if n not in got]
        if missing:
            raise ValueError(f"reference_fn returned no value for the output(s) {missing}")
        return {n: got[n] for n in outputs}
    if not isinstance(got, (tuple, list)):
        got = (got,)
    if len(got) != len(outputs):
        raise ValueError(f"reference_fn returned {len(got)} value(s) but kernel "
                         f"'{kernel.name}' writes {len(outputs)} argument(s) {outputs}; return "
                         "one value per output, in parameter order (or a dict by name)")
    return dict(zip(outputs, got))


def check_kernel(kernel, grid, args, reference_fn, backends="all", *, kwargs=None,
                 rtol=None, atol=None, spec=None, strict: bool = True) -> CheckResult:
    """Run ``kernel[grid](*args, **kwargs)`` on each tier (``backends``: ``"all"`` the
    available ones, a name, or a list) on copies of the arguments, and compare the arguments
    the kernel writes with ``reference_fn(*args, **runtime_kwargs)`` (called on copies too;
    constexpr keyword arguments such as ``BLOCK`` are not passed to it).

    ``reference_fn`` returns the expected outputs -- one array, a tuple in parameter order,
    or a dict by parameter name -- or returns None after writing them into its arguments
    as the kernel does.  Tolerances are :func:`assert_close`'s (per dtype by default).
    ``spec`` is the NPU spec for the scheduled tier.  Returns a :class:`CheckResult`; with
    ``strict`` (the default) raises ``AssertionError`` with the per-tier report when a tier
    fails.  A tier that is not available is ``skipped``.

    Example::

        >>> from npujit.kernels.elementwise import add_kernel
        >>> x = np.arange(6, dtype=np.float32)
        >>> res = check_kernel(add_kernel, (1,), [x, x, np.empty_like(x), 6],
        ...                    lambda x, y, out, n: x + y, backends="reference",
        ...                    kwargs={"BLOCK": 8})
        >>> res["reference"].status
        'ok'
    """
    __tracebackhide__ = True
    kwargs = dict(kwargs or {})
    result = CheckResult(kernel.name)
    names = list(TIER_NAMES) if backends == "all" else resolve_tiers(backends)
    outputs = stored_arguments(kernel, args, kwargs)
    if not outputs:
        raise ValueError(f"kernel '{kernel.name}' stores to none of its arguments; "
                         "check_kernel compares the arguments a kernel writes")
    expected = expected_outputs(reference_fn, args, kwargs, kernel, outputs)
    for tier in names:
        reason = tier_unavailable(tier)
        if reason is not None:
            result[tier] = TierResult(tier, "skipped", reason)
            continue
        run_args = [copy_value(a) for a in args]
        run_kwargs = {k: copy_value(v) for k, v in kwargs.items()}
        t0 = time.perf_counter()
        try:
            with np.errstate(all="ignore"):
                report = launch_on(tier, kernel, grid, run_args, run_kwargs, spec=spec)
        except Exception as e:      # a tier that raises is a failed tier, not a crash
            result[tier] = TierResult(tier, "error", f"{type(e).__name__}: {e}",
                                      seconds=time.perf_counter() - t0)
            continue
        seconds = time.perf_counter() - t0
        bound = {**dict(zip(kernel.params, run_args)), **run_kwargs}
        got = {n: bound[n] for n in outputs}
        problems = []
        for n in outputs:
            msg = mismatch_report(as_numpy(got[n]), as_numpy(expected[n]), rtol, atol)
            if msg:
                problems.append(f"output '{n}': {msg}")
        result[tier] = TierResult(tier, "mismatch" if problems else "ok", "\n".join(problems),
                                  got, seconds, report)
    if strict and not result.ok:
        raise AssertionError(str(result))
    return result
