"""``scf.if`` and ``scf.while`` as C++ ``if``/``else`` and ``while`` on the scalar unit.

The condition is a scalar the kernel already computed; results and carried values are
scalar variables declared before the statement and assigned at the end of each region
(all at once through temporaries, so ``a, b = b, a`` and a condition that reads a carried
value see the old values).  Tiles made before the statement and read inside it are
dequeued once before it (as for ``scf.for``); the schedule's flags that cross the region
are the op's own, set/waited around the statement.  An ``scf.if`` or ``scf.while`` that
yields or carries a tile is refused, naming the op (keep the value in a scalar, or store
it inside the branch).

Example (``if pid * BLOCK >= n: return``)::

    if (pid0 * 256 >= n) {
    } else {
        ...                                  // the rest of the kernel
    }
"""
from __future__ import annotations

from npujit.ir.core import loop_carried

from .lowering import cpp_type, not_lowered
from .values import Scalar, Tile


class ControlLowering:
    """The ``scf.if`` / ``scf.while`` part of ``KernelWriter``."""

    def _scalar_of(self, op, v, what: str) -> Scalar:
        s = self.sym(v)
        if not isinstance(s, Scalar):
            raise not_lowered(op, f"{what} that is a tile (keep it in a scalar, or store it "
                                  "inside the branch)")
        return s

    def _dequeue_used_in_regions(self, op) -> None:
        for region in op.regions:
            for inner in region.walk():
                for v in inner.operands:
                    s = self.syms.get(id(v))
                    if isinstance(s, Tile):
                        self.use_tile(s)

    def _assign_all(self, names: list, values: list) -> None:
        """``names[i] = values[i]`` for every i, each right side read before any write."""
        temps = []
        for name, s in zip(names, values):
            if s.expr == name:
                continue
            tmp = self.fresh(name + "_next")
            self.line(f"const {cpp_type(s.dtype)} {tmp} = {s.expr};")
            temps.append((name, tmp))
        for name, tmp in temps:
            self.line(f"{name} = {tmp};")

    def emit_if(self, op) -> None:
        cond = self._scalar_of(op, op.operands[0], "a condition")
        names = []
        for r in op.results:
            if getattr(r.type, "shape", ()) != ():
                raise not_lowered(op, "an if that yields a tile (keep the value in a scalar, "
                                      "or store it inside the branch)")
            name = self.fresh("if_result")
            self.line(f"{cpp_type(r.type.dtype)} {name}{{}};")
            names.append(name)
        self._dequeue_used_in_regions(op)
        self.emit_flags(op, "wait_flags")
        for header, region in ((f"if ({cond.expr}) {{", op.regions[0]),
                               ("} else {", op.regions[1])):
            self.line(header)
            with self.indented():
                self.emit_block(region)
                self._assign_all(names, [self._scalar_of(op, v, "a yielded value")
                                         for v in region.terminator.operands])
        self.line("}")
        for r, name in zip(op.results, names):
            self.syms[id(r)] = Scalar(name, r.type.dtype)
        self.emit_flags(op, "set_flags")

    def emit_while(self, op) -> None:
        names = []
        for init, arg, _, _ in loop_carried(op):
            s = self._scalar_of(op, init, "a while loop's carried value")
            name = self.fresh(arg.name or "carried")
            self.line(f"{cpp_type(arg.type.dtype)} {name} = {s.expr};")
            self.syms[id(arg)] = Scalar(name, arg.type.dtype)
            names.append(name)
        go = self.fresh("go")
        self.line(f"bool {go} = {self._scalar_of(op, op.operands[0], 'a condition').expr};")
        self._dequeue_used_in_regions(op)
        self.emit_flags(op, "pre_set_flags")
        self.emit_flags(op, "wait_flags")
        counter = self.fresh("while_iter")
        self.loop_slots.append(counter)
        self.loop_counter_used.append(False)
        self.loop_handoffs.append([])
        term = op.body.terminator
        with self.indented(), self.capture() as body_lines:
            self.emit_block(op.body)
            self._assign_all([go] + names, [self._scalar_of(op, v, "a carried value")
                                            for v in term.operands])
        self.close_loop(counter, f"while ({go}) {{", body_lines)
        self.drain_handoffs(counter, self.loop_handoffs.pop())
        for r, name in zip(op.results, names):
            self.syms[id(r)] = Scalar(name, r.type.dtype)
        self.emit_flags(op, "set_flags")
        self.emit_flags(op, "post_wait_flags")
