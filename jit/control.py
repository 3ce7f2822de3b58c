"""Tracing data-dependent control flow: ``if``/``elif``/``else``, ``while``, early ``return``,
``and``/``or``/``not`` and ``a if c else b`` on run-time scalars.

The rewritten kernel (see ``ast_rewrite``) calls these with the branch bodies as functions.
A condition that is a Python value (a constexpr, a number) runs the Python way, at trace
time, exactly as plain Python would.  A traced scalar becomes an ``scf.if`` whose regions
each yield the variables the branches assign (``scf.while`` for a loop): values defined in
both branches, or before the ``if`` and reassigned in one branch, flow out of it.

Example::

    if pid * BLOCK >= n:                     # a run-time scalar: scf.if
        return                               # the rest of the kernel is the else region
    scale = 2.0 if flag else 1.0             # scf.if yielding one f32
"""
from __future__ import annotations

import builtins
import numbers

from npujit.ir import Block, Kind
from npujit.ir import types as T
from npujit.language import math as nl_math
from npujit.language import semantic as sem
from npujit.language.core import block_ptr, constexpr, pointer, tensor
from npujit.language.tracing import current

from .loops import _MISSING, Undefined, carried_results, trace_carried


def is_traced(c) -> bool:
    """Whether ``c`` is a run-time value (so a condition on it becomes IR)."""
    return isinstance(c, tensor)


def _value(x):
    return x.value if isinstance(x, constexpr) else x


def condition(c, what: str) -> tensor:
    """``c`` as an i1 scalar: ints and floats are true when not 0 (Python's rule); a tile
    of one element is that element (Triton's unsplat)."""
    if c.numel == 1 and c.shape != ():
        c = sem.reshape(c, ())
    if c.shape != ():
        raise sem.error(f"the condition of {what} must be a scalar, got a tile {c.type}; "
                        "reduce it first (nl.max, nl.sum, ...) or choose elementwise with "
                        "nl.where(cond, a, b)")
    return c if c.dtype == T.bool_ else sem.compare("ne", c, 0)


def _carried(names, inits, why: str) -> tuple:
    return tuple(Undefined(n, why) if v is _MISSING else v for n, v in zip(names, inits))


def check_python_cond(c, reason: str):
    """The condition of an ``if``/``while`` the rewrite kept as plain Python (its body has
    ``break``/``continue``, or a ``return`` that not every path reaches): it must be a
    Python value."""
    if is_traced(c):
        what = {"break": "`break`", "continue": "`continue`", "return": "a `return` inside a loop",
                "else": "a `while ... else` clause", "yield": "`yield`"}[reason]
        raise sem.error(f"a condition on a run-time value cannot guard {what}: the IR has no "
                        "jumps out of a loop. Carry a flag in the loop instead (e.g. "
                        "`while i < n and not done:`), or make the condition a constexpr")
    return c


# --- merging what the two branches give --------------------------------------------------

class _Leaf:
    """One yielded scalar/tile: how the then and the else region make it, and its type."""

    def __init__(self, a, b, name: str):
        self.a, self.b, self.name = a, b, name
        ta, tb = _leaf_type(a), _leaf_type(b)
        if isinstance(a, tensor) and isinstance(b, tensor):
            if a.type != b.type:
                raise _Mismatch(name, a, b, "cast one side with .to(...) or create both with "
                                            "the same dtype and shape")
            self.type = a.type
        elif isinstance(a, tensor) or isinstance(b, tensor):
            t, num = (ta, b) if ta is not None else (tb, a)
            d = T.promote(t.dtype, sem.literal_dtype(num, t.dtype))   # 0.5 next to an i32: f32
            self.type = T.tensor(t.shape, d)
        else:
            da, db = sem.literal_dtype(a), sem.literal_dtype(b)
            self.type = T.tensor((), da if da == db else T.promote(da, db))

    def make(self, side: int) -> tensor:
        v = self.a if side == 0 else self.b
        d = self.type.dtype
        if isinstance(v, tensor):
            return v if v.dtype == d else sem.cast(v, d)
        return sem.broadcast_to(sem.cast(sem.to_tensor(v, d), d), self.type.shape)


def _leaf_type(v):
    return v.type if isinstance(v, tensor) else None


def _same(a, b) -> bool:
    if a is b:
        return True
    if isinstance(a, numbers.Number) and isinstance(b, numbers.Number):
        return type(a) is type(b) and (a == b or (a != a and b != b))
    if isinstance(a, (str, type(None), T.DType)) or isinstance(b, (str, type(None))):
        return type(a) is type(b) and a == b
    return False


def _merge(a, b, name: str, leaves: list):
    """A rebuild function for the value after the if, appending the leaves both branches
    must yield to ``leaves``."""
    a, b = _value(a), _value(b)
    if isinstance(a, Undefined) or isinstance(b, Undefined):
        if isinstance(a, Undefined) and isinstance(b, Undefined):
            return lambda it: a
        return lambda it: Undefined(name, "is assigned in only one branch of an if on a "
                                          "run-time condition, so it has no value after it; "
                                          "assign it in both branches or before the if")
    if _same(a, b):
        return lambda it: a
    if isinstance(a, (tensor, numbers.Number)) and isinstance(b, (tensor, numbers.Number)):
        leaves.append(_Leaf(a, b, name))
        return lambda it: next(it)
    if isinstance(a, pointer) and isinstance(b, pointer) and a.base is b.base:
        if a.offset is None and b.offset is None:
            return lambda it: a
        off = _merge(0 if a.offset is None else a.offset, 0 if b.offset is None else b.offset,
                     name, leaves)
        return lambda it: pointer(a.base, off(it))
    if isinstance(a, block_ptr) and isinstance(b, block_ptr) and a.base is b.base \
            and a.block_shape == b.block_shape and a.order == b.order \
            and _same(a.shift, b.shift) \
            and all(_same(x, y) for x, y in zip(list(a.shape) + list(a.strides),
                                                 list(b.shape) + list(b.strides))):
        offs = [_merge(x, y, name, leaves) for x, y in zip(a.offsets, b.offsets)]
        return lambda it: block_ptr(a.base, a.shape, a.strides, [f(it) for f in offs],
                                    a.block_shape, a.order, a.shift)
    if isinstance(a, (tuple, list)) and type(a) is type(b) and len(a) == len(b):
        items = [_merge(x, y, name, leaves) for x, y in zip(a, b)]
        return lambda it: type(a)(f(it) for f in items)
    if isinstance(a, pointer) and isinstance(b, pointer):
        raise _Mismatch(name, a, b, "pointers into different arrays cannot become one value "
                                    "(only offsets into one array can differ); load or store "
                                    "in each branch, or make the condition a constexpr")
    raise _Mismatch(name, a, b, "only tensors, numbers, pointers into one array and tuples "
                                "of them can differ between the branches")


class _Mismatch(Exception):
    """What ``_merge`` raises when the two branches give ``name`` values that cannot become
    one; ``_trace_if`` words it for the construct (if, conditional expression, return)."""

    def __init__(self, name: str, a, b, advice: str):
        super().__init__(name)
        self.name, self.a, self.b, self.advice = name, a, b, advice

    def message(self, construct: str) -> str:
        """The error in Triton's words for ``construct`` ("if", "ternary", "return"), then
        what each side is and what to do."""
        a, b = _describe(self.a), _describe(self.b)
        if construct == "ternary":
            head = (f"Ternary expression with dynamic condition has inconsistent types {a} "
                    f"and {b}")
        elif construct == "return":
            head = (f"Return type mismatch: the function returns {a} on one side of a "
                    f"run-time condition and {b} on the other")
        else:
            head = (f"Mismatched type for {self.name} between the branches of an if on a "
                    f"run-time condition: {a} in the then branch, {b} in the else branch")
        return f"{head}; {self.advice}"


def _describe(v) -> str:
    """A value in a mismatch message: a tile's type; a pointer's type, its argument and
    whether that is read-only (``nl.const``), since that is often the difference."""
    if isinstance(v, tensor):
        return str(v.type)
    if isinstance(v, pointer):
        const = "nl.const (read-only) " if id(v.base) in current().const_args else ""
        return f"{v!r} into {const}argument '{v.base.name}'"
    return repr(v)


def _trace_if(cond: tensor, then_fn, else_fn, merge_names, construct: str = "if"):
    """Trace both branches into an ``scf.if``; ``merge_names`` names what each branch
    function returns (a tuple of values, one per name); ``construct`` ("if", "ternary",
    "return") words the error when they cannot be merged.  Returns the merged values."""
    ctx = current()
    builder = ctx.builder
    loc = ctx.loc()
    blocks = [Block(), Block()]
    outs = []
    for blk, fn in zip(blocks, (then_fn, else_fn)):
        with builder.at(blk):
            outs.append(fn())
    leaves: list[_Leaf] = []
    try:
        rebuild = [_merge(a, b, n, leaves) for n, a, b in zip(merge_names, outs[0], outs[1])]
    except _Mismatch as m:
        raise sem.error(m.message(construct)) from None
    for side, blk in enumerate(blocks):
        with builder.at(blk):
            vals = [leaf.make(side) for leaf in leaves]
            builder.create(Kind.YIELD, [v.handle for v in vals], {}, loc=loc)
    op = builder.create(Kind.IF, [cond.handle], {}, result_types=[leaf.type for leaf in leaves],
                        regions=blocks, loc=loc)
    it = iter(tensor(r) for r in op.results)
    return tuple(f(it) for f in rebuild)


def ir_if(c, then_fn, else_fn, names, inits):
    """``if c:`` whose branches (functions of the carried-in values, returning the values
    of ``names``) fall through: Python when ``c`` is a Python value, else an ``scf.if``."""
    carried = _carried(names, inits, "is read in a branch of the if before it is assigned")
    if not is_traced(_value(c)):
        return (then_fn if c else else_fn)(carried)
    cond = condition(_value(c), "an `if`")
    return _trace_if(cond, lambda: then_fn(carried), lambda: else_fn(carried), names)


def ir_if_return(c, then_fn, else_fn, names, inits):
    """``if c:`` whose branches both end in ``return`` (an early return: the rest of the
    function went into the branch that does not return).  Returns what the function
    returns."""
    carried = _carried(names, inits, "is read in a branch of the if before it is assigned")
    if not is_traced(_value(c)):
        return (then_fn if c else else_fn)(carried)
    cond = condition(_value(c), "an `if`")
    (out,) = _trace_if(cond, lambda: (then_fn(carried),), lambda: (else_fn(carried),),
                       ("<return value>",), "return")
    return out


def ifexp(c, a, b):
    """``a() if c else b()``: one side when ``c`` is a Python value, else an ``scf.if``."""
    if not is_traced(_value(c)):
        return a() if c else b()
    cond = condition(_value(c), "a conditional expression")
    (out,) = _trace_if(cond, lambda: (a(),), lambda: (b(),), ("<a if c else b>",), "ternary")
    return out


# --- and / or / not -----------------------------------------------------------------------

def _truth(x) -> tensor:
    return condition(x, "`and`/`or`/`not`")


def and_(first, *rest):
    """``first and rest[0]() and ...``: Python's short circuit on Python values; on a
    run-time scalar both sides are evaluated and combined as a logical and (i1)."""
    acc = first
    for thunk in rest:
        if not is_traced(_value(acc)):
            if not acc:
                return acc
            acc = thunk()
            continue
        nxt = thunk()
        if not is_traced(_value(nxt)):
            acc = _truth(_value(acc)) if nxt else nxt
            if not is_traced(acc):
                return acc
            continue
        acc = sem.binary(Kind.AND, _truth(_value(acc)), _truth(_value(nxt)))
    return acc


def or_(first, *rest):
    """``first or rest[0]() or ...``: Python's short circuit on Python values; on a
    run-time scalar both sides are evaluated and combined as a logical or (i1)."""
    acc = first
    for thunk in rest:
        if not is_traced(_value(acc)):
            if acc:
                return acc
            acc = thunk()
            continue
        nxt = thunk()
        if not is_traced(_value(nxt)):
            if nxt:
                return nxt
            acc = _truth(_value(acc))
            continue
        acc = sem.binary(Kind.OR, _truth(_value(acc)), _truth(_value(nxt)))
    return acc


def not_(x):
    """``not x``: Python's on Python values, a logical not (i1) on a run-time scalar."""
    v = _value(x)
    if not is_traced(v):
        return not x
    return sem.unary(Kind.NOT, _truth(v))


# --- builtin min / max ---------------------------------------------------------------------

def _extreme(name: str, pick, args, kwargs):
    """Python's ``min``/``max`` on Python values; with a traced value among two or more
    arguments, the elementwise ``nl.minimum``/``nl.maximum`` of them all (as Triton)."""
    if not any(isinstance(_value(a), tensor) for a in args):
        return getattr(builtins, name)(*args, **kwargs)
    if len(args) < 2 or kwargs:
        raise sem.error(f"builtin {name}() on a traced tensor takes two or more values and no "
                        f"keywords (it is nl.{pick.__name__} of them); to reduce one tile use "
                        f"nl.{name}(x, axis)")
    out = _value(args[0])
    for a in args[1:]:
        out = pick(out, _value(a))
    return out


def builtin_min(*args, **kwargs):
    """``min(a, b, ...)`` in a kernel: ``nl.minimum`` when a value is traced."""
    return _extreme("min", nl_math.minimum, args, kwargs)


def builtin_max(*args, **kwargs):
    """``max(a, b, ...)`` in a kernel: ``nl.maximum`` when a value is traced."""
    return _extreme("max", nl_math.maximum, args, kwargs)


# --- Python numbers as Triton's constexprs ----------------------------------------------------

def literal_attr(obj, name: str):
    """``obj.<name>`` for the attributes the rewrite routes here (``dtype``, ``to``): on a
    Python number (a literal, a constexpr parameter) what Triton's constexpr gives, the
    dtype the number takes in a kernel (i32, or i64 when it needs it; f32; i1) and
    ``.to(dtype)``, a scalar of ``dtype``; anything else answers for itself."""
    v = _value(obj)
    if isinstance(v, (bool, int, float)):
        if name == "dtype":
            return sem.literal_dtype(v)
        return getattr(sem.to_tensor(v), name)
    return getattr(obj, name)


# --- while ---------------------------------------------------------------------------------

def ir_while(cond_fn, body_fn, names, inits):
    """``while cond:`` with a body that falls through.  A Python condition loops at trace
    time (as plain Python); a run-time one becomes an ``scf.while`` carrying the variables
    the body assigns (numbers the body changes become scalars, as in ``nl.range`` loops)."""
    carried = _carried(names, inits, "is read in the while loop before it is assigned")
    c = cond_fn(carried)
    if not is_traced(_value(c)):
        while c:
            carried = body_fn(carried)
            c = cond_fn(carried)
        return carried
    ctx = current()
    cond0 = condition(_value(c), "a `while`")

    def next_cond(outs):
        nxt = cond_fn(tuple(outs))
        return [condition(_value(nxt), "a `while`") if is_traced(_value(nxt))
                else sem.constant(bool(nxt), T.bool_)]

    blk, leaves, specs, outs, inits = trace_carried(
        names, inits, [], lambda lead, inner: body_fn(inner), "the while loop", next_cond)
    op = ctx.builder.create(Kind.WHILE, [cond0.handle] + [t.handle for t in leaves], {},
                            regions=[blk], loc=ctx.loc())
    return carried_results(op, names, inits, specs, outs, _missing_after_while)


def _missing_after_while(name: str) -> Undefined:
    return Undefined(name, "is assigned inside a while loop on a run-time condition but not "
                           "before it, so it has no value after the loop; initialise it "
                           "before the loop")
