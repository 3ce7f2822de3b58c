"""``kernel.simulate(...)``: run a launch through the schedule and the timing simulator.

The kernel is compiled for the spec (its schedule is the spec's) and every program runs
for real -- on the kernel's backend: numba in recording mode, replayed into the stream
recorder, or the reference interpreter with the recorder as its hook -- so the outputs
land in the caller's arrays exactly as a normal launch writes them, and loop trip counts,
masks and data-dependent work are real.  The per-core instruction streams (GM copies
tagged with the region they touch, for the spec's L2) go to ``npujit.sim.simulate``.
``DebugOptions(uninitialized="nan")`` / ``dma_execution_mode="on_wait"`` also apply to the
numbers: the reference interpreter then keeps every tile in its scheduled buffer
(``npujit.backends.reference.scheduled``), so a schedule bug gives a wrong answer.

Example::

    >>> report = add_kernel.simulate(x, y, out, n, grid=(4,), BLOCK=1024)   # doctest: +SKIP
    >>> report.cycles >= report.bound.cycles                               # doctest: +SKIP
    True
"""
from __future__ import annotations

from npujit import knobs
from npujit.backends import get_backend
from npujit.sim import StreamRecorder, simulate
from npujit.sim.simulate import no_cyclic_gc

from .compiler import resolve_spec


# The backends that run a kernel in recording mode for the simulator (run_recorded).
RECORDERS = ("reference", "numba")
# Arrays at least this big (bytes, all array arguments together) run on the numba backend
# when the backend is not chosen: compiling the recording build costs ~0.5 s once (then
# cached on disk), which the reference interpreter's per-op cost outgrows around here.
NUMBA_FROM_BYTES = 1 << 20


def simulate_kernel(kernel, grid, args, kwargs, spec=None, debug=None, trace: bool = True,
                    backend: str | None = None, numerics: bool = True,
                    one_bit_flags: bool | None = None, start_jitter: int = 0):
    """Launch ``kernel`` on ``grid`` with ``args``/``kwargs`` through the simulator and
    return its ``npujit.sim.SimReport``.  ``spec`` defaults to the kernel's ``spec``
    option, else the 910B-like preset; ``debug`` is a ``npujit.sim.DebugOptions``;
    ``backend`` runs the programs (default: the kernel's ``backend`` option if set, else
    numba for launches with at least ``NUMBA_FROM_BYTES`` of arrays, else the reference).

    ``numerics=False`` is the timing-only mode: only the ops that decide the instruction
    streams run (addresses, masks, trip counts, gathered indices and what they are
    computed from, ``ir.slice.stream_slice``); the arithmetic that only feeds outputs is
    skipped.  Cycles, bytes and instruction counts are those of the full run, but the
    output arrays hold garbage (whatever they held, or partial results), and the report
    says so: ``report.numerics is False``.  The debug switches that change numbers
    (``uninitialized="nan"``, ``dma_execution_mode="on_wait"``) need the numbers.
    ``one_bit_flags`` and ``start_jitter`` (each core takes its first program at a cycle
    drawn from ``0..start_jitter``, so cores running alike programs do not move in
    lockstep): as ``npujit.sim.simulate`` (defaults: the knob, on; 0).

    Example::

        >>> simulate_kernel(add_kernel, (4,), (x, y, out, n), {"BLOCK": 1024})  # doctest: +SKIP
    """
    launch, spec = record_launch(kernel, grid, args, kwargs, spec=spec, debug=debug,
                                 backend=backend, numerics=numerics)
    report = simulate(launch, spec, trace=trace, debug=debug, one_bit_flags=one_bit_flags,
                      start_jitter=start_jitter)
    report.numerics = numerics
    return report


def record_launch(kernel, grid, args, kwargs, spec=None, debug=None,
                  backend: str | None = None, numerics: bool = True) -> tuple:
    """The first half of :func:`simulate_kernel`: compile for the spec, run the programs
    and return ``(launch, spec)`` -- the recorded ``npujit.sim.Launch`` and the
    ``NPUSpec`` -- without simulating it (the autotuner bounds a launch before it spends
    the simulation on it).

    Example::

        >>> launch, spec = record_launch(add_kernel, (4,), (x, y, out, n), {"BLOCK": 1024})  # doctest: +SKIP
    """
    spec = resolve_spec(spec if spec is not None else kernel.options.get("spec"))
    # One compile, shared with normal launches of the same options (the backend stage is
    # not built: the programs run below, recorded).
    own = resolve_spec(kernel.options.get("spec")) is spec
    k = kernel if own else kernel.with_options(spec=spec)
    sig = k.signature
    bound = sig.bind(args, kwargs)
    g = sig.grid(grid, bound)
    c = k.compile(*args, **kwargs)
    c.check_writeable(bound)
    rt = sig.runtime_args(c.sigs, c.runtime_index, bound)
    # Debug switches that change numbers (NaN-poisoned buffers, copies landing at their
    # wait) run the reference interpreter with every tile in its scheduled buffer;
    # otherwise the kernel's backend runs it (numba: recorded, then replayed).
    buffers = None
    if debug is not None and (debug.uninitialized == "nan" or
                              debug.dma_execution_mode == "on_wait"):
        buffers = (debug.uninitialized == "nan", debug.dma_execution_mode == "on_wait")
    if buffers and not numerics:
        raise ValueError("simulate: numerics=False skips the arithmetic, but "
                         "DebugOptions(uninitialized='nan') and dma_execution_mode='on_wait' "
                         "check the numbers a schedule gives; turn those off or keep "
                         "numerics=True")
    if buffers:
        backend = "reference"
    elif backend is None:
        backend = kernel.options.get("backend")
    if backend not in RECORDERS:
        # not chosen, or one that cannot record (llvm, the twin): the default backend's
        # recording build (numba's, when the default cannot record) for big arrays, the
        # reference interpreter for small ones
        big = sum(getattr(v, "nbytes", 0) for v in rt) >= NUMBA_FROM_BYTES
        default = knobs.backend() if backend is None else "numba"
        backend = (default if default in RECORDERS else "numba") if big else "reference"
    # Regions so the L2 sees re-reads; the spec so a separated part splits AIC / AIV work.
    return lower(c.ir, g, rt, name=kernel.name, spec=spec, backend=backend, buffers=buffers,
                 numerics=numerics), spec


def lower(fn, grid, args, name: str | None = None, gm_regions: bool = True, spec=None,
          backend: str = "reference", buffers: tuple | None = None, numerics: bool = True):
    """Run the scheduled ``fn`` over ``grid`` on ``backend`` with the simulator's stream
    recorder as its hook and return the recorded ``npujit.sim.Launch`` (outputs land in
    ``args``, the backend calling convention).  ``gm_regions`` tags GM copies with the
    region they touch (for the spec's L2); a separated ``spec`` splits mixed Cube + Vector
    programs into AIC + AIV pairs; ``buffers=(poison, on_wait)`` keeps tiles in their
    scheduled buffers (reference backend); ``numerics=False`` runs only the ops that
    decide the streams (see :func:`simulate_kernel`).

    Example::

        >>> launch = lower(fn, (2,), [x, out, 256])   # doctest: +SKIP
        >>> len(launch.programs)                      # doctest: +SKIP
        2
    """
    if backend not in RECORDERS:
        raise ValueError(f"lower: backend must be 'reference' or 'numba', got {backend!r}")
    recorder = StreamRecorder(fn, gm_regions=gm_regions, spec=spec)
    with no_cyclic_gc():     # the recording makes many small tuples and no cycles
        get_backend(backend).run_recorded(fn, grid, args, recorder, buffers=buffers,
                                          numerics=numerics)
        return recorder.launch(name)
