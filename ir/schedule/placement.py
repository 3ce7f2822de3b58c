"""place-and-assign-pipes: give every op its pipe and every tile result its memory scope.

The model (docs/npu-facts.md §A1 dataflows, §A7 positions, §A8 Cube path):

* Vector work: ``GM -MTE2-> UB -VECTOR-> UB -MTE3-> GM``.  Loads are MTE2 into UB,
  elementwise/reduce/fused/shape ops run on VECTOR in UB, stores are MTE3 out of UB.
* Cube work: ``GM -MTE2-> L1 -MTE1-> L0A/L0B -CUBE-> L0C -FIXP-> GM``.  A load whose
  result feeds a dot operand lands in L1; the dot's MTE1 stage (``operand_scopes``) moves
  it to L0A/L0B; the dot and its accumulator live in L0C; a store of L0C is FIXP.  A
  coupled part (910-like) has no FixPipe: the store is MTE3 and its ``operand_scopes =
  ["UB"]`` stage moves L0C to UB on the VECTOR pipe first.
  A zero-filled accumulator is ``Mmad``'s ``cmatrixInitVal`` (CUBE, no instruction) and a
  cast of a dot result that is only stored is FixPipe's on-the-fly quantisation (§A8).
* What the Cube and the Vector unit would share gets one per side first: a load read
  as a dot operand and by other work is loaded twice (L1 and UB), and a dot
  accumulator's zero init that CSE shared with a Vector value gets its own splat.
* Scalar math (program ids, constants, loop bounds) is SCALAR, and so are affine address
  tiles (``base + arange`` offsets and ``offs < n`` masks used only by loads/stores): the
  scalar unit computes DataCopy(Pad) parameters from them (§A6), nothing goes to UB.
  A 0-d value computed from a tile (a reduction's result and what is computed from it)
  stays on VECTOR in UB, so a row statistic does not bounce through the scalar unit.

Example::

    %10 = "npu.load"(...) {pipe = "MTE2", scope = "UB"} : ... -> tensor<1024xf16>
    %14 = "npu.dot"(%12, %13, %arg13) {pipe = "CUBE", scope = "L0C", ...} : ...
"""
from __future__ import annotations

from npujit.target import Pipe, Scope

from ..core import Function, Op, loop_carried, loop_init_index
from ..ops import CONTROL, LOOPS, Kind
from .model import CORE_ATTR, GM_LOADS, clone_op, is_tile, scheduled_ops

# (scf.if / scf.while: the scalar unit evaluates the condition and branches.)
_SCALAR_KINDS = (Kind.CONSTANT, Kind.PROGRAM_ID, Kind.NUM_PROGRAMS, Kind.PRINT, Kind.ASSERT,
                 Kind.FOR, Kind.WHILE, Kind.IF)
_STORES = (Kind.STORE, Kind.BLOCK_STORE)


class PlaceAndAssignPipes:
    """Sets ``pipe`` on every scheduled op, ``scope`` on ops with tile results, the dot's
    ``operand_scopes`` and the function's ``npu.core``.

    Example::

        >>> PlaceAndAssignPipes().run(fn, CompileContext(spec=ASCEND_910B_LIKE))   # doctest: +SKIP
        True
    """

    name = "place-and-assign-pipes"

    def run(self, fn: Function, ctx) -> bool:
        spec = ctx.spec
        _own_accumulator_inits(fn)
        _own_vector_loads(fn)
        ops = list(scheduled_ops(fn.body))
        l1, l0c = _cube_values(ops)
        producer_pipe: dict[int, str] = {}
        has_dot = False
        # No FixPipe on a coupled part: L0C leaves through the Vector unit into UB (§A2).
        out_pipe = "FIXP" if "FIXP" in spec.pipes.get("AIC", ()) else "VECTOR"
        addresses = _address_ops(ops, l1)
        for op in ops:
            for v in op.operands:     # an if's result made on a tile pipe is a tile's
                if v.op is not None and v.op.kind is Kind.IF:
                    made = v.op.regions[0].terminator.operands[v.index], \
                        v.op.regions[1].terminator.operands[v.index]
                    if any(producer_pipe.get(id(m), "SCALAR") != "SCALAR" for m in made):
                        producer_pipe[id(v)] = "VECTOR"
            if id(op) in addresses:
                pipe, scope = "SCALAR", None
            else:
                pipe, scope = _place(op, l1, l0c, producer_pipe, out_pipe)
            op.attrs["pipe"] = Pipe(pipe)
            if scope is not None:
                op.attrs["scope"] = Scope(scope)
            if op.kind is Kind.DOT:
                op.attrs["operand_scopes"] = [Scope.L0A, Scope.L0B]
                has_dot = True
            if op.kind in _STORES and pipe == "MTE3" and id(_stored(op)) in l0c:
                op.attrs["operand_scopes"] = [Scope.UB]  # staged L0C -> UB by VECTOR
            for r in op.results:
                producer_pipe[id(r)] = pipe
            for init, arg, _, _ in loop_carried(op):
                producer_pipe[id(arg)] = producer_pipe.get(id(init), "SCALAR")

        # One program runs on one core kind (§A2): a Cube kernel on the AIC, else an AIV.
        fn.attrs[CORE_ATTR] = "AIC" if has_dot else "AIV"
        return True


# Ops an affine address or bound mask is made of (base + arange, offs < n).
_AFFINE_KINDS = frozenset({Kind.ARANGE, Kind.SPLAT, Kind.BROADCAST, Kind.RESHAPE, Kind.ADD,
                           Kind.SUB, Kind.MUL, Kind.CAST, Kind.CMP, Kind.AND})
# Integer ops the scalar unit computes on scalars (``pid % num_pid_in_group``,
# ``min(num_pid_m - first_pid_m, GROUP_SIZE_M)``): with scalar operands, a scalar result.
_SCALAR_MATH = _AFFINE_KINDS | {Kind.IDIV, Kind.REM, Kind.MAXIMUM, Kind.MINIMUM, Kind.OR,
                                Kind.XOR, Kind.SHL, Kind.SHR, Kind.SELECT, Kind.NEG,
                                Kind.NOT, Kind.ABS}
# (op kind, operand index) uses that only address memory: the offsets and mask of a load,
# a store and an atomic.
_ADDRESS_USES = {(Kind.LOAD, 1), (Kind.LOAD, 2), (Kind.STORE, 1), (Kind.STORE, 3),
                 (Kind.ATOMIC_RMW, 1), (Kind.ATOMIC_RMW, 3)}


def _address_kind(op: Op, outer: dict) -> bool:
    """Whether ``op`` is of a kind an address is made of: an affine one, or an integer
    division or remainder by one value for every lane (a panel-major address,
    ``(c // P) * panel + c % P``: the scalar unit splits a row's run at the panel
    boundaries, a copy per panel).  ``outer`` maps a fused region's arguments to the
    values they stand for."""
    if op.kind in _AFFINE_KINDS:
        return True
    return op.kind in (Kind.IDIV, Kind.REM) and op.result.type.dtype.is_int and \
        _uniform(op.operands[1], outer)


def _uniform(v, outer: dict) -> bool:
    """Whether every lane of ``v`` is one scalar (a rank-0 value or a splat of one)."""
    v = outer.get(id(v), v)
    if not is_tile(v) or v.type.rank == 0:
        return True
    owner = v.op
    return owner is not None and owner.kind in (Kind.SPLAT, Kind.BROADCAST) and \
        _uniform(owner.operands[0], outer)


def _address_ops(ops: list[Op], l1: set) -> set:
    """Ids of ops whose tiles are affine in ``arange`` and scalars and only address memory
    (``offs = base + nl.arange(0, B)``, ``mask = offs < n``).  The scalar unit turns them
    into DataCopy/DataCopyPad parameters (docs/npu-facts.md §A6, §A7), so they are SCALAR
    work with no tile in UB and the loads do not wait for the Vector unit.  So is the
    ``other=`` splat of a load into L1 (``l1``): MTE2 fills the L1 slot with that value
    before the copy (``InitConstValue``, sim/lower.py), no Vector tile.

    A 2-D tile made of such parts and of per-row values (``[M, 1]`` tiles, e.g. gathered
    token rows ``tok[:, None] * stride + cols[None, :]`` and ``valid[:, None] & (cols <
    H)[None, :]``) is one descriptor per row: a row's base and a run along the row, what
    a DataCopy per row takes.  It is SCALAR work too; the ``[M, 1]`` values stay where
    they are made (the copy's per-row reads, sim/split.py).  So is a pointer tile a loop
    carries and advances (``a_ptrs += BLOCK_K * stride_ak`` over Triton's wrapped ``% M``
    rows): the scalar unit moves each row's descriptor by the step.  The CPU tiers run
    the same IR, the advance as they always did."""
    candidates = {id(arg): (loop, j) for loop in ops if loop.kind is Kind.FOR
                  for j, (_, arg, _, _) in enumerate(loop_carried(loop))
                  if is_tile(arg) and arg.type.rank > 0 and arg.type.dtype.is_int}
    while True:
        addresses, bad = _addresses(ops, l1, candidates)
        if not bad:
            return addresses
        for a in bad:
            del candidates[a]


def _addresses(ops: list[Op], l1: set, candidates: dict) -> tuple[set, set]:
    """``_address_ops`` with ``candidates`` (loop-carried tiles) taken as address work;
    also the candidates that are not (their init, next value or a reader is not)."""
    scalar_ok, affine = _affine_values(ops, candidates)
    bad = {a for a, (loop, j) in candidates.items()
           if not all(id(v) in affine for v in loop_carried(loop)[j][::2])}
    # a carried address tile's init and next value feed only it (the loop, the yield)
    carried_uses = set()
    for a, (loop, j) in candidates.items():
        res = loop_carried(loop)[j][3]
        if a in bad or not all((u.kind, i) in _ADDRESS_USES for u, i in res.uses):
            bad.add(a)
            continue
        carried_uses.add((id(loop), loop_init_index(loop) + j))
        carried_uses.add((id(loop.body.terminator), j))
    addresses: set = set()
    for op in reversed(ops):
        results = [r for r in op.results if is_tile(r) and r.type.rank > 0]
        uses = [use for r in results for use in r.uses]
        fill = all(_uniform(r, {}) for r in results)      # a fill value, for MTE2 into L1
        if results and uses and all(id(r) in affine for r in results) and all(
                u is not None and ((u.kind, i) in _ADDRESS_USES or id(u) in addresses
                                   or (id(u), i) in carried_uses
                                   or (fill and (u.kind, i) == (Kind.LOAD, 3)
                                       and id(u.result) in l1))
                for u, i in uses):
            addresses.add(id(op))
    for a, (loop, j) in candidates.items():
        init, arg, nxt, _ = loop_carried(loop)[j]
        if a not in bad and not (
                init.op is not None and id(init.op) in addresses and nxt.op is not None
                and id(nxt.op) in addresses and all(
                    (u.kind, i) in _ADDRESS_USES or id(u) in addresses for u, i in arg.uses)):
            bad.add(a)
    return addresses, bad


def _affine_values(ops: list[Op], carried: dict) -> tuple[set, set]:
    """The forward half of ``_address_ops``: ids of scalar values the scalar unit makes,
    and of tiles of address kinds made from them (``carried``: loop-carried tiles taken
    as address work when their init is, as a pointer tile the loop advances is)."""
    scalar_ok: set = set()
    affine: set = set()

    def scalar(v) -> bool:
        return is_tile(v) and v.type.rank == 0 and (v.op is None or id(v) in scalar_ok)

    def per_row(v) -> bool:      # or per column: a run of one element per row
        return is_tile(v) and v.type.rank == 2 and 1 in v.type.shape

    for op in ops:
        ins = op.operands
        if op.kind in _SCALAR_KINDS or (op.kind in _SCALAR_MATH and all(
                scalar(v) for v in ins) and all(r.type.rank == 0 for r in op.results)):
            scalar_ok.update(id(r) for r in op.results)
        if op.kind is Kind.FOR:
            affine.update(id(arg) for init, arg, _, _ in loop_carried(op)
                          if id(arg) in carried and id(init) in affine)
        kinds_ok = _address_kind(op, {}) or (op.kind is Kind.FUSED and all(
            _address_kind(inner, dict(zip(map(id, op.body.args), op.operands)))
            for inner in op.body.ops[:-1]))
        if kinds_ok and all(scalar(v) or id(v) in affine for v in ins):
            affine.update(id(r) for r in op.results if is_tile(r) and r.type.rank > 0)
        elif kinds_ok and all(scalar(v) or id(v) in affine or per_row(v) for v in ins):
            affine.update(id(r) for r in op.results if is_tile(r) and r.type.rank == 2
                          and 1 not in r.type.shape)
    return scalar_ok, affine


def _own_accumulator_inits(fn: Function) -> None:
    """A dot accumulator carried by a loop gets a zero init of its own when CSE made its
    ``zeros`` one value with another's: ``acc = zeros(...); acc2 = zeros(...)`` of one
    shape and dtype, ``acc`` fed to ``dot`` and ``acc2`` to Vector work.  The shared
    splat would join both into L0C (``_cube_values`` follows an init to every loop that
    carries it), and the Vector unit cannot read L0C on a separated part.  (A zero init
    shared with other Vector work, ``maximum(acc + bias, 0.0)``, is left to allocate-
    buffers, which folds it into that work: carried.py ``_unstrand_l0c_splats``.)"""
    for loop in [op for op in scheduled_ops(fn.body) if op.kind in LOOPS]:
        dot_accs = {id(op.operands[2]) for op in loop.body.ops
                    if op.kind is Kind.DOT and len(op.operands) > 2}
        for j, (init, arg, _, _) in enumerate(loop_carried(loop)):
            index = loop_init_index(loop) + j
            if (id(arg) in dot_accs and init.op is not None and init.op.kind is Kind.SPLAT
                    and any(u.kind in LOOPS and i >= loop_init_index(u)
                            and (u, i) != (loop, index) for u, i in init.uses)):
                own = clone_op(init.op)
                loop.parent.insert(loop.parent.ops.index(loop), own)
                loop.set_operand(index, own.result)


def _own_vector_loads(fn: Function) -> None:
    """A load read both as a dot operand and by other work (``rs += sum(x, 1)`` beside
    ``acc = dot(x, w, acc)``) is loaded twice: into L1 for the Cube and into UB for the
    rest, as a hand-written kernel copies the tile into both.  The Vector unit cannot
    read L1 on a separated part; sharing the one L1 tile left its Vector readers with
    nothing handed over (the simulator's race check saw them read a buffer nothing wrote).
    The second load goes right after the first, so it reads the same memory."""
    for op in list(scheduled_ops(fn.body)):
        if op.kind not in GM_LOADS:
            continue
        uses = op.result.uses
        cube = [(u, i) for u, i in uses if u.kind is Kind.DOT and i < 2]
        rest = [(u, i) for u, i in uses if not (u.kind is Kind.DOT and i < 2)]
        if cube and rest:
            again = clone_op(op)
            op.parent.insert(op.parent.ops.index(op) + 1, again)
            for u, i in rest:
                u.set_operand(i, again.result)


def _cube_values(ops: list[Op]) -> tuple[set, set]:
    """Ids of values that live in L1 (dot operands) and in L0C (dot results, accumulators,
    their loop-carried aliases, zero inits and casts on the way out)."""
    l1, l0c = set(), set()
    for op in ops:
        if op.kind is Kind.DOT:
            l1.update(id(v) for v in op.operands[:2])
            l0c.update(id(v) for v in op.operands[2:])
            l0c.add(id(op.result))
    changed = True
    while changed:          # carried accumulators: init <-> block arg <-> yield <-> result
        changed = False
        for op in ops:
            if op.kind in CONTROL:
                for res, made in _region_sources(op):
                    group = {id(res)} | {id(v) for v in made}
                    if group & l0c and not group <= l0c and is_tile(res):
                        l0c |= group
                        changed = True
            elif (op.kind is Kind.CAST and id(op.operands[0]) in l0c
                  and id(op.result) not in l0c
                  and all(u.kind in _STORES for u in op.result.users)):
                l0c.add(id(op.result))
                changed = True
    return l1, l0c


def _region_sources(op: Op) -> list[tuple]:
    """(result or block argument, the values it takes) of a loop's carried values and an
    ``scf.if``'s results."""
    if op.kind is Kind.IF:
        yields = [r.terminator.operands for r in op.regions]
        return [(res, [y[i] for y in yields]) for i, res in enumerate(op.results)]
    return [(v, [init, nxt, res]) for init, arg, nxt, res in loop_carried(op)
            for v in (arg, res)]


def _stored(op: Op):
    return op.operands[2] if op.kind is Kind.STORE else op.operands[-1]


def _place(op: Op, l1: set, l0c: set, producer_pipe: dict,
           out_pipe: str) -> tuple[str, str | None]:
    k = op.kind
    if k in _SCALAR_KINDS:
        return "SCALAR", None
    if k in GM_LOADS:
        return "MTE2", "L1" if id(op.result) in l1 else "UB"
    if k in _STORES:
        return ("FIXP" if id(_stored(op)) in l0c and out_pipe == "FIXP" else "MTE3"), None
    if k is Kind.ATOMIC_RMW:    # the old values land in UB only when something reads them
        return "MTE3", "UB" if op.result.uses else None
    if k is Kind.DOT:
        return "CUBE", "L0C"
    if op.results and id(op.results[0]) in l0c:
        return (out_pipe if k is Kind.CAST else "CUBE"), "L0C"
    tiles = any(is_tile(v) and v.type.rank > 0 for v in list(op.results) + list(op.operands))
    from_tiles = any(producer_pipe.get(id(v), "SCALAR") != "SCALAR" for v in op.operands)
    if tiles or from_tiles or k is Kind.ARANGE:
        return "VECTOR", "UB"
    return "SCALAR", None
