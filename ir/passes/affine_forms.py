"""Affine forms of integer tiles: ``base + sum_d coef_d * i_d`` with symbolic scalars.

The ``affine-access`` pass (``affine_access.py``) asks, for the offsets of a pointer load or
store, whether element ``(i_0, .., i_r-1)`` is ``base + sum_d coef_d * i_d`` where ``base``
and every ``coef_d`` are scalars the program computes anyway (program ids, loop induction
variables, scalar arguments, constants, and sums and products of those).  A symbolic scalar
(``Sym``) is a polynomial over *atoms* -- scalar SSA values the analysis does not look into --
with integer coefficients, kept as a frozen tuple of ``(monomial, coefficient)`` pairs, a
monomial being the sorted tuple of its atoms' ids; two ``Sym``s are equal exactly when they
are the same polynomial.

What is understood: ``arange``, integer constants, ``splat``, ``broadcast``, ``reshape``
(adding or dropping unit axes), ``add``/``sub``/``mul`` (a product needs one lane-free side),
``neg``, widening int casts, and a loop-carried tile that the loop advances by a lane-free,
loop-invariant step ``D`` per iteration (``a_ptrs += BLOCK_K * stride_ak``): its value in
iteration ``(k - lb) / step`` is ``init + (k - lb) * D / step`` when the loop step is a
constant dividing every coefficient of ``D``.  Anything else is None.

Example::

    >>> forms = AffineForms()
    >>> f = forms.of(offsets)                     # doctest: +SKIP
    >>> f.coefs[1] == sym_const(1)                # unit stride along the columns  # doctest: +SKIP
    True
"""
from __future__ import annotations

from dataclasses import dataclass

from ..core import Op, Value
from ..ops import Kind
from ..types import TensorType

Sym = tuple        # ((monomial: tuple of atom ids, coefficient: int), ...), sorted, no zeros


def sym_const(c: int) -> Sym:
    """The constant ``c`` as a ``Sym``.

    Example::

        >>> sym_const(3), sym_const(0)
        ((((), 3),), ())
    """
    return (((), int(c)),) if c else ()


def _norm(terms: dict) -> Sym:
    return tuple(sorted((m, c) for m, c in terms.items() if c))


def sym_add(a: Sym, b: Sym, sign: int = 1) -> Sym:
    """``a + sign * b``."""
    terms = dict(a)
    for m, c in b:
        terms[m] = terms.get(m, 0) + sign * c
    return _norm(terms)


def sym_mul(a: Sym, b: Sym) -> Sym:
    """``a * b`` (monomials multiply by merging their atoms)."""
    terms: dict = {}
    for ma, ca in a:
        for mb, cb in b:
            m = tuple(sorted(ma + mb))
            terms[m] = terms.get(m, 0) + ca * cb
    return _norm(terms)


@dataclass(frozen=True)
class Form:
    """``base + sum_d coefs[d] * i_d`` over a tile of ``shape`` (``()`` for a scalar)."""

    base: Sym
    coefs: tuple

    @property
    def lane_free(self) -> bool:
        return not any(self.coefs)


def _shape(v: Value) -> tuple:
    t = v.type
    return tuple(t.shape) if isinstance(t, TensorType) else ()


def _is_int(v: Value) -> bool:
    t = v.type
    return isinstance(t, TensorType) and t.dtype.is_int and not t.dtype.is_bool


class AffineForms:
    """Memoised affine forms of the values of one function (see the module doc).
    ``atoms`` maps each atom's id to its value."""

    def __init__(self):
        self.atoms: dict[int, Value] = {}
        self._memo: dict[int, Form | None] = {}

    def atom(self, v: Value) -> Form:
        self.atoms[id(v)] = v
        return Form((((id(v),), 1),), ())

    def of(self, v: Value) -> Form | None:
        """The affine form of the integer value ``v``, or None."""
        key = id(v)
        if key not in self._memo:
            self._memo[key] = None          # a cycle (a carried value) is not affine
            f = self._compute(v) if _is_int(v) else None
            if f is None and _is_int(v) and _shape(v) == ():
                f = self.atom(v)                # a scalar not looked into
            self._memo[key] = f
        return self._memo[key]

    def _compute(self, v: Value) -> Form | None:
        op = v.op
        shape = _shape(v)
        if op is None:
            owner = v.owner.parent_op
            if owner is not None and owner.kind is Kind.FOR and v.index > 0:
                return self._carried(owner, v)
            return None
        k = op.kind
        zeros = ((),) * len(shape)
        if k is Kind.CONSTANT:
            return Form(sym_const(op.attrs["value"]), ()) if shape == () else None
        if k is Kind.ARANGE:
            return Form(sym_const(op.attrs["start"]), (sym_const(1),))
        if k is Kind.SPLAT:
            x = self.of(op.operands[0])
            return Form(x.base, zeros) if x is not None and x.lane_free else None
        if k is Kind.BROADCAST:
            return self._broadcast(op.operands[0], shape)
        if k is Kind.RESHAPE:
            return self._reshape(op.operands[0], shape)
        if k is Kind.CAST:
            src = op.operands[0].type.dtype
            ok = src.is_int and not src.is_bool and src.bits <= v.type.dtype.bits
            return self.of(op.operands[0]) if ok else None
        if k in (Kind.ADD, Kind.SUB, Kind.MUL) and len(op.operands) == 2:
            a, b = self.of(op.operands[0]), self.of(op.operands[1])
            if a is None or b is None or len(a.coefs) != len(b.coefs):
                return None
            if k is Kind.MUL:
                if not b.lane_free:
                    a, b = b, a
                if not b.lane_free:
                    return None
                return Form(sym_mul(a.base, b.base), tuple(sym_mul(c, b.base) for c in a.coefs))
            sign = 1 if k is Kind.ADD else -1
            return Form(sym_add(a.base, b.base, sign),
                        tuple(sym_add(x, y, sign) for x, y in zip(a.coefs, b.coefs)))
        if k is Kind.NEG:
            a = self.of(op.operands[0])
            if a is None:
                return None
            m = sym_const(-1)
            return Form(sym_mul(a.base, m), tuple(sym_mul(c, m) for c in a.coefs))
        return None

    def _broadcast(self, x: Value, shape: tuple) -> Form | None:
        f = self.of(x)
        if f is None:
            return None
        xs = _shape(x)
        lead = len(shape) - len(xs)
        coefs = []
        for d, n in enumerate(shape):
            xd = d - lead
            coefs.append(f.coefs[xd] if xd >= 0 and xs[xd] == n else ())
        return Form(f.base, tuple(coefs))

    def _reshape(self, x: Value, shape: tuple) -> Form | None:
        f = self.of(x)
        xs = _shape(x)
        if f is None or [n for n in xs if n != 1] != [n for n in shape if n != 1]:
            return None
        moving = iter(c for c, n in zip(f.coefs, xs) if n != 1)
        return Form(f.base, tuple(next(moving) if n != 1 else () for n in shape))

    def _carried(self, loop: Op, arg: Value) -> Form | None:
        """A loop-carried tile advanced by a loop-invariant lane-free step per iteration."""
        j = arg.index - 1
        init = self.of(loop.operands[3 + j])
        nxt = loop.body.terminator.operands[j]
        step_op = nxt.op
        if init is None or step_op is None or step_op.kind is not Kind.ADD:
            return None
        a, b = step_op.operands
        delta = b if a is arg else a if b is arg else None
        step = self.of(loop.operands[2])
        lb = self.of(loop.operands[0])
        if delta is None or step is None or lb is None:
            return None
        d = self.of(delta)
        if d is None or not d.lane_free or not self.invariant(d.base, loop):
            return None
        if len(step.base) != 1 or step.base[0][0] != () or step.base[0][1] <= 0:
            return None                      # a positive constant step only
        c = step.base[0][1]
        if any(coef % c for _, coef in d.base):
            return None
        per = tuple((m, coef // c) for m, coef in d.base)   # D / step
        k = self.atom(loop.body.args[0]).base
        moved = sym_mul(sym_add(k, lb.base, -1), per)
        return Form(sym_add(init.base, moved), init.coefs)

    def invariant(self, s: Sym, loop: Op) -> bool:
        """Whether every atom of ``s`` is defined outside ``loop``."""
        inside = {id(a) for op in loop.walk() for r in op.regions for a in r.args}
        inside |= {id(r) for op in loop.walk() for r in op.results}
        return all(a not in inside for m, _ in s for a in m)

    def nonnegative(self, s: Sym) -> bool:
        """Provably ``s >= 0``: non-negative coefficients over atoms that are program ids,
        grid sizes, or induction variables of loops from a non-negative start by a positive
        constant step."""
        return all(c >= 0 and all(self._atom_nonnegative(self.atoms[a]) for a in m)
                   for m, c in s)

    def _atom_nonnegative(self, v: Value) -> bool:
        op = v.op
        if op is not None:
            return op.kind in (Kind.PROGRAM_ID, Kind.NUM_PROGRAMS)
        loop = v.owner.parent_op
        if loop is None or loop.kind is not Kind.FOR or v.index != 0:
            return False
        lb, step = self.of(loop.operands[0]), self.of(loop.operands[2])
        return (lb is not None and step is not None and self.nonnegative(lb.base)
                and len(step.base) == 1 and step.base[0][0] == () and step.base[0][1] > 0)
