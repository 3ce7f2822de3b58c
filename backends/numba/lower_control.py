"""Program ids, ``scf.for`` loops with carried values, and ``npu.print``.

``scf.for`` is a Python ``for`` over ``range(lb, ub, step)`` (which already counts down
for a negative step and runs zero times when the bounds say so); the induction variable
is converted to the dtype of ``lb``.  Carried values are plain variables reassigned at
the end of each iteration, all at once (``a, b = b, a`` is a legal yield).  Carried
tiles are arrays; sharing one between iterations is safe because no array is written
after the op that makes it.

``npu.print`` prints ``[pid (x, y, z)] <prefix> <value>`` per value with numba's
``print``: scalars as numba formats them (float32 shows its exact double value), tiles
as numpy arrays of the tile's shape (half tiles show their float32 values).

Example (``for i in range(0, n, 1)`` carrying ``acc``)::

    acc = zeros
    for iv in range(np.int64(lb), np.int64(n), np.int64(1)):
        i = np.int32(iv)
        ...
        acc = add
"""
from __future__ import annotations

from npujit.ir.ops import Kind

from .values import Val, np_type


def lower_program_id(cg, op) -> None:
    axis = op.attrs["axis"]
    src = "pid" if op.kind is Kind.PROGRAM_ID else "nprog"
    name = cg.w.fresh(f"{src}_{'xyz'[axis]}")
    cg.w.line(f"{name} = np.int32({src}{axis})")
    cg.bind(op.result, Val.scalar(name, op.result.type.dtype))


def _constant_of(v):
    op = v.op
    return op.attrs["value"] if op is not None and op.kind is Kind.CONSTANT else None


def lower_for(cg, op) -> None:
    w = cg.w
    lb, ub, step = (cg.val(v) for v in op.operands[:3])
    body = op.body
    iv_arg, carried_args = body.args[0], body.args[1:]
    carried = []
    for init, arg in zip(op.operands[3:], carried_args):
        val = cg.materialise(cg.val(init), cg.hint(init))
        name = w.fresh(arg.name or "carried")
        w.line(f"{name} = {val.name}")
        t = arg.type
        carried.append(Val.scalar(name, t.dtype) if t.shape == ()
                       else Val.array(name, t.shape, t.dtype))
    step_const = _constant_of(op.operands[2])
    if step_const is None or step_const == 0:
        where = str(op.loc).replace("\\", "/").replace('"', "'")
        with w.block(f"if np.int64({step.name}) == 0:"):
            w.line(f'raise ValueError("scf.for at {where}: the loop step is 0")')
    raw = w.fresh("iv")
    iv = w.fresh(iv_arg.name or "i")
    header = (f"for {raw} in range(np.int64({lb.name}), np.int64({ub.name}), "
              f"np.int64({step.name})):")
    with w.block(header):
        w.line(f"{iv} = {np_type(iv_arg.type.dtype)}({raw})")
        cg.bind(iv_arg, Val.scalar(iv, iv_arg.type.dtype))
        for arg, val in zip(carried_args, carried):
            cg.bind(arg, val)
        with cg.region():
            cg.lower_block(body)
            term = body.terminator
            nexts = [cg.materialise(cg.val(y), cg.hint(y)).name
                     for y in (term.operands if term is not None else [])]
        if carried:
            w.line(f"{', '.join(c.name for c in carried)} = {', '.join(nexts)}")
    for r, val in zip(op.results, carried):
        cg.bind(r, val)


def lower_print(cg, op) -> None:
    w = cg.w
    prefix = op.attrs.get("prefix", "")
    head = w.fresh("head")
    w.line(f'{head} = "[pid (" + str(pid0) + ", " + str(pid1) + ", " + str(pid2) + ")] " '
           f'+ {prefix!r}')
    for v in op.operands:
        val = cg.val(v)
        if val.is_scalar:
            w.line(f"print({head}, {val.name})")
            continue
        arr = cg.materialise(val, cg.hint(v))
        w.line(f"print({head}, {arr.name}.reshape({tuple(v.type.shape)!r}))")
    if not op.operands:
        w.line(f"print({head})")


LOWERINGS = {Kind.PROGRAM_ID: lower_program_id, Kind.NUM_PROGRAMS: lower_program_id,
             Kind.FOR: lower_for, Kind.PRINT: lower_print}
