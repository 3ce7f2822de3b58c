"""A kernel's parameter list: binding launch arguments, the specialisation key, the grid.

``KernelSignature`` is the binder the kernel and its compiled specialisations share (the
slow, validating path; ``fastpath.py`` has the generated warm-path binder).  It is plain
data, so a ``CompiledKernel`` that holds one pickles.

Example::

    >>> sig = KernelSignature("add", ["x_ptr", "n", "BLOCK"], {"BLOCK"}, {})
    >>> bound = sig.bind((np.zeros(8, np.float32), 8), {"BLOCK": 8})
    >>> sig.specialize(bound)[1]
    {'BLOCK': 8}
    >>> sig.grid(lambda meta: (meta["n"] // meta["BLOCK"],), bound)
    (1, 1, 1)
"""
from __future__ import annotations

from npujit.errors import LaunchError

from .binder import arg_signature, normalize_grid, runtime_value


class KernelSignature:
    """Parameter names, which are constexprs, and their defaults."""

    def __init__(self, name: str, params: list, constexpr_params: set, defaults: dict):
        self.name = name
        self.params = list(params)
        self.constexpr_params = set(constexpr_params)
        self.defaults = dict(defaults)

    def bind(self, args, kwargs) -> dict:
        """``{parameter: value}`` for a call, defaults filled in; LaunchError naming the
        argument for too many, unknown, repeated or missing ones."""
        n = len(self.params)
        if len(args) > n:
            raise LaunchError(f"kernel '{self.name}' takes {n} arguments "
                              f"({', '.join(self.params)}) but {len(args)} were given")
        bound = dict(zip(self.params, args))
        for k, v in kwargs.items():
            if k not in self.params:
                raise LaunchError(f"kernel '{self.name}' got an unknown keyword argument "
                                  f"'{k}'; its parameters are {', '.join(self.params)}")
            if k in bound:
                raise LaunchError(f"kernel '{self.name}' got argument '{k}' twice")
            bound[k] = v
        for p in self.params:
            if p not in bound:
                if p in self.defaults:
                    bound[p] = self.defaults[p]
                else:
                    kind = "constexpr " if p in self.constexpr_params else ""
                    raise LaunchError(f"kernel '{self.name}' is missing the {kind}argument "
                                      f"'{p}'")
        return bound

    def specialize(self, bound: dict) -> tuple:
        """``(sigs, constexprs)``: per parameter its key part (validated), and the
        constexpr values."""
        from npujit.language.core import constexpr   # (not at import: npujit/__init__.py)
        sigs, constexprs = [], {}
        for p in self.params:
            v = bound[p]
            if p in self.constexpr_params:
                if isinstance(v, constexpr):
                    v = v.value
                try:
                    hash(v)
                except TypeError:
                    raise LaunchError(f"constexpr argument '{p}' must be hashable (a number, "
                                      f"string, dtype or tuple), got {type(v).__name__}") from None
                constexprs[p] = v
                sigs.append(("C", v))
            else:
                sigs.append(arg_signature(p, v))
        return tuple(sigs), constexprs

    def runtime_index(self, sigs: tuple) -> list:
        """Positions of the parameters the compiled kernel receives (not constexpr, not
        None)."""
        return [i for i, (p, s) in enumerate(zip(self.params, sigs))
                if p not in self.constexpr_params and s is not None]

    def runtime_args(self, sigs: tuple, index: list, bound: dict) -> list:
        """What the backend receives, in order (``binder.runtime_value``)."""
        return [runtime_value(sigs[i], bound[self.params[i]], self.params[i]) for i in index]

    def grid(self, grid, bound: dict) -> tuple:
        """The launch grid as 3 positive ints; a callable grid gets ``{param: value}``.
        This is the one place a grid is validated (``binder.normalize_grid``)."""
        if callable(grid):
            grid = grid(dict(bound))
        return normalize_grid(grid, self.name)
