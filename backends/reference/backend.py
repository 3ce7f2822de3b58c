"""``ReferenceBackend``: the numpy interpreter behind the common backend interface.

``compile(fn, options)`` prepares the function once (``interpreter.Plan``) and returns a
``ReferenceKernel``; calling it as ``run(grid, args)`` checks and converts the arguments
per the calling convention of ``backends/base.py`` and runs every program.  The
reference always bounds-checks every memory access, whatever the options say.

Example::

    >>> import numpy as np
    >>> from npujit.ir import Builder, Function, Kind, types as T
    >>> fn = Function("fill", [T.PtrType(T.float32), T.scalar(T.float32)], ["out", "v"])
    >>> b = Builder(fn.body)
    >>> pid = b.op(Kind.PROGRAM_ID, [], {"axis": 0})
    >>> v = b.op(Kind.SPLAT, [fn.args[1]], {"shape": (1,)})
    >>> offs = b.op(Kind.SPLAT, [pid], {"shape": (1,)})
    >>> _ = b.create(Kind.STORE, [fn.args[0], offs, v])
    >>> _ = b.create(Kind.RETURN, [])
    >>> out = np.zeros(3, np.float32)
    >>> ReferenceBackend().compile(fn, {})((3, 1, 1), [out, 2.5])
    >>> out
    array([2.5, 2.5, 2.5], dtype=float32)
"""
from __future__ import annotations

import numbers

import numpy as np

from npujit.errors import LaunchError
from npujit.ir.core import Function
from npujit.ir.slice import INT32_REACH, narrow_offsets, narrow_offsets_message, stream_slice
from npujit.ir.types import PtrType, TensorType

from .interpreter import Plan
from .numerics import fits_int
from .scheduled import BufferedExecution


class ReferenceKernel:
    """A compiled kernel: ``kernel(grid, args)`` runs it (see ``backends/base.py``)."""

    def __init__(self, fn: Function, options: dict):
        self.fn = fn
        self.name = fn.name
        self.options = dict(options or {})
        self.plan = Plan(fn)
        self.narrow = narrow_offsets(fn)

    def __call__(self, grid, args) -> None:
        args = bind_args(self.fn, args)
        for i, loc in self.narrow.items():     # int32 offsets cannot reach past 2**31 - 1
            if args[i].shape[0] > INT32_REACH + 1:
                raise LaunchError(narrow_offsets_message(self.name, self.fn.args[i].name, loc,
                                                         str(args[i].shape[0])))
        self.plan.run(normalize_grid(grid), args)

    def __repr__(self) -> str:
        return f"<ReferenceKernel {self.name}>"


class ReferenceBackend:
    """The semantic oracle: slow, simple, every access checked.

    Example::

        >>> run = ReferenceBackend().compile(fn, {})    # doctest: +SKIP
        >>> run((4, 1, 1), [x, y, out, n])              # doctest: +SKIP
    """

    name = "reference"

    def compile(self, fn: Function, options: dict | None = None) -> ReferenceKernel:
        """Prepare ``fn`` once; the result runs any grid with any matching arguments."""
        return ReferenceKernel(fn, options or {})

    def run_recorded(self, fn: Function, grid, args, hook, buffers=None,
                     numerics: bool = True) -> None:
        """Interpret ``fn`` with ``hook`` (see ``backends/base.py``); ``buffers=(poison,
        on_wait)`` keeps tiles in their scheduled buffers (:func:`run_buffered`);
        ``numerics=False`` runs only the ops in ``stream_slice(fn)``."""
        if buffers is not None:
            if not numerics:
                raise ValueError("tiles in their buffers (poison / copies at wait) check "
                                 "numbers; they need numerics=True")
            run_buffered(fn, grid, args, *buffers, hook=hook)
        else:
            needed = None if numerics else stream_slice(fn).ops
            Plan(fn, needed=needed).run(normalize_grid(grid), bind_args(fn, args), hook=hook)


def run_buffered(fn: Function, grid, args, poison: bool = True, on_wait: bool = True,
                 hook=None) -> None:
    """Run the scheduled ``fn`` over ``grid`` on the reference interpreter with its tiles
    in their buffers (``scheduled.py``: NaN-poisoned arenas when ``poison``, copies landing
    at their wait when ``on_wait``); outputs are written into ``args`` as a normal launch
    does.  ``hook`` (e.g. the simulator's stream recorder) sees every op too.

    Example::

        >>> run_buffered(fn, (4,), [x, y, out, 4096])     # doctest: +SKIP
    """
    Plan(fn).run(normalize_grid(grid), bind_args(fn, args),
                 hook=BufferedExecution(fn, poison, on_wait, hook))


def normalize_grid(grid) -> tuple:
    """A grid as 3 positive ints; shorter tuples are padded with 1.

    Example::

        >>> normalize_grid((4,))
        (4, 1, 1)
    """
    dims = tuple(grid)
    if not 1 <= len(dims) <= 3:
        raise ValueError(f"a grid has 1 to 3 dimensions, got {grid!r}")
    dims = dims + (1,) * (3 - len(dims))
    for d in dims:
        if not isinstance(d, numbers.Integral) or isinstance(d, bool) or d < 1:
            raise ValueError(f"grid sizes must be positive ints, got {grid!r}")
    return tuple(int(d) for d in dims)


def bind_args(fn: Function, args) -> list:
    """Check ``args`` against ``fn``'s signature and convert them for the interpreter:
    pointer arguments stay 1-D arrays (written in place), scalars become 0-d arrays.

    Example::

        >>> from npujit.ir import types as T
        >>> f = Function("k", [T.scalar(T.int8)], ["n"])
        >>> bind_args(f, [7])
        [array(7, dtype=int8)]
    """
    args = list(args)
    if len(args) != len(fn.args):
        raise TypeError(f"kernel '{fn.name}' takes {len(fn.args)} arguments, got {len(args)}")
    return [_bind_one(fn, i, v, a) for i, (v, a) in enumerate(zip(fn.args, args))]


def _bind_one(fn: Function, i: int, param, arg):
    what = f"argument '{param.name or i}' of kernel '{fn.name}'"
    t = param.type
    if isinstance(t, PtrType):
        want = t.dtype.np
        if not isinstance(arg, np.ndarray) or arg.ndim != 1 or arg.dtype != want:
            got = (f"{arg.dtype}[{', '.join(map(str, arg.shape))}]"
                   if isinstance(arg, np.ndarray) else type(arg).__name__)
            raise TypeError(f"{what} must be a 1-D numpy array of {want}, got {got}")
        return arg
    if not isinstance(t, TensorType):
        raise TypeError(f"{what} has a type the reference cannot bind: {t}")
    if t.shape != ():
        arr = np.asarray(arg)
        if arr.dtype != t.dtype.np or arr.shape != t.shape:
            raise TypeError(f"{what} must be a {t} array, got {arr.dtype}{list(arr.shape)}")
        return arr
    return _bind_scalar(what, t.dtype, arg)


def _bind_scalar(what: str, dtype, arg) -> np.ndarray:
    value = arg.item() if isinstance(arg, np.ndarray) and arg.ndim == 0 else arg
    if isinstance(value, np.generic):
        value = value.item()
    if dtype.is_bool:
        if not isinstance(value, (bool, numbers.Integral)) or value not in (0, 1):
            raise TypeError(f"{what} must be a bool, got {arg!r}")
        return np.asarray(bool(value))
    if dtype.is_int:
        if not isinstance(value, numbers.Integral):
            raise TypeError(f"{what} must be an int ({dtype}), got {arg!r}")
        if not fits_int(int(value), dtype.np):
            raise OverflowError(f"{what} is {value}, which does not fit {dtype}")
        return np.asarray(int(value), dtype=dtype.np)
    if not isinstance(value, numbers.Real):
        raise TypeError(f"{what} must be a float ({dtype}), got {arg!r}")
    return np.asarray(float(value), dtype=dtype.np)
