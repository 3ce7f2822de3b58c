"""The reference interpreter's walker: runs an IR ``Function`` once per program of a grid.

``Plan`` prepares a function once per compile: every SSA value gets a slot number and
every op its semantics function from ``SEMANTICS``, so running a program is a loop over
precomputed steps.  ``Program`` is one program of a launch: its id, and its values (a
list indexed by slot; scalars are 0-d numpy arrays so dtypes stay exact).  Values are
immutable: no semantics function writes into an operand, which is why results may share
memory with operands (views) and why loop-carried values need no copies.

Every result is checked against the type the IR declares for it, so a semantics bug (a
dtype drifting to f64, a shape off by one) fails loudly at the op that caused it.

Example::

    >>> import numpy as np
    >>> from npujit.ir import Builder, Function, Kind, types as T
    >>> fn = Function("double", [T.PtrType(T.int32)], ["x"])
    >>> b = Builder(fn.body)
    >>> offs = b.op(Kind.ARANGE, [], {"start": 0, "end": 3})
    >>> x = b.op(Kind.LOAD, [fn.args[0], offs])
    >>> b.create(Kind.STORE, [fn.args[0], offs, b.op(Kind.ADD, [x, x])])  # doctest: +ELLIPSIS
    <Op npu.store ...>
    >>> b.create(Kind.RETURN, [])  # doctest: +ELLIPSIS
    <Op func.return ...>
    >>> mem = np.array([1, 2, 3], np.int32)
    >>> interpret(fn, (1, 1, 1), [mem])
    >>> mem
    array([2, 4, 6], dtype=int32)
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from npujit.ir.core import Block, Function, Op, Value
from npujit.ir.ops import CONTROL, OWN_REGION, Kind
from npujit.ir.passes.index_checks import overflow_template, scalar_address_ops
from npujit.ir.types import TensorType
from npujit.errors import DeviceAssertionError, IndexOverflowError

from .memory import OutOfBoundsError
from .table import SEMANTICS


class ResultTypeError(TypeError):
    """A semantics function returned a value whose dtype or shape is not the one the IR
    declares: a bug in the reference (or IR whose declared types are wrong)."""


@dataclass(frozen=True)
class Step:
    """One op, ready to run: its semantics, operand slots, result slots and the numpy
    dtype/shape each result must have."""

    fn: object
    op: Op
    operands: tuple
    results: tuple
    expect: tuple
    terminator: bool


@dataclass(frozen=True)
class BlockPlan:
    """A block's argument slots and its steps in order."""

    args: tuple
    steps: tuple


class Plan:
    """A ``Function`` prepared for interpretation (done once per compile).

    Raises ``NotImplementedError`` for an op kind without reference semantics and
    ``ValueError`` for an operand used before it is defined.

    ``needed`` (the ids of ``ir.slice.stream_slice(fn)``) runs a timing-only program: an
    op outside it is not executed (its results are None; a hook still sees it), loops
    always run.

    Example::

        >>> plan = Plan(fn)          # doctest: +SKIP
        >>> plan.run((4, 1, 1), [x, y, out, 4096])       # doctest: +SKIP
    """

    def __init__(self, fn: Function, semantics=SEMANTICS, needed: set | None = None):
        self.fn = fn
        self.semantics = semantics
        self.needed = needed
        self.slots: dict[int, int] = {}          # id(Value) -> slot
        self.blocks: dict[Block, BlockPlan] = {}
        # scalar int32 address arithmetic, checked for wrapping (ir/passes/index_checks.py)
        self._wraps = {id(op) for op in scalar_address_ops(fn)}
        self._plan_block(fn.body)

    @property
    def num_slots(self) -> int:
        return len(self.slots)

    def _define(self, v: Value) -> int:
        slot = self.slots[id(v)] = len(self.slots)
        return slot

    def _use(self, v: Value, op: Op) -> int:
        slot = self.slots.get(id(v))
        if slot is None:
            raise ValueError(f"kernel '{self.fn.name}': an operand of {op.kind.value} at "
                             f"{op.loc} is used before it is defined")
        return slot

    def _plan_block(self, block: Block) -> None:
        args = tuple(self._define(a) for a in block.args)
        steps = []
        for op in block.ops:
            fn = self.semantics.get(op.kind)
            if fn is None:
                raise NotImplementedError(f"the reference backend has no semantics for "
                                          f"{op.kind.value} (at {op.loc})")
            operands = tuple(self._use(v, op) for v in op.operands)
            for region in op.regions:            # a region sees values defined before op
                self._plan_block(region)
            results = tuple(self._define(r) for r in op.results)
            expect = tuple((r.type.dtype.np, r.type.shape) if isinstance(r.type, TensorType)
                           else None for r in op.results)
            if self.needed is not None and not op.info.terminator and not _fused(op):
                if op.kind in CONTROL:       # region values outside the slice stay None
                    expect = (None,) * len(op.results)
                elif id(op) not in self.needed:
                    fn = _skipped
            if id(op) in self._wraps and fn is not _skipped:
                fn = _wrap_checked(fn)
            steps.append(Step(fn, op, operands, results, expect, op.info.terminator))
        self.blocks[block] = BlockPlan(args, tuple(steps))

    def run(self, grid: tuple, args: list, hook=None) -> None:
        """Run every program of ``grid`` (x fastest, then y, then z) on bound ``args``:
        pointer arguments as 1-D arrays, scalars as 0-d arrays of their dtype.

        ``hook`` (optional; used by ``npujit.sim.lower`` to record what each program
        really executed) is an object with ``begin(program)``, ``before(program, op,
        operands)``, ``after(program, op, operands, results)`` and ``end(program)``;
        ``after`` is not called for terminators.  Without a hook nothing extra runs.
        """
        gx, gy, gz = grid
        # Integer wraparound and IEEE inf/NaN are the defined semantics, not accidents.
        with np.errstate(all="ignore"):
            for z in range(gz):
                for y in range(gy):
                    for x in range(gx):
                        program = Program(self, grid, (x, y, z))
                        if hook is None:
                            program.run_block(self.fn.body, args)
                            continue
                        program.hook = hook
                        hook.begin(program)
                        program.run_block(self.fn.body, args)
                        hook.end(program)


class Program:
    """One program of a launch; semantics functions see it as ``ctx``.

    ``kernel`` (name), ``grid`` and ``pid`` are for ids and error messages;
    ``run_block`` runs a region's block and returns what its terminator gives.
    """

    __slots__ = ("plan", "kernel", "grid", "pid", "env", "hook")

    def __init__(self, plan: Plan, grid: tuple, pid: tuple):
        self.plan = plan
        self.kernel = plan.fn.name
        self.grid = grid
        self.pid = pid
        self.env = [None] * plan.num_slots
        self.hook = None

    def run_block(self, block: Block, args) -> tuple:
        """Bind ``args`` to the block's arguments and run its ops; returns the values the
        terminator gives (``()`` if the block has none).

        Example::

            >>> carried = ctx.run_block(for_op.body, (iv, acc))   # doctest: +SKIP
        """
        bp = self.plan.blocks[block]
        env = self.env
        for slot, value in zip(bp.args, args, strict=True):
            env[slot] = value
        if self.hook is not None:
            return self._run_hooked(bp)
        step = None
        try:
            for step in bp.steps:
                out = step.fn(self, step.op, *[env[i] for i in step.operands])
                if step.terminator:
                    return out
                _store_results(env, step, out)
        except Exception as e:
            _annotate(e, self, step)
            raise
        return ()

    def _run_hooked(self, bp: BlockPlan) -> tuple:
        """``run_block``'s loop with the recording hook called around every op."""
        env, hook = self.env, self.hook
        step = None
        try:
            for step in bp.steps:
                operands = [env[i] for i in step.operands]
                hook.before(self, step.op, operands)
                out = step.fn(self, step.op, *operands)
                if step.terminator:
                    return out
                _store_results(env, step, out)
                hook.after(self, step.op, operands, [env[i] for i in step.results])
        except Exception as e:
            _annotate(e, self, step)
            raise
        return ()


_EXACT = {Kind.ADD: lambda a, b: a + b, Kind.SUB: lambda a, b: a - b,
          Kind.MUL: lambda a, b: a * b}


def _wrap_checked(fn):
    """``fn`` (a scalar int32 add/sub/mul feeding an address), raising
    ``IndexOverflowError`` when its result wrapped around."""
    def checked(ctx, op, a, b):
        out = fn(ctx, op, a, b)
        exact = _EXACT[op.kind](int(a), int(b))
        if exact != int(out):
            raise IndexOverflowError(
                f"kernel '{ctx.kernel}', index arithmetic at {op.loc}, program {ctx.pid}: "
                + overflow_template(op) % (int(a), int(b), exact, int(out)))
        return out
    return checked


def _checked(value, step: Step, i: int) -> np.ndarray:
    """``value`` as an array (numpy scalars become 0-d), verified against the IR type."""
    if step.expect[i] is None:
        return value
    arr = np.asarray(value)
    dtype, shape = step.expect[i]
    if arr.dtype != dtype or arr.shape != shape:
        raise ResultTypeError(f"reference semantics of {step.op.kind.value} at {step.op.loc} "
                              f"gave {arr.dtype}{list(arr.shape)} for result #{i}, but the "
                              f"IR says {step.op.results[i].type}")
    return arr


def _annotate(e: Exception, program: Program, step: Step | None) -> None:
    """Say where a failure happened, once (the innermost op), unless it already does."""
    if (step is None or isinstance(e, (OutOfBoundsError, DeviceAssertionError))
            or getattr(e, "_npujit_where", False)):
        return
    e._npujit_where = True
    e.add_note(f"while running {step.op.kind.value} at {step.op.loc} in kernel "
               f"'{program.kernel}', program {program.pid}")


def interpret(fn: Function, grid: tuple, args: list) -> None:
    """Run ``fn`` over ``grid`` with arguments already in the interpreter's form
    (pointer: 1-D array of the pointee dtype; scalar: 0-d array).  Use
    ``ReferenceBackend().compile(fn, {})`` for the full calling convention.

    See the module docstring for an example.
    """
    Plan(fn).run(tuple(grid), list(args))


def _fused(op: Op) -> bool:
    """Is ``op`` inside an ``npu.fused`` or combine region (it runs when that op runs)?"""
    parent = op.parent.parent_op if op.parent is not None else None
    return parent is not None and parent.kind in OWN_REGION


def _skipped(ctx, op, *operands):
    """An op a timing-only run does not execute."""
    return _SKIPPED


_SKIPPED = object()


def _store_results(env: list, step, out) -> None:
    """Put an op's result(s) into their slots, checked against the IR's types (not
    checked where the type is not a tile: a timing-only loop's unexecuted values)."""
    if out is _SKIPPED:
        for slot in step.results:
            env[slot] = None
        return
    if len(step.results) == 1:
        value = out[0] if isinstance(out, tuple) else out
        env[step.results[0]] = _checked(value, step, 0)
    elif step.results:
        for i, (slot, value) in enumerate(zip(step.results, out, strict=True)):
            env[slot] = _checked(value, step, i)
