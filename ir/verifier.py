"""The IR verifier: a list of small rules every function must obey (tinygrad's spec.py).

Each op rule is a function ``rule(op, ctx) -> str | None`` returning what is wrong; the first
broken rule raises ``VerifyError`` naming the op, its source location and the rule.  Passes
run the verifier after every step in tests (``run_passes(fn, verify=True)``).

Example::

    >>> from npujit.ir import Builder, Function, Kind, types as T
    >>> fn = Function("k", [])
    >>> _ = Builder(fn.body).op(Kind.PROGRAM_ID, [], {"axis": 0})
    >>> verify(fn)
    Traceback (most recent call last):
    ...
    npujit.ir.verifier.VerifyError: func.func 'k': function body must end with func.return...
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .core import Block, Function, Op
from . import types as T
from .ops import COMBINE, ELEMENTWISE, INFO, Kind, infer_types
from .printer import print_op

FEEDERS = frozenset({Kind.SPLAT, Kind.BROADCAST})  # fused-region ops that widen inputs


class VerifyError(Exception):
    """The IR breaks a rule; the message names the op, its location and the rule."""


@dataclass
class Context:
    """What a rule may look at besides the op: the function, the block holding the op and
    the ids of the values visible at the op (defined before it, here or in an enclosing
    block)."""

    fn: Function
    block: Block
    visible: set = field(default_factory=set)


# --- op rules ------------------------------------------------------------------------------

def rule_parent_links(op: Op, ctx: Context) -> str | None:
    """op.parent, region.parent_op and value owners point where the op actually sits."""
    if op.parent is not ctx.block:
        return "op.parent is not the block that holds the op"
    for i, v in enumerate(op.results):
        if v.owner is not op or v.index != i:
            return f"result #{i} does not point back at its op (owner/index)"
    for r in op.regions:
        if r.parent_op is not op:
            return "a region's parent_op is not the op that owns it"
        for i, a in enumerate(r.args):
            if a.owner is not r or a.index != i:
                return f"region argument #{i} does not point back at its block"
    return None


def rule_operand_uses(op: Op, ctx: Context) -> str | None:
    """Each operand's use list holds this op's read of it (``Value.uses``)."""
    for i, v in enumerate(op.operands):
        if v._uses.get((id(op), i), (None,))[0] is not op:
            return f"operand #{i} ({v.type}) does not list this op among its uses"
    return None


def rule_operands_dominate(op: Op, ctx: Context) -> str | None:
    """Every operand is defined before its use, in this block or an enclosing one."""
    for i, v in enumerate(op.operands):
        if id(v) not in ctx.visible:
            return (f"operand #{i} ({v.type}) is not defined before this use in this block "
                    "or an enclosing one")
    return None


def rule_region_count(op: Op, ctx: Context) -> str | None:
    """The op owns as many regions as its kind has."""
    if len(op.regions) != INFO[op.kind].regions:
        return f"has {len(op.regions)} regions; {op.kind.value} has {INFO[op.kind].regions}"
    return None


def rule_required_attrs(op: Op, ctx: Context) -> str | None:
    """Attributes the kind needs are present."""
    missing = [a for a in op.info.attrs if a not in op.attrs]
    return f"missing attribute(s) {', '.join(missing)}" if missing else None


def rule_result_types(op: Op, ctx: Context) -> str | None:
    """Result types are what the kind's type rule gives for the operand types."""
    if op.kind is Kind.FUSED:
        return None  # rule_fused_region checks them against the region's yield
    try:
        expected = infer_types(op.kind, [v.type for v in op.operands], op.attrs)
    except Exception as e:  # a TypeRuleError, or a malformed attribute the rule tripped on
        return f"type rule failed: {e}"
    if expected is None:
        return None  # scf.if: rule_if_regions checks the results against the yields
    got = tuple(v.type for v in op.results)
    if tuple(expected) != got:
        return (f"result types ({', '.join(map(str, got))}) differ from the type rule's "
                f"({', '.join(map(str, expected))})")
    return None


def rule_terminator_last(op: Op, ctx: Context) -> str | None:
    """A terminator only ends a block."""
    if INFO[op.kind].terminator and ctx.block.ops[-1] is not op:
        return "terminator in the middle of a block"
    return None


def rule_return_operands(op: Op, ctx: Context) -> str | None:
    """func.return takes no operands: kernels write their results to memory.  (Where
    terminators may stand is rule_terminator_last's, rule_region_terminators' and
    rule_body_returns' business.)"""
    if op.kind is Kind.RETURN and op.operands:
        return "func.return takes no operands: kernels write results to memory"
    return None


def rule_region_terminators(op: Op, ctx: Context) -> str | None:
    """Every region of scf.for / scf.while / scf.if / npu.fused ends with scf.yield."""
    for r in op.regions:
        if not r.ops or r.ops[-1].kind is not Kind.YIELD:
            return f"{op.kind.value} body must end with scf.yield"
    return None


def rule_for_body(op: Op, ctx: Context) -> str | None:
    """scf.for's body args are (iv, *carried) and its yield gives the carried types."""
    if op.kind is not Kind.FOR or len(op.operands) < 3 or len(op.regions) != 1:
        return None
    carried = [v.type for v in op.operands[3:]]
    return _region_mismatch(
        op.regions[0], [op.operands[0].type] + carried, carried,
        f"body arguments ({{}}) must be the induction variable ({op.operands[0].type}) then "
        f"the carried types ({_listed(carried)})", "scf.yield gives ({}) but the loop carries "
        f"({_listed(carried)})")


def _listed(types) -> str:
    return ", ".join(map(str, types))


def _region_mismatch(body: Block, args: list, yields: list, bad_args: str,
                     bad_yield: str) -> str | None:
    """What is wrong with a region whose block should take ``args`` and yield ``yields``
    (the message templates get the actual types at ``{}``)."""
    got = [a.type for a in body.args]
    if got != args:
        return bad_args.format(_listed(got))
    yielded = [v.type for v in body.ops[-1].operands] if body.ops else []
    if yielded != yields:
        return bad_yield.format(_listed(yielded))
    return None


def rule_if_regions(op: Op, ctx: Context) -> str | None:
    """scf.if: both regions take no arguments and yield the result types."""
    if op.kind is not Kind.IF or len(op.regions) != 2:
        return None
    want = [v.type for v in op.results]
    for name, r in zip(("then", "else"), op.regions):
        if r.args:
            return f"the {name} region must take no arguments"
        got = [v.type for v in r.ops[-1].operands] if r.ops else []
        if got != want:
            return (f"the {name} region yields ({', '.join(map(str, got))}) but the results "
                    f"are ({', '.join(map(str, want))})")
    return None


def rule_while_body(op: Op, ctx: Context) -> str | None:
    """scf.while: body args are the carried types; its yield gives (i1 cond, *carried)."""
    if op.kind is not Kind.WHILE or not op.operands or len(op.regions) != 1:
        return None
    carried = [v.type for v in op.operands[1:]]
    body = op.regions[0]
    args = [a.type for a in body.args]
    if args != carried:
        return (f"body arguments ({', '.join(map(str, args))}) must be the carried types "
                f"({', '.join(map(str, carried))})")
    yielded = [v.type for v in body.ops[-1].operands] if body.ops else []
    want = [op.operands[0].type] + carried
    if yielded != want:
        return (f"scf.yield gives ({', '.join(map(str, yielded))}) but the loop needs the next "
                f"condition then the carried values ({', '.join(map(str, want))})")
    return None


def rule_fused_region(op: Op, ctx: Context) -> str | None:
    """npu.fused: region args mirror the operands one to one, the region holds only
    elementwise ops and sees nothing from outside, the results are the yielded values, and
    every op except splat/broadcast works at the results' shape."""
    if op.kind is not Kind.FUSED or len(op.regions) != 1:
        return None
    body = op.regions[0]
    if [a.type for a in body.args] != [v.type for v in op.operands]:
        return "region arguments must have the operand types, one to one"
    inner = {id(a) for a in body.args}
    for inner_op in body.ops:
        if inner_op.kind not in ELEMENTWISE and inner_op is not body.ops[-1]:
            return f"{inner_op.kind.value} is not elementwise and cannot be fused"
        if any(id(v) not in inner for v in inner_op.operands):
            return (f"{inner_op.kind.value} in the region uses a value from outside; fused "
                    "regions see only their block arguments")
        inner.update(id(v) for v in inner_op.results)
    yielded = [v.type for v in body.ops[-1].operands] if body.ops else []
    if [v.type for v in op.results] != yielded:
        return "results must have the types the region yields"
    shapes = {v.type.shape for v in op.results if hasattr(v.type, "shape")}
    if len(shapes) > 1:
        return "results must all have one shape (the fused loop nest's)"
    for inner_op in body.ops[:-1]:
        if inner_op.kind in FEEDERS:
            continue
        for v in inner_op.results:
            shapes.add(getattr(v.type, "shape", None))
        if len(shapes) > 1:
            return (f"{inner_op.kind.value} works at another shape than the fused results; "
                    "only splat/broadcast may change shape inside npu.fused")
    return None


def rule_combine_region(op: Op, ctx: Context) -> str | None:
    """npu.reduce_combine / npu.scan_combine: the combine function's region takes (*acc,
    *next), scalars of the inputs' dtypes, and yields the new *acc of those dtypes."""
    if op.kind not in COMBINE or len(op.regions) != 1:
        return None
    want = [T.tensor((), v.type.dtype) for v in op.operands if hasattr(v.type, "dtype")]
    return _region_mismatch(
        op.regions[0], want * 2, want,
        "region arguments ({}) must be the accumulated then the next scalars of the inputs' "
        f"dtypes ({_listed(want * 2)})",
        f"scf.yield gives ({{}}) but the combine function must give ({_listed(want)})")


def rule_map_region(op: Op, ctx: Context) -> str | None:
    """npu.map_elementwise: the function's region takes ``pack`` scalars of each input, of
    its dtype, and yields ``pack`` scalars of each result, of the result's dtype."""
    if op.kind is not Kind.MAP_ELEMENTWISE or len(op.regions) != 1:
        return None
    p = op.attrs.get("pack", 1)
    args = [T.tensor((), v.type.dtype) for v in op.operands if hasattr(v.type, "dtype")
            for _ in range(p)]
    outs = [T.tensor((), r.type.dtype) for r in op.results for _ in range(p)]
    return _region_mismatch(
        op.regions[0], args, outs,
        f"region arguments ({{}}) must be one scalar per input ({_listed(args)})",
        f"scf.yield gives ({{}}) but the results are ({_listed(outs)})")


OP_RULES = [rule_parent_links, rule_operand_uses, rule_operands_dominate, rule_region_count, rule_required_attrs,
            rule_result_types, rule_terminator_last, rule_return_operands,
            rule_region_terminators, rule_for_body, rule_if_regions, rule_while_body,
            rule_fused_region, rule_combine_region, rule_map_region]


# --- function rules ------------------------------------------------------------------------

def rule_body_returns(fn: Function) -> str | None:
    """The function body ends with func.return."""
    if not fn.body.ops or fn.body.ops[-1].kind is not Kind.RETURN:
        return "function body must end with func.return"
    return None


def rule_body_is_top_level(fn: Function) -> str | None:
    """The function body is no op's region."""
    if fn.body.parent_op is not None:
        return "the function body block has a parent op"
    return None


def rule_uses_are_reads(fn: Function) -> str | None:
    """Every use a value of the function lists is a read by an op of the function (an
    op taken out without ``Op.erase``/``drop_uses`` leaves one behind)."""
    ops = {id(op) for op in fn.walk()}
    for block in _blocks(fn.body):
        values = [*block.args, *(r for op in block.ops for r in op.results)]
        for v in values:
            for u, i in v._uses.values():
                if id(u) not in ops:
                    return (f"a value of type {v.type} lists a use by {u.kind.value} at "
                            f"{u.loc}, which is not in the function")
                if i >= len(u.operands) or u.operands[i] is not v:
                    return (f"a value of type {v.type} lists operand #{i} of "
                            f"{u.kind.value} at {u.loc}, which reads another value")
    return None


def _blocks(block: Block):
    yield block
    for op in block.ops:
        for region in op.regions:
            yield from _blocks(region)


FUNCTION_RULES = [rule_body_is_top_level, rule_body_returns, rule_uses_are_reads]


def _fail(op: Op, rule, message: str) -> VerifyError:
    title = rule.__name__.removeprefix("rule_").replace("_", " ")
    try:
        text = print_op(op)
    except Exception:  # the op may be too broken to print (bad attribute values)
        text = repr(op)
    first_line = text.splitlines()[0]
    return VerifyError(f"{op.kind.value} at {op.loc}: {title}: {message}\n  {first_line}")


def _verify_block(block: Block, ctx: Context, visible: set) -> None:
    visible = visible | {id(a) for a in block.args}  # a copy: inner values stay inside
    op_ctx = Context(ctx.fn, block, visible)
    for op in block.ops:
        for rule in OP_RULES:
            message = rule(op, op_ctx)
            if message:
                raise _fail(op, rule, message)
        for region in op.regions:
            _verify_block(region, ctx, visible)
        visible.update(id(v) for v in op.results)


def verify(fn: Function) -> None:
    """Check every rule on ``fn``; raise ``VerifyError`` at the first broken one.

    Example::

        >>> from npujit.ir.parser import parse_function
        >>> verify(parse_function('''"func.func"() ({
        ... ^bb0:
        ...   "func.return"() : () -> ()
        ... }) {function_type = () -> (), sym_name = "k"} : () -> ()'''))
    """
    for rule in FUNCTION_RULES:
        message = rule(fn)
        if message:
            title = rule.__name__.removeprefix("rule_").replace("_", " ")
            raise VerifyError(f"func.func {fn.name!r}: {message} ({title})")
    _verify_block(fn.body, Context(fn, fn.body), set())
