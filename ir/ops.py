"""The op kinds of the npujit IR and what each one is: operands, attributes, type rule, purity.

One ``Op`` class serves every kind (see ``ir/core.py``); what a kind *means* lives in tables:
this file gives the signature and type rule, ``backends/reference`` the numeric semantics
(the definition), ``backends/numba`` the lowering.

Conventions every tier follows:

* Elementwise ops take operands of one shape (the front end inserts ``npu.broadcast`` /
  ``npu.splat``) and, except where noted, one dtype (the front end inserts ``npu.cast``).
* f16/bf16 arithmetic is done in f32 and rounded to the 16-bit type (round to nearest even)
  after every op.  Integer arithmetic wraps at the type's width.
* Optional operands are trailing; an op's operand count says which are present.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Callable

from .types import DType, PtrType, TensorType, bool_, float32, int32, tensor, uint32


class Kind(enum.Enum):
    """Every op kind, by its dialect-qualified text name."""

    # --- structure -------------------------------------------------------------------------
    RETURN = "func.return"          # end of a kernel body
    FOR = "scf.for"                 # (lb, ub, step, *init) region(iv, *carried) -> carried
    YIELD = "scf.yield"             # terminator of a region: next carried values / results
    IF = "scf.if"                   # (cond: i1) regions(then, else) -> what both yield
    WHILE = "scf.while"             # (cond: i1, *init) region(*carried) yields (cond, *carried)
    FUSED = "npu.fused"             # elementwise ops grouped into one loop nest (a region)

    # --- constants, ids, index tiles -------------------------------------------------------
    CONSTANT = "arith.constant"     # {value, dtype} -> scalar
    PROGRAM_ID = "npu.program_id"   # {axis} -> i32
    NUM_PROGRAMS = "npu.num_programs"  # {axis} -> i32
    ARANGE = "npu.arange"           # {start, end} -> tensor<(end-start) x i32>

    # --- elementwise binary (same shape, same dtype) ----------------------------------------
    ADD = "npu.add"
    SUB = "npu.sub"
    MUL = "npu.mul"
    DIV = "npu.div"                 # floats: true division
    IDIV = "npu.idiv"               # ints: division truncating toward zero (C, Triton); /0 gives 0
    REM = "npu.rem"                 # remainder with the sign of the dividend (C fmod, Triton)
    POW = "npu.pow"                 # floats only
    MAXIMUM = "npu.maximum"         # NaN-ignoring, as Triton (np.fmax: NaN only if both are)
    MINIMUM = "npu.minimum"
    AND = "npu.and"                 # bitwise on ints, logical on i1
    OR = "npu.or"
    XOR = "npu.xor"
    SHL = "npu.shl"                 # ints; shift counts outside [0, bits) give 0
    SHR = "npu.shr"                 # arithmetic shift right

    CMP = "npu.cmp"                 # {predicate: eq ne lt le gt ge} -> i1 tile
    SELECT = "npu.select"           # (cond: i1, a, b) -> where(cond, a, b)

    # --- elementwise unary -----------------------------------------------------------------
    NEG = "npu.neg"
    NOT = "npu.not"                 # bitwise not on ints, logical not on i1
    ABS = "npu.abs"
    EXP = "npu.exp"                 # float-only math from here on
    EXP2 = "npu.exp2"
    LOG = "npu.log"
    LOG2 = "npu.log2"
    SQRT = "npu.sqrt"
    RSQRT = "npu.rsqrt"
    SIN = "npu.sin"
    COS = "npu.cos"
    FLOOR = "npu.floor"
    CEIL = "npu.ceil"
    SIGMOID = "npu.sigmoid"         # 1 / (1 + exp(-x))
    TANH = "npu.tanh"
    ERF = "npu.erf"
    GELU = "npu.gelu"               # {approximate: "none" (erf form) | "tanh"}
    SILU = "npu.silu"               # x / (1 + exp(-x))
    CAST = "npu.cast"               # {dtype}; float->int truncates toward zero, ->i1 is x != 0
    BITCAST = "npu.bitcast"         # {dtype} of the same bit width: the same bits read as dtype

    # --- shape -----------------------------------------------------------------------------
    SPLAT = "npu.splat"             # scalar -> tensor {shape}
    BROADCAST = "npu.broadcast"     # same rank, size-1 dims stretched {shape}
    RESHAPE = "npu.reshape"         # row-major {shape}
    TRANS = "npu.trans"             # {perm}

    # --- reductions, scans, selection ------------------------------------------------------
    REDUCE = "npu.reduce"           # {kind: sum max min prod argmax argmin, axis}
    SCAN = "npu.scan"               # {kind: sum, axis} inclusive prefix
    SORT = "npu.sort"               # {axis, descending} -> values
    TOPK = "npu.topk"               # {k, axis} -> (values, indices: i32), largest first
    GATHER = "npu.gather"           # (src, index: int) {axis} -> src[.., index[..], ..]
    # a user combine function (tl.reduce / tl.associative_scan) as the op's region: block
    # args (*acc, *next) scalars of the inputs' dtypes, scf.yield gives the new *acc
    REDUCE_COMBINE = "npu.reduce_combine"  # (*inputs) {axis} -> one tile per input
    SCAN_COMBINE = "npu.scan_combine"      # (*inputs) {axis, reverse} -> inclusive scans
    MAP_ELEMENTWISE = "npu.map_elementwise"  # (*inputs) {dtypes} region(*scalars) -> tiles

    # --- Cube ------------------------------------------------------------------------------
    DOT = "npu.dot"                 # (a: MxK, b: KxN, acc?: MxN) -> MxN f32 (i32 for i8);
    #                                 batched: (...xMxK, ...xKxN, ...xMxN?) -> ...xMxN

    # --- global memory ---------------------------------------------------------------------
    LOAD = "npu.load"               # (ptr, offsets, mask?, other?) -> tile
    STORE = "npu.store"             # (ptr, offsets, value, mask?)
    BLOCK_LOAD = "npu.block_load"   # (ptr, *shape, *strides, *offsets) {block_shape, ...}
    BLOCK_STORE = "npu.block_store"  # (ptr, *shape, *strides, *offsets, value) {...}
    ATOMIC_RMW = "npu.atomic_rmw"   # (ptr, offsets, value, mask?, cmp?) {combine?} -> old values;
    #                                 combine: add (when absent) max min xchg and or xor, or
    #                                 cas (value where old == cmp; cmp and mask both given)
    ATOMIC_ADD = "npu.atomic_rmw"   # the same kind (an alias): atomic_rmw with combine=add

    # --- AIC <-> AIV (scheduled IR of a separated part only) -------------------------------
    HANDOFF = "npu.handoff"         # (x) -> x: the value moved to the other core through a GM
    #                                 workspace (ir/schedule/split_cores.py); identity in numbers

    # --- debugging -------------------------------------------------------------------------
    PRINT = "npu.print"             # (*values) {prefix}
    ASSERT = "npu.assert"           # (cond) {message, error}: raise where a lane is false


# Which operand dtypes a kind accepts (its type rule checks it; the front end inserts the
# cast a domain asks for: math on ints is float math, arithmetic on bools is int math).
ANY = "any"                  # every dtype
FLOAT = "float"              # float tiles only
INT = "int"                  # integer tiles only (not bool)
INT_OR_BOOL = "int-or-bool"  # bitwise: integers, or logical on i1
NUMBER = "number"            # floats and integers, not bool
CMP_PREDICATES = ("eq", "ne", "lt", "le", "gt", "ge")
REDUCE_KINDS = ("sum", "max", "min", "prod", "argmax", "argmin")

class TypeRuleError(ValueError):
    """Operands or attributes do not fit an op kind.  The front end turns it into a
    ``CompilationError`` at the user's source line."""


@dataclass(frozen=True)
class OpInfo:
    """What the IR knows about a kind without running it: one record per kind, which the
    language, the verifier, the passes and the simulator read (the tiers' semantics tables
    are kept apart on purpose, so they check each other; tests check them complete).

    ``family``    structure, constant, index, binary, unary, compare, select, cast, shape,
                  reduce, cube, memory, transfer (the AIC <-> AIV hand-off) or debug
    ``operands``  operand names in order; ``name?`` is optional (trailing), ``*name`` a
                  variadic group (names after it count from the end): ``op.operand("mask")``
    ``attrs``     attributes the kind cannot do without (its type rule or semantics reads them)
    ``domain``    the operand dtypes it accepts (``ANY``, ``FLOAT``, ``INT``, ``INT_OR_BOOL``,
                  ``NUMBER``)
    ``swappable`` its two operands may be exchanged (CSE keys them in a canonical order)
    ``vec_op``    the Vector instruction it lowers to on the simulated NPU, as the spec's cost
                  table names it (``sim/isa.py`` ``VEC_OP_CLASS``); None when it runs on no
                  Vector unit (a reduction's depends on its ``kind``: ``vec_op_name``)
    """

    kind: Kind
    family: str
    operands: tuple
    attrs: tuple
    domain: str
    swappable: bool
    vec_op: str | None
    pure: bool               # no memory effects: CSE and DCE may touch it
    terminator: bool
    regions: int             # number of regions the op owns
    type_rule: Callable      # (operand types, attrs) -> tuple of result types

    def operand_index(self, name: str, count: int) -> int | None:
        """Where operand ``name`` sits among ``count`` operands (None: an absent optional).

        Example::

            >>> INFO[Kind.LOAD].operand_index("mask", 3), INFO[Kind.LOAD].operand_index("other", 3)
            (2, None)
        """
        names = [n.rstrip("?").lstrip("*") for n in self.operands]   # a variadic: its first
        if name not in names:
            raise KeyError(f"{self.kind.value} has no operand {name!r}; it has "
                           f"{', '.join(self.operands)}")
        i = names.index(name)
        star = next((j for j, n in enumerate(self.operands) if n.startswith("*")), None)
        if star is not None and i > star:            # after a variadic group: from the end
            return count - (len(names) - i)
        return i if i < count else None


def _need(cond: bool, msg: str) -> None:
    if not cond:
        raise TypeRuleError(msg)


def _tensor(t, what: str) -> TensorType:
    _need(isinstance(t, TensorType), f"{what} must be a tile or scalar, got {t}")
    return t


def _rule_binary(kind):
    def rule(ts, attrs):
        _need(len(ts) == 2, f"{kind.value} takes 2 operands")
        a, b = _tensor(ts[0], "lhs"), _tensor(ts[1], "rhs")
        _need(a == b, f"{kind.value} operands must have one type, got {a} and {b}")
        _check_domain(kind, a.dtype)
        return (a,)
    return rule


def _rule_unary(kind):
    def rule(ts, attrs):
        _need(len(ts) == 1, f"{kind.value} takes 1 operand")
        a = _tensor(ts[0], "operand")
        _check_domain(kind, a.dtype)
        if kind is Kind.GELU:
            _need(attrs.get("approximate", "none") in ("none", "tanh"),
                  "gelu approximate must be 'none' or 'tanh'")
        return (a,)
    return rule


def _check_domain(kind: Kind, d: DType) -> None:
    domain = _DOMAIN.get(kind, ANY)
    if domain == FLOAT:
        _need(d.is_float, f"{kind.value} needs a float operand, got {d}; cast it with .to(nl.float32)")
    if domain == INT:
        _need(d.is_int, f"{kind.value} needs an integer operand, got {d}")
    if domain == INT_OR_BOOL:
        _need(not d.is_float, f"{kind.value} needs an integer or bool operand, got {d}")
    if domain == NUMBER:
        _need(not d.is_bool, f"{kind.value} is not defined on bool tiles; cast to an int first")


def _rule_constant(ts, attrs):
    _need(not ts, "arith.constant takes no operands")
    d = attrs["dtype"]
    _need(isinstance(d, DType), "arith.constant needs a dtype")
    return (tensor((), d),)


def _rule_program_id(ts, attrs):
    _need(attrs.get("axis") in (0, 1, 2), "program axis must be 0, 1 or 2")
    return (tensor((), int32),)


def _rule_arange(ts, attrs):
    start, end = attrs["start"], attrs["end"]
    _need(isinstance(start, int) and isinstance(end, int) and end > start,
          f"arange needs constant ints with end > start, got {start}, {end}")
    return (tensor((end - start,), int32),)


def _rule_cmp(ts, attrs):
    _need(len(ts) == 2, "npu.cmp takes 2 operands")
    a, b = _tensor(ts[0], "lhs"), _tensor(ts[1], "rhs")
    _need(a == b, f"npu.cmp operands must have one type, got {a} and {b}")
    _need(attrs.get("predicate") in CMP_PREDICATES, f"bad predicate {attrs.get('predicate')}")
    return (a.with_dtype(bool_),)


def _rule_select(ts, attrs):
    _need(len(ts) == 3, "npu.select takes (cond, a, b)")
    c, a, b = (_tensor(t, n) for t, n in zip(ts, ("cond", "a", "b")))
    _need(c.dtype == bool_, f"select condition must be i1, got {c.dtype}")
    _need(a == b and c.shape == a.shape, f"select operands must agree, got {c}, {a}, {b}")
    return (a,)


def _rule_cast(ts, attrs):
    _need(len(ts) == 1, "npu.cast takes 1 operand")
    return (_tensor(ts[0], "operand").with_dtype(attrs["dtype"]),)


def _rule_bitcast(ts, attrs):
    _need(len(ts) == 1, "npu.bitcast takes 1 operand")
    a, d = _tensor(ts[0], "operand"), attrs["dtype"]
    _need(isinstance(d, DType) and not d.is_bool and not a.dtype.is_bool
          and d.bits == a.dtype.bits,
          f"npu.bitcast needs two non-bool dtypes of one bit width, got {a.dtype} -> {d}")
    return (a.with_dtype(d),)


def _rule_splat(ts, attrs):
    a = _tensor(ts[0], "operand")
    _need(a.is_scalar, f"splat takes a scalar, got {a}")
    return (tensor(attrs["shape"], a.dtype),)


def _rule_broadcast(ts, attrs):
    a = _tensor(ts[0], "operand")
    shape = tuple(attrs["shape"])
    _need(len(shape) == a.rank and all(s == d or s == 1 for s, d in zip(a.shape, shape)),
          f"cannot broadcast {a} to shape {list(shape)}")
    return (tensor(shape, a.dtype),)


def _rule_reshape(ts, attrs):
    a = _tensor(ts[0], "operand")
    out = tensor(attrs["shape"], a.dtype)
    _need(out.numel == a.numel, f"cannot reshape {a} to {list(out.shape)}: sizes differ")
    return (out,)


def _rule_trans(ts, attrs):
    a = _tensor(ts[0], "operand")
    perm = tuple(attrs["perm"])
    _need(sorted(perm) == list(range(a.rank)), f"bad permutation {list(perm)} for {a}")
    return (tensor([a.shape[p] for p in perm], a.dtype),)


def _axis(a: TensorType, attrs) -> int:
    axis = attrs.get("axis")
    _need(isinstance(axis, int) and 0 <= axis < a.rank, f"axis {axis} out of range for {a}")
    return axis


def reduce_result_dtype(kind: str, d: DType) -> DType:
    """sum/prod of i1, i8 and i16 widen to i32 (ui8 and ui16 to ui32, as Triton's sum);
    argmax/argmin give i32 indices."""
    if kind in ("argmax", "argmin"):
        return int32
    if kind in ("sum", "prod") and (d.is_bool or d.itemsize < 4) and not d.is_float:
        return uint32 if d.is_unsigned else int32
    return d


def _rule_reduce(ts, attrs):
    a = _tensor(ts[0], "operand")
    axis = _axis(a, attrs)
    _need(attrs.get("kind") in REDUCE_KINDS, f"bad reduction {attrs.get('kind')}")
    shape = a.shape[:axis] + a.shape[axis + 1:]
    return (tensor(shape, reduce_result_dtype(attrs["kind"], a.dtype)),)


def _rule_scan(ts, attrs):
    a = _tensor(ts[0], "operand")
    _axis(a, attrs)
    _need(attrs.get("kind") == "sum", "only sum scans exist")
    return (a.with_dtype(reduce_result_dtype("sum", a.dtype)),)


def _rule_combine(kind):
    def rule(ts, attrs):
        _need(len(ts) >= 1, f"{kind.value} takes one or more tiles")
        tiles = [_tensor(t, f"input #{i}") for i, t in enumerate(ts)]
        _need(all(t.shape == tiles[0].shape for t in tiles),
              f"{kind.value} inputs must have one shape, got {', '.join(map(str, tiles))}")
        axis = _axis(tiles[0], attrs)
        if kind is Kind.SCAN_COMBINE:
            _need(isinstance(attrs.get("reverse"), bool), "npu.scan_combine needs a bool 'reverse'")
            return tuple(tiles)
        return tuple(tensor(t.shape[:axis] + t.shape[axis + 1:], t.dtype) for t in tiles)
    return rule


def _rule_map(ts, attrs):
    _need(len(ts) >= 1, "npu.map_elementwise takes one or more tiles")
    tiles = [_tensor(t, f"input #{i}") for i, t in enumerate(ts)]
    _need(all(t.shape == tiles[0].shape for t in tiles),
          f"npu.map_elementwise inputs must have one shape, got {', '.join(map(str, tiles))}")
    dtypes = attrs.get("dtypes")
    _need(isinstance(dtypes, (tuple, list)) and dtypes and
          all(isinstance(d, DType) for d in dtypes),
          "npu.map_elementwise needs 'dtypes', the dtype of each result")
    return tuple(tensor(tiles[0].shape, d) for d in dtypes)


def _rule_sort(ts, attrs):
    a = _tensor(ts[0], "operand")
    _axis(a, attrs)
    return (a,)


def _rule_topk(ts, attrs):
    a = _tensor(ts[0], "operand")
    axis = _axis(a, attrs)
    k = attrs.get("k")
    _need(isinstance(k, int) and 1 <= k <= a.shape[axis],
          f"topk k={k} must be between 1 and the axis size {a.shape[axis]}")
    shape = a.shape[:axis] + (k,) + a.shape[axis + 1:]
    return (tensor(shape, a.dtype), tensor(shape, int32))


def _rule_gather(ts, attrs):
    src, index = _tensor(ts[0], "src"), _tensor(ts[1], "index")
    axis = _axis(src, attrs)
    _need(index.dtype.is_int, f"gather index must be an int tile, got {index.dtype}")
    _need(index.rank == src.rank and all(
        a == b for d, (a, b) in enumerate(zip(index.shape, src.shape)) if d != axis),
        f"gather index shape {list(index.shape)} must equal the source's "
        f"{list(src.shape)} on every axis but {axis}")
    return (tensor(index.shape, src.dtype),)


def dot_result_dtype(d: DType) -> DType:
    """i8 -> i32; f64 -> f64 (CPU tiers only: the NPU presets' Cube has no f64); else f32."""
    return int32 if d.is_int else (d if d.name == "f64" else float32)


def _rule_dot(ts, attrs):
    _need(len(ts) in (2, 3), "npu.dot takes (a, b) or (a, b, acc)")
    a, b = _tensor(ts[0], "a"), _tensor(ts[1], "b")
    _need(a.rank == b.rank and a.rank >= 2, f"dot needs 2-D (or batched N-D) tiles of one "
                                            f"rank, got {a} and {b}")
    _need(a.shape[:-2] == b.shape[:-2], f"dot batch dimensions differ: {a} @ {b}")
    _need(a.shape[-1] == b.shape[-2], f"dot inner dimensions differ: {a} @ {b}")
    _need(a.dtype == b.dtype, f"dot operands must have one dtype, got {a.dtype} and {b.dtype}")
    _need(a.dtype.is_float or a.dtype.name == "i8", f"dot takes float or i8 tiles, got {a.dtype}")
    out = tensor(a.shape[:-1] + b.shape[-1:], dot_result_dtype(a.dtype))
    if len(ts) == 3:
        _need(ts[2] == out, f"dot accumulator must be {out}, got {ts[2]}")
    return (out,)


def _ptr(t) -> PtrType:
    _need(isinstance(t, PtrType), f"expected a GM pointer, got {t}")
    return t


def _offsets(t) -> TensorType:
    t = _tensor(t, "offsets")
    _need(t.dtype.is_int, f"offsets must be integers, got {t.dtype}")
    return t


def _rule_load(ts, attrs):
    _need(2 <= len(ts) <= 4, "npu.load takes (ptr, offsets, mask?, other?)")
    p, off = _ptr(ts[0]), _offsets(ts[1])
    out = off.with_dtype(p.dtype)
    if len(ts) >= 3:
        _need(ts[2] == off.with_dtype(bool_), f"load mask must be {off.with_dtype(bool_)}, got {ts[2]}")
    if len(ts) == 4:
        _need(ts[3] == out, f"load other must be {out}, got {ts[3]}")
    return (out,)


def _rule_store(ts, attrs):
    _need(3 <= len(ts) <= 4, "npu.store takes (ptr, offsets, value, mask?)")
    p, off = _ptr(ts[0]), _offsets(ts[1])
    _need(ts[2] == off.with_dtype(p.dtype), f"stored value must be {off.with_dtype(p.dtype)}, got {ts[2]}")
    if len(ts) == 4:
        _need(ts[3] == off.with_dtype(bool_), f"store mask must be {off.with_dtype(bool_)}, got {ts[3]}")
    return ()


ATOMIC_COMBINES = ("add", "max", "min", "xchg", "and", "or", "xor", "cas")


def _rule_atomic_rmw(ts, attrs):
    _need(3 <= len(ts) <= 5, "npu.atomic_rmw takes (ptr, offsets, value, mask?, cmp?)")
    _rule_store(ts[:4], attrs)
    combine = attrs.get("combine", "add")
    _need((len(ts) == 5) == (combine == "cas"),
          "npu.atomic_rmw takes a cmp operand (after the mask) exactly when combine is cas")
    _need(len(ts) < 5 or ts[4] == ts[2], f"cas compare value must be {ts[2]}, got {ts[-1]}")
    _need(combine in ATOMIC_COMBINES, f"npu.atomic_rmw combine must be one of {ATOMIC_COMBINES}, "
                                      f"got {combine!r}")
    d = ts[0].dtype
    _need(not (d.is_bool and combine in ("add", "max", "min")),
          f"npu.atomic_rmw {combine} is not defined on bool memory")
    _need(not (d.is_float and combine in ("and", "or", "xor")),
          f"npu.atomic_rmw {combine} is bitwise: integer or bool memory only, got {d}")
    return (_offsets(ts[1]).with_dtype(d),)


def _block_operands(ts, attrs, extra: int):
    bs = tuple(attrs["block_shape"])
    r = len(bs)
    _need(len(ts) == 1 + 3 * r + extra, f"block pointer of rank {r} needs {1 + 3 * r + extra} operands")
    p = _ptr(ts[0])
    for t in ts[1:1 + 3 * r]:
        _need(isinstance(t, TensorType) and t.is_scalar and t.dtype.is_int,
              f"block pointer shape/strides/offsets must be integer scalars, got {t}")
    for ax in attrs.get("boundary_check", ()):
        _need(0 <= ax < r, f"boundary_check axis {ax} out of range for rank {r}")
    return p, tensor(bs, p.dtype)


def _rule_block_load(ts, attrs):
    _need(attrs.get("padding", "zero") in ("zero", "nan"), "padding must be 'zero' or 'nan'")
    p, tile = _block_operands(ts, attrs, 0)
    _need(attrs.get("padding", "zero") == "zero" or p.dtype.is_float,
          f"padding 'nan' needs float memory, got {p.dtype}")
    return (tile,)


def _rule_block_store(ts, attrs):
    _, tile = _block_operands(ts, attrs, 1)
    _need(ts[-1] == tile, f"stored block must be {tile}, got {ts[-1]}")
    return ()


def _rule_none(ts, attrs):
    return ()


def _rule_assert(ts, attrs):
    _need(len(ts) == 1 and isinstance(ts[0], TensorType) and ts[0].dtype.name == "i1",
          f"npu.assert takes one bool scalar or tile, got {list(map(str, ts))}")
    _need(isinstance(attrs.get("message"), str), "npu.assert needs a 'message' string")
    _need(attrs.get("error", "assert") in ("assert", "overflow"),
          "npu.assert 'error' is 'assert' or 'overflow'")
    return ()


def _rule_handoff(ts, attrs):
    _need(len(ts) == 1, "npu.handoff takes 1 operand")
    return (_tensor(ts[0], "operand"),)


def _rule_for(ts, attrs):
    _need(len(ts) >= 3, "scf.for takes (lb, ub, step, *init)")
    for t in ts[:3]:
        _need(isinstance(t, TensorType) and t.is_scalar and t.dtype.is_int,
              f"loop bounds must be integer scalars, got {t}")
    return tuple(ts[3:])


def _rule_if(ts, attrs):
    # Result types are those both regions yield; checked by the verifier.
    _need(len(ts) == 1 and isinstance(ts[0], TensorType) and ts[0].is_scalar
          and ts[0].dtype == bool_, f"scf.if takes one i1 scalar condition, got "
          f"{', '.join(map(str, ts)) or 'nothing'}")
    return None


def _rule_while(ts, attrs):
    _need(len(ts) >= 1 and isinstance(ts[0], TensorType) and ts[0].is_scalar
          and ts[0].dtype == bool_, "scf.while takes (cond: i1 scalar, *init)")
    return tuple(ts[1:])


def _rule_fused(ts, attrs):
    # Result types are those yielded by the region; checked by the verifier.
    return None


# --- one record per kind ------------------------------------------------------------------
_UN = ("x",)
_BIN = ("lhs", "rhs")
# kind: (family, operands, required attrs, domain, vec_op)
_TABLE = {
    Kind.RETURN: ("structure", (), (), ANY, None),
    Kind.FOR: ("structure", ("lb", "ub", "step", "*init"), (), ANY, None),
    Kind.YIELD: ("structure", ("*values",), (), ANY, None),
    Kind.IF: ("structure", ("cond",), (), ANY, None),
    Kind.WHILE: ("structure", ("cond", "*init"), (), ANY, None),
    Kind.FUSED: ("structure", ("*inputs",), (), ANY, None),
    Kind.CONSTANT: ("constant", (), ("value", "dtype"), ANY, None),
    Kind.PROGRAM_ID: ("index", (), ("axis",), ANY, None),
    Kind.NUM_PROGRAMS: ("index", (), ("axis",), ANY, None),
    Kind.ARANGE: ("index", (), ("start", "end"), ANY, "dup"),
    Kind.ADD: ("binary", _BIN, (), NUMBER, "add"),
    Kind.SUB: ("binary", _BIN, (), NUMBER, "sub"),
    Kind.MUL: ("binary", _BIN, (), NUMBER, "mul"),
    Kind.DIV: ("binary", _BIN, (), FLOAT, "div"),
    Kind.IDIV: ("binary", _BIN, (), INT, "div"),
    Kind.REM: ("binary", _BIN, (), NUMBER, "div"),
    Kind.POW: ("binary", _BIN, (), FLOAT, "exp"),
    Kind.MAXIMUM: ("binary", _BIN, (), NUMBER, "max"),
    Kind.MINIMUM: ("binary", _BIN, (), NUMBER, "min"),
    Kind.AND: ("binary", _BIN, (), INT_OR_BOOL, "and"),
    Kind.OR: ("binary", _BIN, (), INT_OR_BOOL, "or"),
    Kind.XOR: ("binary", _BIN, (), INT_OR_BOOL, "and"),
    Kind.SHL: ("binary", _BIN, (), INT, "and"),
    Kind.SHR: ("binary", _BIN, (), INT, "and"),
    Kind.CMP: ("compare", _BIN, ("predicate",), ANY, "cmp"),
    Kind.SELECT: ("select", ("cond", "true_value", "false_value"), (), ANY, "select"),
    Kind.NEG: ("unary", _UN, (), NUMBER, "neg"),
    Kind.NOT: ("unary", _UN, (), INT_OR_BOOL, "and"),
    Kind.ABS: ("unary", _UN, (), NUMBER, "abs"),
    Kind.EXP: ("unary", _UN, (), FLOAT, "exp"),
    Kind.EXP2: ("unary", _UN, (), FLOAT, "exp"),
    Kind.LOG: ("unary", _UN, (), FLOAT, "log"),
    Kind.LOG2: ("unary", _UN, (), FLOAT, "log"),
    Kind.SQRT: ("unary", _UN, (), FLOAT, "sqrt"),
    Kind.RSQRT: ("unary", _UN, (), FLOAT, "rsqrt"),
    Kind.SIN: ("unary", _UN, (), FLOAT, "tanh"),
    Kind.COS: ("unary", _UN, (), FLOAT, "tanh"),
    Kind.FLOOR: ("unary", _UN, (), FLOAT, "cast"),
    Kind.CEIL: ("unary", _UN, (), FLOAT, "cast"),
    Kind.SIGMOID: ("unary", _UN, (), FLOAT, "sigmoid"),
    Kind.TANH: ("unary", _UN, (), FLOAT, "tanh"),
    Kind.ERF: ("unary", _UN, (), FLOAT, "tanh"),
    Kind.GELU: ("unary", _UN, (), FLOAT, "gelu"),
    Kind.SILU: ("unary", _UN, (), FLOAT, "silu"),
    Kind.CAST: ("cast", _UN, ("dtype",), ANY, "cast"),
    Kind.BITCAST: ("cast", _UN, ("dtype",), ANY, "copy"),
    Kind.SPLAT: ("shape", _UN, ("shape",), ANY, "dup"),
    Kind.BROADCAST: ("shape", _UN, ("shape",), ANY, "copy"),
    Kind.RESHAPE: ("shape", _UN, ("shape",), ANY, "copy"),
    Kind.TRANS: ("shape", _UN, ("perm",), ANY, "copy"),
    Kind.REDUCE: ("reduce", _UN, ("kind", "axis"), ANY, None),
    Kind.SCAN: ("reduce", _UN, ("kind", "axis"), ANY, "cumsum"),
    Kind.SORT: ("reduce", _UN, ("axis",), ANY, "sort"),
    Kind.TOPK: ("reduce", _UN, ("k", "axis"), ANY, "topk"),
    Kind.GATHER: ("reduce", ("src", "index"), ("axis",), ANY, "gather"),
    # costed as one Vector pass over the tiles (the combine body's ops are not costed)
    Kind.REDUCE_COMBINE: ("reduce", ("*inputs",), ("axis",), ANY, "sum"),
    Kind.SCAN_COMBINE: ("reduce", ("*inputs",), ("axis", "reverse"), ANY, "cumsum"),
    # costed as one elementwise Vector pass over the result (the function's ops are not)
    Kind.MAP_ELEMENTWISE: ("reduce", ("*inputs",), ("dtypes",), ANY, "copy"),
    Kind.DOT: ("cube", ("a", "b", "acc?"), (), ANY, None),
    Kind.LOAD: ("memory", ("ptr", "offsets", "mask?", "other?"), (), ANY, None),
    Kind.STORE: ("memory", ("ptr", "offsets", "value", "mask?"), (), ANY, None),
    Kind.BLOCK_LOAD: ("memory", ("ptr", "*layout"), ("block_shape",), ANY, None),
    Kind.BLOCK_STORE: ("memory", ("ptr", "*layout", "value"), ("block_shape",), ANY, None),
    Kind.ATOMIC_RMW: ("memory", ("ptr", "offsets", "value", "mask?", "cmp?"), (), ANY, None),
    Kind.HANDOFF: ("transfer", _UN, (), ANY, None),
    Kind.PRINT: ("debug", ("*values",), (), ANY, None),
    Kind.ASSERT: ("debug", ("cond",), ("message",), ANY, None),
}
# The Vector instruction of a reduction, by its ``kind`` attribute.
REDUCE_VEC_OP = {"sum": "sum", "prod": "sum", "max": "reduce_max", "min": "reduce_min",
                 "argmax": "argmax", "argmin": "argmax"}
_DOMAIN = {k: row[3] for k, row in _TABLE.items()}
_SWAPPABLE = frozenset({Kind.ADD, Kind.MUL, Kind.AND, Kind.OR, Kind.XOR})

_RULES = {
    Kind.RETURN: _rule_none, Kind.YIELD: _rule_none, Kind.FOR: _rule_for,
    Kind.FUSED: _rule_fused, Kind.IF: _rule_if, Kind.WHILE: _rule_while,
    Kind.CONSTANT: _rule_constant, Kind.PROGRAM_ID: _rule_program_id,
    Kind.NUM_PROGRAMS: _rule_program_id, Kind.ARANGE: _rule_arange,
    Kind.CMP: _rule_cmp, Kind.SELECT: _rule_select, Kind.CAST: _rule_cast, Kind.BITCAST: _rule_bitcast,
    Kind.SPLAT: _rule_splat, Kind.BROADCAST: _rule_broadcast, Kind.RESHAPE: _rule_reshape,
    Kind.TRANS: _rule_trans, Kind.REDUCE: _rule_reduce, Kind.SCAN: _rule_scan,
    Kind.SORT: _rule_sort, Kind.TOPK: _rule_topk, Kind.GATHER: _rule_gather, Kind.DOT: _rule_dot,
    Kind.LOAD: _rule_load, Kind.STORE: _rule_store, Kind.BLOCK_LOAD: _rule_block_load,
    Kind.BLOCK_STORE: _rule_block_store, Kind.ATOMIC_RMW: _rule_atomic_rmw,
    Kind.PRINT: _rule_none, Kind.ASSERT: _rule_assert, Kind.HANDOFF: _rule_handoff,
    Kind.REDUCE_COMBINE: _rule_combine(Kind.REDUCE_COMBINE),
    Kind.SCAN_COMBINE: _rule_combine(Kind.SCAN_COMBINE),
    Kind.MAP_ELEMENTWISE: _rule_map,
}
for _k, (_family, *_) in _TABLE.items():
    if _family == "binary":
        _RULES[_k] = _rule_binary(_k)
    elif _family == "unary":
        _RULES[_k] = _rule_unary(_k)

_IMPURE = {Kind.RETURN, Kind.YIELD, Kind.FOR, Kind.IF, Kind.WHILE, Kind.LOAD, Kind.STORE,
           Kind.BLOCK_LOAD, Kind.BLOCK_STORE, Kind.ATOMIC_RMW, Kind.PRINT, Kind.ASSERT,
           Kind.HANDOFF}
# Loads only read; they are kept impure so DCE/CSE never move them across stores.

_REGIONS = {Kind.FOR: 1, Kind.FUSED: 1, Kind.WHILE: 1, Kind.IF: 2, Kind.REDUCE_COMBINE: 1,
            Kind.SCAN_COMBINE: 1, Kind.MAP_ELEMENTWISE: 1}
INFO = {k: OpInfo(k, family=family, operands=operands, attrs=attrs, domain=domain,
                  swappable=k in _SWAPPABLE, vec_op=vec_op, pure=k not in _IMPURE,
                  terminator=k in (Kind.RETURN, Kind.YIELD),
                  regions=_REGIONS.get(k, 0), type_rule=_RULES[k])
        for k, (family, operands, attrs, domain, vec_op) in _TABLE.items()}

# Control flow with regions the schedule looks into (npu.fused runs as one op): loops
# repeat their body, scf.if runs one of its two regions.
LOOPS = frozenset({Kind.FOR, Kind.WHILE})
CONTROL = LOOPS | {Kind.IF}
# Ops whose region runs as part of the op (the schedule, the simulator and timing-only
# runs see one op): a fused loop nest, a combine function.
OWN_REGION = frozenset({Kind.FUSED, Kind.REDUCE_COMBINE, Kind.SCAN_COMBINE,
                        Kind.MAP_ELEMENTWISE})
COMBINE = frozenset({Kind.REDUCE_COMBINE, Kind.SCAN_COMBINE})

BINARY = frozenset(k for k, i in INFO.items() if i.family == "binary")
UNARY = frozenset(k for k, i in INFO.items() if i.family == "unary")
# Ops that map one element to one element: what the fusion pass may group.
ELEMENTWISE = BINARY | UNARY | frozenset({Kind.CMP, Kind.SELECT, Kind.CAST, Kind.SPLAT,
                                          Kind.BROADCAST, Kind.BITCAST})


def vec_op_name(op) -> str | None:
    """The Vector instruction ``op`` lowers to (``OpInfo.vec_op``; a reduction's by its
    ``kind`` attribute).

    Example::

        >>> INFO[Kind.MAXIMUM].vec_op
        'max'
    """
    if op.kind is Kind.REDUCE:
        return REDUCE_VEC_OP[op.attrs["kind"]]
    return INFO[op.kind].vec_op


def infer_types(kind: Kind, operand_types, attrs) -> tuple | None:
    """Result types of ``kind`` applied to ``operand_types``; raises TypeRuleError."""
    return INFO[kind].type_rule(tuple(operand_types), attrs)
