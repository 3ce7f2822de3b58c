"""Program ids, ``scf.for`` / ``scf.while`` loops with carried values, ``scf.if``, and
``npu.print``.

``scf.for`` is a Python ``for`` over ``range(lb, ub, step)`` (which already counts down
for a negative step and runs zero times when the bounds say so); the induction variable
is converted to the dtype of ``lb``.  Carried scalars are plain variables reassigned at
the end of each iteration, all at once (``a, b = b, a`` is a legal yield).  A carried
tile has a tile of its own that the yielded tile is copied into (every op rewrites its
tile each iteration, so the yielded tile itself cannot be kept).  ``scf.while`` is a
Python ``while`` on a bool that the body's yield updates with the carried values.
``scf.if`` is a Python ``if``/``else``; each result is a variable (scalar) or a tile of
its own (tile) that each branch assigns / copies its yielded value into.  A recording
build (``record.py``) puts one event per ``scf.if`` (1: then, 0: else) and per loop
iteration (1) and loop end (0), so the replay takes the branches the numbers took.

``npu.print`` prints ``[pid (x, y, z)] <prefix> <value>`` per value with numba's
``print``: scalars as numba formats them (float32 shows its exact double value), tiles
as numpy arrays of the tile's shape (half tiles show their float32 values).

Example (``for i in range(0, n, 1)`` carrying ``acc``)::

    for i_1 in range(u64(64)):          # acc's own tile gets the init
        acc[i_1] = f32(0.0)
    for iv in range(i64(lb), i64(n), i64(1)):
        i = i32(iv)
        ...
        for i_2 in range(u64(64)):      # the yield
            acc[i_2] = add[i_2]
"""
from __future__ import annotations

from npujit.ir.ops import Kind

from .range_check import site
from .record import emit_event
from .values import Val, np_type


def lower_program_id(cg, op) -> None:
    axis = op.attrs["axis"]
    src = "pid" if op.kind is Kind.PROGRAM_ID else "nprog"
    name = cg.w.fresh(f"{src}_{'xyz'[axis]}")
    cg.w.line(f"{name} = i32({src}{axis})")
    cg.bind(op.result, Val.scalar(name, op.result.type.dtype))


def _constant_of(v):
    op = v.op
    return op.attrs["value"] if op is not None and op.kind is Kind.CONSTANT else None


def lower_for(cg, op) -> None:
    w = cg.w
    lb, ub, step = (cg.val(v) for v in op.operands[:3])
    body = op.body
    iv_arg, carried_args = body.args[0], body.args[1:]
    # a timing-only recording (codegen ``needed``) carries only the values it needs
    live = [cg.needed is None or id(a) in cg.needed.values for a in carried_args]
    carried = []
    carried = _carried_slots(cg, op.operands[3:], carried_args, live)
    step_const = _constant_of(op.operands[2])
    if step_const is None or step_const == 0:
        where = str(op.loc).replace("\\", "/").replace('"', "'")
        with w.block(f"if i64({step.name}) == 0:"):
            w.line(f'raise ValueError("scf.for at {where}: the loop step is 0")')
    raw = w.fresh("iv")
    iv = w.fresh(iv_arg.name or "i")
    header = f"for {raw} in range(i64({lb.name}), i64({ub.name}), i64({step.name})):"
    recording = cg.options.get("record")
    with w.block(header):
        if recording:
            emit_event(cg, op, "1")
        w.line(f"{iv} = {np_type(iv_arg.type.dtype)}({raw})")
        cg.bind(iv_arg, Val.scalar(iv, iv_arg.type.dtype))
        for arg, val in zip(carried_args, carried):
            if val is not None:
                cg.bind(arg, val)
        with cg.region():
            cg.lower_block(body)
            term = body.terminator
            pairs = [(c, cg.val(y)) for c, y in zip(carried, term.operands if term else [])
                     if c is not None]
            _next_iteration(cg, [c for c, _ in pairs], [y for _, y in pairs])
    if recording:
        emit_event(cg, op, "0")
    for r, val in zip(op.results, carried):
        if val is not None:
            cg.bind(r, val)


def _carried_slots(cg, inits, args, live) -> list:
    """A variable (scalar) or a tile of its own per carried value, holding its init
    (None where a timing-only recording does not need it)."""
    w = cg.w
    carried = []
    for init, arg, keep in zip(inits, args, live):
        if not keep:
            carried.append(None)
            continue
        t = arg.type
        if t.shape == ():
            name = w.fresh(arg.name or "carried")
            w.line(f"{name} = {cg.val(init).name}")
            carried.append(Val.scalar(name, t.dtype))
        else:
            slot = cg.new_array(arg.name or "carried", t.shape, t.dtype)
            cg.copy(cg.val(init), slot)
            carried.append(slot)
    return carried


def lower_while(cg, op) -> None:
    w = cg.w
    body = op.body
    live = [cg.needed is None or id(a) in cg.needed.values for a in body.args]
    carried = _carried_slots(cg, op.operands[1:], body.args, live)
    go = w.fresh("go")
    w.line(f"{go} = bool({cg.val(op.operands[0]).name})")
    recording = cg.options.get("record")
    with w.block(f"while {go}:"):
        if recording:
            emit_event(cg, op, "1")
        for arg, val in zip(body.args, carried):
            if val is not None:
                cg.bind(arg, val)
        with cg.region():
            cg.lower_block(body)
            term = body.terminator
            pairs = [(c, cg.val(y)) for c, y in zip(carried, term.operands[1:]) if c is not None]
            _next_iteration(cg, [c for c, _ in pairs], [y for _, y in pairs])
            w.line(f"{go} = bool({cg.val(term.operands[0]).name})")
    if recording:
        emit_event(cg, op, "0")
    for r, val in zip(op.results, carried):
        if val is not None:
            cg.bind(r, val)


def lower_if(cg, op) -> None:
    w = cg.w
    outs = []
    for r in op.results:
        keep = cg.needed is None or id(r) in cg.needed.values
        if not keep:
            outs.append(None)
        elif r.type.shape == ():
            outs.append(Val.scalar(w.fresh("if_result"), r.type.dtype))
        else:
            outs.append(cg.new_array("if_result", r.type.shape, r.type.dtype))
    recording = cg.options.get("record")
    for header, region, taken in (
            (f"if {cg.val(op.operands[0]).name}:", op.regions[0], "1"),
            ("else:", op.regions[1], "0")):
        with w.block(header):
            if recording:
                emit_event(cg, op, taken)
            with cg.region():
                cg.lower_block(region)
                for out, y in zip(outs, region.terminator.operands):
                    if out is None:
                        continue
                    val = cg.val(y)
                    if out.kind == "array":
                        cg.copy(val, out)
                    else:
                        w.line(f"{out.name} = {np_type(out.dtype)}({val.name})")
            w.line("pass")
    for r, out in zip(op.results, outs):
        if out is not None:
            cg.bind(r, out)


def _next_iteration(cg, carried, yields) -> None:
    """Carried tiles get the yielded tiles' contents (through staging copies when a
    yield reads another carried tile, or its own at another element, e.g. a swap or a
    transpose); then carried scalars are reassigned all at once (after the tiles: a
    yielded splat may read a carried scalar)."""
    slots = {c.name for c in carried if c.kind == "array"}
    moves = [(c, y) for c, y in zip(carried, yields) if c.kind == "array" and y != c]

    def clobbers(c, y):
        # copying y into c element by element is safe if y reads no carried tile except
        # c itself at the very element being written (e.g. acc = acc * 0.5 + x)
        return any(leaf.kind == "array" and leaf.name in slots
                   and (leaf.name != c.name or leaf.strides != c.strides)
                   for leaf in y.leaves())
    if any(clobbers(c, y) for c, y in moves):
        staged = []
        for c, y in moves:
            stage = cg.new_array(f"{c.name}_next", c.shape, c.dtype)
            cg.copy(y, stage)
            staged.append((c, stage))
        moves = staged
    for c, y in moves:
        cg.copy(y, c)
    scalars = [(c, y) for c, y in zip(carried, yields) if c.kind != "array" and y != c]
    if scalars:
        cg.w.line(f"{', '.join(c.name for c, _ in scalars)} = "
                  f"{', '.join(y.name for _, y in scalars)}")


def lower_print(cg, op) -> None:
    w = cg.w
    prefix = op.attrs.get("prefix", "")
    head = w.fresh("head")
    tail = f" + {(' ' + prefix)!r}" if prefix else ""
    w.line(f'{head} = "[pid (" + str(pid0) + ", " + str(pid1) + ", " + str(pid2) + ")]"{tail}')
    for v in op.operands:
        val = cg.val(v)
        if val.is_scalar:
            w.line(f"print({head}, {val.name})")
            continue
        arr = cg.materialise(val, cg.hint(v))
        w.line(f"print({head}, {arr.name}.reshape({tuple(v.type.shape)!r}))")
    if not op.operands:
        w.line(f"print({head})")


def lower_assert(cg, op) -> None:
    """Raise at the first lane (row-major) where the condition is false, with the
    reference interpreter's message."""
    w = cg.w
    v = op.operands[0]
    val = cg.val(v)
    overflow = op.attrs.get("error") == "overflow"
    cls, what = (("IndexOverflowError", "index arithmetic") if overflow
                 else ("DeviceAssertionError", "device_assert"))
    tail = repr(": " + op.attrs["message"])
    if val.is_scalar:
        with w.block(f"if not {val.name}:"):
            w.line(f'raise {cls}({site(cg, op, what)} + "lane (): " + '
                   f'{repr(op.attrs["message"])})')
        return
    arr = cg.materialise(val, cg.hint(v))
    shape = tuple(v.type.shape)
    flat = w.fresh("lane")
    parts, stride = [], 1
    for n in reversed(shape):
        parts.append(f"str(({flat} // {stride}) % {n})")
        stride *= n
    lane = ' + ", " + '.join(reversed(parts))
    lane = f'"(" + {lane} + ",)"' if len(shape) == 1 else f'"(" + {lane} + ")"'
    with w.block(f"for {flat} in range({stride}):"):
        with w.block(f"if not {arr.name}[{flat}]:"):
            w.line(f'raise {cls}({site(cg, op, what)} + "lane " + {lane} + {tail})')


LOWERINGS = {Kind.PROGRAM_ID: lower_program_id, Kind.NUM_PROGRAMS: lower_program_id,
             Kind.FOR: lower_for, Kind.WHILE: lower_while, Kind.IF: lower_if,
             Kind.PRINT: lower_print, Kind.ASSERT: lower_assert}
