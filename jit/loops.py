"""Tracing ``nl.range`` loops into ``scf.for`` with loop-carried values.

The rewritten kernel (see ``ast_rewrite``) calls ``ir_for(it, body, names, inits)``.  The
carried values are flattened into IR leaves: tensors are leaves; a pointer carries its
offset; a block pointer its offsets; tuples and lists their items; Python numbers stay
constants unless the body changes them, in which case they become tensors and the body is
traced again.

Example::

    acc = nl.zeros((BM, BN), nl.float32)      # carried: one tensor leaf
    for k in nl.range(0, K, BK):              # -> scf.for %lb, %ub, %step, %acc
        acc += nl.dot(a, b)                   #    body yields the new acc
"""
from __future__ import annotations

import builtins
import numbers

from npujit.ir import Block, Kind
from npujit.ir import types as T
from npujit.language import semantic as sem
from npujit.language.core import block_ptr, constexpr, pointer, tensor
from npujit.language.loops import range as nl_range

from npujit.language.tracing import current


class Undefined:
    """Stands for a variable with no value: read before assignment in a loop body, or
    assigned only inside an ``nl.range`` body and used after the loop."""

    def __init__(self, name: str, why: str):
        self._name, self._why = name, why

    def _fail(self, *a, **k):
        raise sem.error(f"variable '{self._name}' {self._why}")

    def __repr__(self) -> str:
        return f"<undefined {self._name}>"


for _m in ("__add__ __radd__ __sub__ __rsub__ __mul__ __rmul__ __truediv__ __rtruediv__ "
           "__floordiv__ __rfloordiv__ __mod__ __rmod__ __pow__ __neg__ __lt__ __le__ __gt__ "
           "__ge__ __eq__ __ne__ __bool__ __getitem__ __getattr__ __call__ __and__ __or__ "
           "__invert__ __index__ __iter__").split():
    setattr(Undefined, _m, Undefined._fail)
Undefined.__hash__ = object.__hash__

_MISSING = object()


def carry_in(local_vars: dict, names) -> tuple:
    """The current values of ``names`` (``_MISSING`` for those not yet assigned)."""
    vals = (local_vars.get(n, _MISSING) for n in names)
    return tuple(_MISSING if isinstance(v, Undefined) else v for v in vals)


def range(*args, **kwargs) -> nl_range:
    """Python's ``range`` inside a kernel: an IR loop, as in Triton."""
    return nl_range(*args, **kwargs)


def is_ir_loop(it) -> bool:
    return isinstance(it, nl_range)


def check_python_loop(it, reason: str) -> None:
    if isinstance(it, nl_range):
        what = {"break": "`break`", "continue": "`continue`", "return": "`return`",
                "yield": "`yield`", "else": "a `for ... else` clause",
                "target": "a target that is not a single name"}[reason]
        raise sem.error(f"an nl.range loop cannot contain {what}: the loop becomes one IR loop "
                        "with a fixed trip count. Use masks / nl.where instead, or "
                        "nl.static_range to unroll a constant loop")


# --- carried-value trees -----------------------------------------------------------------

class _Static:
    __slots__ = ("obj",)

    def __init__(self, obj):
        self.obj = obj


def _flatten(obj, leaves: list):
    """A spec of ``obj`` whose tensor parts were appended to ``leaves``."""
    if isinstance(obj, tensor):
        leaves.append(obj)
        return "T"
    if isinstance(obj, pointer):
        return ("P", obj.base, None if obj.offset is None else _flatten(obj.offset, leaves))
    if isinstance(obj, block_ptr):
        return ("B", obj, tuple(_flatten(o, leaves) for o in obj.offsets))
    if isinstance(obj, (tuple, list)):
        return ("S", type(obj), tuple(_flatten(o, leaves) for o in obj))
    if isinstance(obj, constexpr):
        obj = obj.value
    return _Static(obj)


def _unflatten(spec, leaves):
    it = iter(leaves)

    def build(s):
        if s == "T":
            return next(it)
        if isinstance(s, _Static):
            return s.obj
        tag = s[0]
        if tag == "P":
            return pointer(s[1], None if s[2] is None else build(s[2]))
        if tag == "B":
            b = s[1]
            return block_ptr(b.base, b.shape, b.strides, [build(o) for o in s[2]],
                             b.block_shape, b.order, b.shift)
        return s[1](build(c) for c in s[2])

    return build(spec)


def _same_static(a, b) -> bool:
    if a is b:
        return True
    if isinstance(a, numbers.Number) and isinstance(b, numbers.Number) \
            and not isinstance(a, tensor) and not isinstance(b, tensor):
        return type(a) is type(b) and (a == b or (a != a and b != b))
    return False


def _match(spec, out, name: str, promote: list, path):
    """Out's leaves in ``spec``'s order; records constants to promote."""
    if isinstance(out, constexpr):
        out = out.value
    if spec == "T":
        if not isinstance(out, tensor):
            if isinstance(out, numbers.Number):
                return [out]  # a number yielded for a tensor: converted by the caller
            raise sem.error(f"loop-carried variable '{name}' is a tensor before the loop but "
                            f"{type(out).__name__} at the end of the body")
        return [out]
    if isinstance(spec, _Static):
        if _same_static(spec.obj, out):
            return []
        if spec.obj is _MISSING:
            return []
        if isinstance(spec.obj, numbers.Number) and (isinstance(out, (tensor, numbers.Number))):
            promote.append((path, out))
            return []
        raise sem.error(f"loop-carried variable '{name}' changes from {spec.obj!r} to {out!r} "
                        "in an nl.range body; only tensors, pointers and numbers can change "
                        "from one iteration to the next")
    tag = spec[0]
    if tag == "P":
        if not isinstance(out, pointer) or out.base is not spec[1]:
            raise sem.error(f"loop-carried pointer '{name}' must stay a pointer into the same "
                            "array in an nl.range body")
        if spec[2] is None:
            if out.offset is not None:
                promote.append((path, out))
            return []
        return _match(spec[2], out.offset if out.offset is not None else 0, name, promote,
                      path + (0,))
    if tag == "B":
        if (not isinstance(out, block_ptr) or out.base is not spec[1].base
                or out.shift is not spec[1].shift):
            raise sem.error(f"loop-carried block pointer '{name}' must stay a block pointer "
                            "into the same array, from the same base (move it with "
                            "nl.advance)")
        res = []
        for i, (s, o) in enumerate(zip(spec[2], out.offsets)):
            res += _match(s, o, name, promote, path + (i,))
        return res
    if not isinstance(out, (tuple, list)) or len(out) != len(spec[2]):
        raise sem.error(f"loop-carried '{name}' changes structure in an nl.range body")
    res = []
    for i, (s, o) in enumerate(zip(spec[2], out)):
        res += _match(s, o, name, promote, path + (i,))
    return res


def _promote_init(obj, path, out):
    """``obj`` with the constant at ``path`` replaced by a tensor typed like ``out``."""
    if not path:
        if isinstance(obj, pointer):
            return pointer(obj.base, sem.broadcast_to(sem.to_tensor(0, out.offset.dtype),
                                                     out.offset.shape))
        if isinstance(out, tensor):
            return sem.broadcast_to(sem.cast(sem.to_tensor(obj, out.dtype), out.dtype), out.shape)
        return sem.to_tensor(obj, sem.to_tensor(out).dtype if not isinstance(out, (int, float))
                             else None)
    i, rest = path[0], path[1:]
    if isinstance(obj, pointer):
        return pointer(obj.base, _promote_init(obj.offset, rest, out))
    if isinstance(obj, block_ptr):
        offs = list(obj.offsets)
        offs[i] = _promote_init(offs[i], rest, out)
        return block_ptr(obj.base, obj.shape, obj.strides, offs, obj.block_shape, obj.order,
                         obj.shift)
    items = list(obj)
    items[i] = _promote_init(items[i], rest, out)
    return type(obj)(items)


def _bounds(it: nl_range):
    vals = [it.start, it.end, it.step]
    for v in vals:
        if not isinstance(v, (tensor, int)) or isinstance(v, bool):
            raise sem.error(f"nl.range bounds must be ints or integer scalars, got {v!r}")
        if isinstance(v, tensor) and (v.shape != () or not v.dtype.is_int):
            raise sem.error(f"nl.range bounds must be integer scalars, got a tensor {v.type}")
    if isinstance(it.step, int) and it.step == 0:
        raise sem.error("nl.range step must not be 0")
    d = T.int32
    for v in vals:
        if isinstance(v, tensor):
            d = T.promote(d, v.dtype)
        elif not -2**31 <= v < 2**31:
            d = T.int64
    return [sem.cast(sem.to_tensor(v, d), d) for v in vals]


def trace_carried(names, inits, lead: list, run, what: str, head=None):
    """Trace a loop body whose block takes ``lead`` values (types) then the leaves of the
    carried ``inits``; ``run(lead_args, carried)`` traces it and returns the values of
    ``names`` at its end, ``head(outs)`` the values yielded before them (a while loop's
    next condition).  Numbers the body changes become tensors and the body is traced
    again.  Returns ``(block, init leaves, specs, outs, inits)``."""
    builder = current().builder
    inits = list(inits)
    for _attempt in builtins.range(64):
        leaves: list = []
        specs = [_flatten(v, leaves) for v in inits]
        blk = Block(list(lead) + [t.type for t in leaves])
        args = [tensor(a) for a in blk.args]
        lead_args, leaf_args = args[:len(lead)], args[len(lead):]
        carried, pos = [], 0
        for n, v, s in zip(names, inits, specs):
            k = _count_leaves(s)
            if v is _MISSING:
                carried.append(Undefined(n, f"is read in {what} before it is assigned"))
            else:
                carried.append(_unflatten(s, leaf_args[pos:pos + k]))
            pos += k
        with builder.at(blk):
            outs = run(lead_args, tuple(carried))
            promote: list = []
            out_leaves = []
            for n, s, o in zip(names, specs, outs):
                found: list = []
                out_leaves += _match(s, o, n, found, ())
                promote += [(n, p, out) for p, out in found]
            if not promote:
                out_leaves = [_as_leaf(o, a, n) for o, a, n in
                              zip(out_leaves, leaf_args, _leaf_names(names, specs))]
                first = head(outs) if head is not None else []
                builder.create(Kind.YIELD, [o.handle for o in list(first) + out_leaves], {})
        if not promote:
            return blk, leaves, specs, outs, inits
        for op in blk.ops:          # this attempt is thrown away: its reads go with it
            op.drop_uses()
        for n, path, out in promote:
            i = names.index(n)
            inits[i] = _promote_init(inits[i], path, out)
    raise sem.error("could not settle the types of the loop-carried values")


def carried_results(op, names, inits, specs, outs, missing) -> tuple:
    """The values of ``names`` after the loop ``op``: its results rebuilt into pointers,
    tuples, ...; ``missing(name)`` for a variable the body assigns but nothing before it."""
    results = [tensor(r) for r in op.results]
    final, pos = [], 0
    for n, v, s, o in zip(names, inits, specs, outs):
        k = _count_leaves(s)
        if v is _MISSING:
            final.append(missing(n) if not isinstance(o, Undefined) else o)
        else:
            final.append(_unflatten(s, results[pos:pos + k]))
        pos += k
    return tuple(final)


def ir_for(it: nl_range, body, names, inits):
    """Trace ``body`` once (more if constants get promoted) into an ``scf.for``."""
    ctx = current()
    lb, ub, step = _bounds(it)
    blk, leaves, specs, outs, inits = trace_carried(
        names, inits, [lb.type], lambda lead, carried: body(lead[0], carried),
        "the nl.range body")
    stages = it.num_stages if it.num_stages is not None else ctx.num_stages
    attrs = {"num_stages": int(stages)} if stages is not None else {}
    op = ctx.builder.create(Kind.FOR, [lb.handle, ub.handle, step.handle]
                            + [t.handle for t in leaves], attrs, regions=[blk], loc=ctx.loc())
    return carried_results(op, names, inits, specs, outs, _MISSING_AFTER)


def _MISSING_AFTER(name: str) -> Undefined:
    return Undefined(name, "is assigned inside an nl.range loop but not before it, so it "
                           "has no value after the loop; initialise it before the loop")


def _count_leaves(spec) -> int:
    if spec == "T":
        return 1
    if isinstance(spec, _Static):
        return 0
    if spec[0] == "P":
        return 0 if spec[2] is None else _count_leaves(spec[2])
    return sum(_count_leaves(s) for s in spec[2])


def _leaf_names(names, specs):
    out = []
    for n, s in zip(names, specs):
        out += [n] * _count_leaves(s)
    return out


def _as_leaf(out, arg: tensor, name: str) -> tensor:
    """The yielded value for a carried leaf, checked against the leaf's type."""
    if not isinstance(out, tensor):
        out = sem.cast(sem.to_tensor(out, arg.dtype), arg.dtype)
        out = sem.broadcast_to(out, arg.shape)
    if out.type != arg.type:
        raise sem.error(
            f"loop-carried variable '{name}' is {arg.type} when the loop starts but {out.type} "
            "at the end of the body; a carried value must keep its type — cast it with "
            f".to(nl.{T.PUBLIC_NAMES[arg.dtype.name]}) or create it with the final dtype/shape")
    return out


# The rewritten kernel reaches everything through this module (``__npujit_rt``): the
# control-flow entry points live in jit/control.py, which builds on the helpers above.
from .control import (and_, builtin_max, builtin_min, check_python_cond, ifexp,  # noqa: E402,F401
                      ir_if, ir_if_return, ir_while, literal_attr, not_, or_)
