"""The warm launch path: a binder generated per kernel signature, and a launch function
generated per specialisation, so a cached launch costs a few microseconds of Python.

The binder is a generated function with the kernel's own parameter list, so Python binds
positional and keyword arguments; it returns a cheap key (per array its dtype, rank and
flag bits: contiguity, alignment, writeability; per scalar its type -- an int as ``int``
when it fits in 32 bits, ``WIDE_INT`` when it needs 64, as the specialisation key types it
i32 or i64 --; the constexpr values) and the values in parameter order.  Anything unusual
(a torch tensor, a bad argument, a first launch) takes the slow path in ``kernel.py``,
which validates with clear messages and fills the fast table.

A key seen before maps to a launch function generated for that specialisation
(``make_fast_launch``): it unpacks the values, turns each runtime argument into what the
backend takes -- decided once from the key, so a 1-D contiguous array is passed as it is
and an int that fits is not converted again -- and calls the backend's ``run`` (numba's
``Launcher``: the compiled entry).  Everything the slow path checks that a key does not
fix is checked again at each launch: the grid (a tuple seen before is looked up), the
globals the kernel read, the strides of a strided array.
What the key fixes (dtype, rank, C-contiguity, alignment, writeability of each array;
the Python type and width of each scalar; the constexpr values) cannot differ: another
key is another dict entry, and a key never seen goes through the slow path.

Example::

    >>> bind = make_binder(["x_ptr", "n", "BLOCK"], {"BLOCK"}, {})
    >>> key, vals = bind(np.zeros(4, np.float32), 4, BLOCK=4)
"""
from __future__ import annotations

import numpy as np

from .binder import flat_view

SLOW = object()   # a key part that never matches: forces the slow path
WIDE_INT = object()   # the key part of an int outside int32 (an i64 argument)
_NODEFAULT = object()
_ndarray = np.ndarray


def array_key(a):
    """Key part of one runtime argument (numpy arrays and plain scalars only).  An
    array's is its dtype, rank and numpy's flag bits (``flags.num``: C-contiguity,
    alignment, writeability among them), so misaligned and read-only arrays get keys of
    their own (the slow path checks them); the binder inlines it for arrays."""
    t = type(a)
    if t is _ndarray:
        return (a.dtype, a.ndim, a.flags.num)
    if t is int:
        if -2147483648 <= a <= 2147483647:
            return t
        # beyond 64 bits: the slow path's error names the argument
        return WIDE_INT if -9223372036854775808 <= a <= 9223372036854775807 else SLOW
    if t is float or t is bool or a is None:
        return t
    return SLOW


def make_binder(params, constexpr_params, defaults):
    """A function ``bind(*args, **kwargs) -> (key, values)`` for this parameter list."""
    sig, parts = [], []
    env = {"_k": array_key, "_NODEF": _NODEFAULT, "_nd": _ndarray}
    for i, p in enumerate(params):
        if p in defaults:
            env[f"_d{i}"] = defaults[p]
            sig.append(f"{p}=_d{i}")
        else:
            sig.append(p)
        parts.append(p if p in constexpr_params else     # array_key, inlined for arrays
                     f"({p}.dtype, {p}.ndim, {p}.flags.num) if type({p}) is _nd else _k({p})")
    src = (f"def bind({', '.join(sig)}):\n"
           f"    return {_tuple(parts)}, {_tuple(params)}\n")
    exec(compile(src, "<npujit binder>", "exec"), env)
    return env["bind"]


def make_fast_launch(params, key, sigs, runtime_index, env: dict):
    """The warm launch ``fast(grid, vals)`` of one specialisation, for argument ``key``
    (``make_binder``'s) and its compiled signatures ``sigs``.

    ``env`` supplies the names the generated code calls: ``_grids`` (checked grid tuples),
    ``_grid(grid, vals)`` (check a new grid and remember it), ``_touch(cache_key)`` (mark
    the specialisation recently used), ``_check_globals()`` (or None: the kernel reads no
    global), ``_launch(grid3, args)`` (the backend's ``run``) and ``_compiled`` (the
    ``CompiledKernel``, what a launch returns).
    """
    names = [f"a{i}" for i in range(len(params))]
    args = []
    for i in runtime_index:
        s, v = sigs[i], names[i]
        if s[0] == "A":
            contiguous, rank = s[3] is True, key[i][1]     # "F": a view (flat_view)
            args.append(v if contiguous and rank == 1 else
                        f"{v}.reshape(-1)" if contiguous else f"_flat({v}, {params[i]!r})")
        else:
            args.append(v)     # the key fixed its Python type and width (int, float, bool)
    lines = ["def fast(grid, vals):"]
    if names:
        lines.append(f"    {', '.join(names)}, = vals")
    lines += ["    try:",
              "        _touch(_cache_key)",
              "    except KeyError:     # evicted by another thread just now",
              "        pass"]
    if env.get("_check_globals") is not None:
        lines.append("    _check_globals()")
    lines += ["    g = _grids.get(grid) if type(grid) is tuple else None",
              "    if g is None:",
              "        g = _grid(grid, vals)",
              "    if 0 in g:",
              "        return _compiled     # a grid with no programs launches nothing",
              f"    _launch(g, [{', '.join(args)}])",
              "    return _compiled"]
    scope = {**env, "_flat": flat_view}
    exec(compile("\n".join(lines) + "\n", "<npujit fast launch>", "exec"), scope)
    return scope["fast"]


def _tuple(items) -> str:
    """Python source of a tuple of ``items`` (``()`` for none: a kernel with no parameters)."""
    return f"({', '.join(items)},)" if items else "()"
