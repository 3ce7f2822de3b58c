"""The IR's objects: SSA values, the one ``Op`` class, blocks and kernel functions.

An op is a kind (``ir.ops.Kind``), operands, results, attributes, regions and a source
location.  A region is a single ``Block`` whose arguments are its entry values (a loop's
induction variable and carried values).  ``Function`` is a kernel: typed arguments and a
body block ending in ``func.return``.  Every value keeps its use list (``Value.uses``):
passes change operands through ``Op.set_operand`` / ``Value.replace_all_uses_with`` and take
ops out with ``Op.erase`` (or ``drop_uses``), and the verifier checks the lists.

Example::

    >>> from npujit.ir import Builder, Function, Kind, types as T
    >>> fn = Function("k", [T.PtrType(T.float32)], ["x"])
    >>> b = Builder(fn.body)
    >>> pid = b.op(Kind.PROGRAM_ID, [], {"axis": 0})
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

from .ops import INFO, Kind


@dataclass(frozen=True)
class Loc:
    """Where an op came from in the user's Python source."""

    file: str
    line: int
    col: int = 0

    def __str__(self) -> str:
        return f"{self.file}:{self.line}"


UNKNOWN_LOC = Loc("<unknown>", 0)


class Value:
    """An SSA value: the result of an op or an argument of a block.

    ``uses`` lists the ``(op, operand number)`` pairs that read it, kept up to date by
    ``Op``: an op registers its operands when it is made and when they are set, and drops
    them when it is erased.
    """

    __slots__ = ("type", "owner", "index", "name", "_uses")

    def __init__(self, type, owner, index: int, name: str | None = None):
        self.type = type
        self.owner = owner      # the defining Op, or the Block for a block argument
        self.index = index      # result number, or argument number
        self.name = name        # optional hint for printing (kernel argument names)
        # (id(op), operand number) -> (op, operand number), in the order the reads came
        self._uses: dict[tuple[int, int], tuple[Op, int]] = {}

    @property
    def op(self) -> "Op | None":
        """The defining op, or None for a block argument."""
        return self.owner if isinstance(self.owner, Op) else None

    @property
    def uses(self) -> list[tuple["Op", int]]:
        """``(op, operand number)`` for every read of this value, in the order the reads
        were made (a copy: rewriting the uses while looping over them is safe).

        Example::

            >>> from npujit.ir import Builder, Function, Kind, types as T
            >>> fn = Function("k", [T.scalar(T.int32)], ["n"])
            >>> n = fn.args[0]
            >>> add = Builder(fn.body).create(Kind.ADD, [n, n], {})
            >>> [(u.kind.value, i) for u, i in n.uses]
            [('npu.add', 0), ('npu.add', 1)]
        """
        return list(self._uses.values())

    @property
    def users(self) -> list["Op"]:
        """The ops that read this value, each once, in the order of ``uses``."""
        return list({id(u): u for u, _ in self._uses.values()}.values())

    def replace_all_uses_with(self, new: "Value") -> None:
        """Every op that reads this value reads ``new`` instead.

        Example::

            >>> from npujit.ir import Builder, Function, Kind, types as T
            >>> fn = Function("k", [T.scalar(T.int32)] * 2, ["n", "m"])
            >>> n, m = fn.args
            >>> add = Builder(fn.body).create(Kind.ADD, [n, n], {})
            >>> n.replace_all_uses_with(m)
            >>> add.operands == (m, m), n.uses
            (True, [])
        """
        if new is self:
            return
        for key, (user, i) in self._uses.items():      # one pass: the uses move whole
            user._operands = (*user._operands[:i], new, *user._operands[i + 1:])
            new._uses[key] = (user, i)
        self._uses.clear()

    def __repr__(self) -> str:
        return f"<Value {self.type} #{self.index} of {getattr(self.owner, 'kind', 'block')}>"


class Op:
    """One operation.  ``kind`` says what it is; tables in ``ir.ops`` say what that means.

    ``operands`` is a tuple: change it with ``set_operand`` or by assigning a new sequence,
    so the values' use lists (``Value.uses``) follow; ``erase`` takes the op out of its
    block and drops its uses (and those of the ops in its regions).
    """

    __slots__ = ("kind", "_operands", "results", "attrs", "regions", "loc", "parent")

    def __init__(self, kind: Kind, operands, result_types, attrs=None, regions=(), loc=None):
        self.kind = kind
        self._operands: tuple = ()
        self.operands = operands
        self.results = [Value(t, self, i) for i, t in enumerate(result_types)]
        self.attrs = dict(attrs or {})
        self.regions = list(regions)
        self.loc = loc or UNKNOWN_LOC
        self.parent: Block | None = None
        for r in self.regions:
            r.parent_op = self

    @property
    def operands(self) -> tuple:
        return self._operands

    @operands.setter
    def operands(self, values) -> None:
        self._drop_uses()
        self._operands = tuple(values)
        for i, v in enumerate(self._operands):
            v._uses[(id(self), i)] = (self, i)

    def set_operand(self, i: int, value: Value) -> None:
        """Operand ``i`` becomes ``value`` (the old value loses this use)."""
        old = self._operands[i]
        if old is value:
            return
        self._forget(old, i)
        self._operands = (*self._operands[:i], value, *self._operands[i + 1:])
        value._uses[(id(self), i)] = (self, i)

    def _forget(self, value: Value, i: int) -> None:
        value._uses.pop((id(self), i), None)

    def _drop_uses(self) -> None:
        for i, v in enumerate(self._operands):
            self._forget(v, i)

    def drop_uses(self) -> None:
        """Forget this op's reads, and those of every op in its regions (it is going
        away; its operands stay readable)."""
        for op in self.walk():
            op._drop_uses()

    def erase(self) -> None:
        """Take this op out of its block and drop its uses (see ``drop_uses``); its
        results must have no uses left."""
        for r in self.results:
            if r._uses:
                raise ValueError(f"cannot erase {self.kind.value} at {self.loc}: its result "
                                 f"#{r.index} is still read by {r.uses[0][0].kind.value}")
        if self.parent is not None and self in self.parent.ops:
            self.parent.ops.remove(self)
        self.parent = None
        self.drop_uses()

    @property
    def result(self) -> Value:
        assert len(self.results) == 1, f"{self.kind.value} has {len(self.results)} results"
        return self.results[0]

    @property
    def info(self):
        return INFO[self.kind]

    def operand(self, name: str) -> "Value | None":
        """The operand called ``name`` in the kind's record (``ir/ops.py`` ``OpInfo``), or
        None for an optional operand this op does not have.

        Example::

            >>> load.operand("mask") is load.operands[2]      # doctest: +SKIP
            True
        """
        i = INFO[self.kind].operand_index(name, len(self.operands))
        return None if i is None else self.operands[i]

    def block_layout(self, values=None) -> tuple[list, list, list]:
        """A block access's ``*layout`` operands as (shape, strides, offsets), one entry
        per block axis; ``values``: the operands' values in operand order (an
        interpreter's), instead of the operands.

        Example::

            >>> shape, strides, offsets = block_load.block_layout()     # doctest: +SKIP
        """
        if self.kind not in (Kind.BLOCK_LOAD, Kind.BLOCK_STORE):
            raise TypeError(f"{self.kind.value} is not a block access")
        r = len(self.attrs["block_shape"])
        vals = list(self.operands if values is None else values)
        first = self.info.operand_index("layout", len(vals))
        layout = vals[first:first + 3 * r]
        return layout[:r], layout[r:2 * r], layout[2 * r:]

    @property
    def body(self) -> "Block":
        return self.regions[0]

    def walk(self) -> Iterator["Op"]:
        """This op, then every op nested in its regions, in order."""
        yield self
        for r in self.regions:
            yield from r.walk()

    def __repr__(self) -> str:
        return f"<Op {self.kind.value} at {self.loc}>"


def loop_carried(op: Op) -> list[tuple[Value, Value, Value, Value]]:
    """``(init, block argument, yielded next value, result)`` per carried value of a loop:
    ``scf.for`` (operands ``lb, ub, step, *init``; body args ``iv, *carried``; yields the
    carried values) or ``scf.while`` (operands ``cond, *init``; body args ``*carried``;
    yields ``cond, *carried``).  ``[]`` for any other op.

    Example::

        >>> [(i.type, r.type) for i, a, n, r in loop_carried(for_op)]   # doctest: +SKIP
        [(tensor<16xf32>, tensor<16xf32>)]
    """
    if op.kind is Kind.FOR:
        inits, args, skip = op.operands[3:], op.body.args[1:], 0
    elif op.kind is Kind.WHILE:
        inits, args, skip = op.operands[1:], op.body.args, 1
    else:
        return []
    term = op.body.terminator
    nexts = term.operands[skip:] if term is not None else [None] * len(inits)
    return list(zip(inits, args, nexts, op.results))


def loop_init_index(op: Op) -> int:
    """Where a loop's inits start among its operands (``scf.for`` 3, ``scf.while`` 1)."""
    return 3 if op.kind is Kind.FOR else 1


def loop_yield_index(op: Op) -> int:
    """Where a loop's carried values start in its body's ``scf.yield`` (``scf.while``
    yields its next condition first)."""
    return 1 if op.kind is Kind.WHILE else 0


def loop_arg_index(op: Op) -> int:
    """Where a loop's carried values start among its body arguments (after ``scf.for``'s
    induction variable)."""
    return 1 if op.kind is Kind.FOR else 0


class Block:
    """A straight-line list of ops with typed entry arguments (the body of a region)."""

    __slots__ = ("args", "ops", "parent_op")

    def __init__(self, arg_types=(), arg_names=None):
        names = arg_names or [None] * len(arg_types)
        self.args = [Value(t, self, i, n) for i, (t, n) in enumerate(zip(arg_types, names))]
        self.ops: list[Op] = []
        self.parent_op: Op | None = None

    def append(self, op: Op) -> Op:
        op.parent = self
        self.ops.append(op)
        return op

    def insert(self, index: int, op: Op) -> Op:
        op.parent = self
        self.ops.insert(index, op)
        return op

    @property
    def terminator(self) -> Op | None:
        return self.ops[-1] if self.ops and self.ops[-1].info.terminator else None

    def walk(self) -> Iterator[Op]:
        for op in list(self.ops):
            yield from op.walk()


def ancestor_in(op: Op, block: Block) -> Op | None:
    """The op of ``block`` that is ``op`` or contains it, or None."""
    while op is not None:
        if op.parent is block:
            return op
        parent = op.parent.parent_op if op.parent is not None else None
        op = parent
    return None


def prune_uses(fn: "Function") -> int:
    """Forget the uses by ops that are not in ``fn`` -- ops a trace made and did not keep
    (a loop body traced again, a branch given up) -- so the passes see only real reads;
    returns how many went.

    Example::

        >>> prune_uses(fn)                  # doctest: +SKIP
        0
    """
    ops = {id(op) for op in fn.walk()}
    gone = 0
    blocks = [fn.body] + [r for op in fn.walk() for r in op.regions]
    for block in blocks:
        for v in [*block.args, *(r for op in block.ops for r in op.results)]:
            stale = [key for key in v._uses if key[0] not in ops]
            for key in stale:
                del v._uses[key]
            gone += len(stale)
    return gone


class Function:
    """A kernel in IR form: named, typed arguments and a body that ends in ``func.return``.

    ``attrs`` holds facts about the specialisation (constexpr values, options) for printing.
    """

    def __init__(self, name: str, arg_types, arg_names=None, attrs=None):
        self.name = name
        self.body = Block(arg_types, list(arg_names) if arg_names else None)
        self.attrs = dict(attrs or {})

    @property
    def args(self) -> list[Value]:
        return self.body.args

    def walk(self) -> Iterator[Op]:
        return self.body.walk()
