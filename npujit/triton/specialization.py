"""What ``triton.jit(repr=fn)`` hands ``fn``: a launch's specialisation in Triton's terms,
so a Triton naming function names npujit's compiled kernels the same way.

``signature`` maps each parameter to Triton's type string: ``'i32'``, ``'i64'`` or
``'u64'`` for an int (by its range, as the specialisation key types it), ``'fp32'`` for a
float, ``'i1'`` for a bool, ``'*fp16'`` for an array (``'*kfp16'`` when the parameter is
``tl.const``), ``'constexpr'`` for a constexpr, a ``None`` and an int equal to 1.
``constants`` maps the constexprs and the ints equal to 1 to their values, as Triton
reports them (Triton compiles an int equal to 1 as a constant; npujit compiles it as an
ordinary scalar, so such launches share their compiled code under their own names).

Example::

    >>> def name(spec):                                              # doctest: +SKIP
    ...     return f"add_{spec.signature['x_ptr'][1:]}_{spec.constants['BLOCK']}"
    >>> add = triton.jit(repr=name)(add_fn)                          # doctest: +SKIP
    >>> add.warmup(x, y, out, n, BLOCK=256, grid=(4,)).name          # doctest: +SKIP
    'add_fp32_256'
"""
from __future__ import annotations

from dataclasses import dataclass, field

from npujit.ir import types as T

# npujit's dtype name prefixes -> Triton's (the bit width follows): f32 -> fp32, ui8 -> u8
_PREFIXES = (("bf", "bf"), ("f8", "fp8"), ("f", "fp"), ("ui", "u"), ("i", "i"))
# Triton's names of the fp8 formats (npujit names them by MLIR's spelling)
_FP8 = {"f8E4M3FN": "fp8e4nv", "f8E5M2": "fp8e5"}


def type_string(dtype_name: str) -> str:
    """Triton's type string of an npujit dtype name: ``'f32'`` -> ``'fp32'``,
    ``'ui64'`` -> ``'u64'``, ``'bf16'`` -> ``'bf16'``.

    Example::

        >>> type_string("f16"), type_string("ui8"), type_string("i1")
        ('fp16', 'u8', 'i1')
    """
    if dtype_name in _FP8:
        return _FP8[dtype_name]
    for ours, theirs in _PREFIXES:
        if dtype_name.startswith(ours):
            return theirs + dtype_name[len(ours):]
    return dtype_name


@dataclass(frozen=True)
class Specialization:
    """One launch's specialisation as Triton's ``repr`` function reads it."""

    fn: object                                   # the kernel's Python function
    signature: dict = field(default_factory=dict)    # parameter -> Triton type string
    constants: dict = field(default_factory=dict)    # parameter -> value

    @classmethod
    def of(cls, kernel, sigs: tuple, bound: dict) -> "Specialization":
        """The specialisation of a launch of ``kernel`` whose key parts are ``sigs`` (one
        per parameter, ``KernelSignature.specialize``) and arguments ``bound``."""
        signature, constants = {}, {}
        for p, s in zip(kernel.params, sigs):
            value = bound[p]
            if s is None or s[0] == "C":
                signature[p] = "constexpr"
                constants[p] = s[1] if s is not None else None
            elif s[0] == "A":
                signature[p] = ("*k" if p in kernel.const_params else "*") + type_string(s[1])
            elif s[1] != T.bool_.name and type(value) is int and value == 1:
                signature[p] = "constexpr"      # Triton's specialisation of ints equal to 1
                constants[p] = 1
            else:
                signature[p] = type_string(s[1])
        return cls(kernel.fn, signature, constants)
