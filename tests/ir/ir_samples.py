"""Shared helpers for the IR tests: hand-built kernels and IR-text shorthands."""
from __future__ import annotations

from npujit.ir import Builder, Function, Kind, Loc, types as T
from npujit.ir.parser import parse_function
from npujit.ir.printer import print_function

F32_64 = T.tensor((64,), T.float32)


def func(args: str, body: str, name: str = "k", ret: bool = True) -> str:
    """A kernel's text from its argument list (``%x: !npu.ptr<f32>, %n: i32``) and body
    lines; ``func.return`` is added unless ``ret=False``.  The parser ignores indentation."""
    types = [a.split(":", 1)[1].strip() for a in args.split(",")] if args.strip() else []
    header = f"^bb0({args}):" if args.strip() else "^bb0:"
    end = '  "func.return"() : () -> ()\n' if ret else ""
    return (f'"func.func"() ({{\n{header}\n{body.strip()}\n{end}'
            f'}}) {{function_type = ({", ".join(types)}) -> (), sym_name = "{name}"}} : () -> ()')


def canon(text: str, region_names: bool = True) -> str:
    """Text as the printer writes it (renumbered, reformatted).  ``region_names=False``
    drops the name hints of region block arguments (passes create them unnamed)."""
    fn = parse_function(text)
    if not region_names:
        _drop_region_names(fn)
    return print_function(fn)


def _drop_region_names(fn: Function) -> None:
    for op in fn.walk():
        for region in op.regions:
            for a in region.args:
                a.name = None


def run_pass(p, text: str, region_names: bool = True) -> tuple[bool, str]:
    fn = parse_function(text)
    changed = p.run(fn)
    if not region_names:
        _drop_region_names(fn)
    return changed, print_function(fn)


def add_kernel() -> Function:
    """out[i] = x[i] + y[i] over one 64-wide block, with a mask."""
    fn = Function("add_kernel", [T.PtrType(T.float32)] * 3 + [T.scalar(T.int32)],
                  ["x", "y", "out", "n"])
    b = Builder(fn.body, loc=Loc("add.py", 7))
    pid = b.op(Kind.PROGRAM_ID, [], {"axis": 0})
    block = b.constant(64, T.int32)
    start = b.op(Kind.MUL, [pid, block])
    offs = b.op(Kind.ADD, [b.op(Kind.SPLAT, [start], {"shape": (64,)}),
                           b.op(Kind.ARANGE, [], {"start": 0, "end": 64})])
    mask = b.op(Kind.CMP, [offs, b.op(Kind.SPLAT, [fn.args[3]], {"shape": (64,)})],
                {"predicate": "lt"})
    x = b.op(Kind.LOAD, [fn.args[0], offs, mask], loc=Loc("add.py", 9, 4))
    y = b.op(Kind.LOAD, [fn.args[1], offs, mask])
    b.create(Kind.STORE, [fn.args[2], offs, b.op(Kind.ADD, [x, y]), mask])
    b.create(Kind.RETURN, [])
    return fn


def loop_kernel(nested: bool = False) -> Function:
    """A loop carrying a tile and a scalar; optionally with an inner loop."""
    fn = Function("loop", [T.PtrType(T.float32), T.scalar(T.int32)], ["x", "n"])
    b = Builder(fn.body)
    offs = b.op(Kind.ARANGE, [], {"start": 0, "end": 64})
    zero = b.op(Kind.SPLAT, [b.constant(0.0, T.float32)], {"shape": (64,)})
    lb, step = b.constant(0, T.int32), b.constant(1, T.int32)
    count = b.constant(0, T.int32)
    loop = b.for_loop(lb, fn.args[1], step, [zero, count], attrs={"num_stages": 2})
    iv, acc, cnt = loop.body.args
    with b.at(loop.body):
        x = b.op(Kind.LOAD, [fn.args[0], offs])
        if nested:
            inner = b.for_loop(lb, iv, step, [x])
            with b.at(inner.body):
                y = b.op(Kind.MUL, [inner.body.args[1], acc])  # uses an outer block arg
                b.create(Kind.YIELD, [y])
            x = inner.results[0]
        new_acc = b.op(Kind.ADD, [acc, x])
        b.create(Kind.YIELD, [new_acc, b.op(Kind.ADD, [cnt, step])])
    b.create(Kind.STORE, [fn.args[0], offs, loop.results[0]])
    b.create(Kind.PRINT, [loop.results[1]], {"prefix": "count"})
    b.create(Kind.RETURN, [])
    return fn


def project_launches() -> dict:
    """name -> (bundled kernel, small launch arguments, constexprs)."""
    import numpy as np

    from npujit.kernels.elementwise import add_kernel
    from npujit.kernels.layernorm import layernorm_kernel, rmsnorm_kernel
    from npujit.kernels.matmul import matmul_kernel
    from npujit.kernels.softmax import softmax_kernel
    x = np.ones(100, np.float32)
    m = np.ones((4, 48), np.float16)
    w = np.ones(48, np.float16)
    a, b, c = np.ones((32, 16), np.float16), np.ones((16, 32), np.float16), np.zeros((32, 32), np.float32)
    return {
        "add": (add_kernel, (x, x, x.copy(), 100), {"BLOCK": 64}),
        "layernorm": (layernorm_kernel, (m, w, w, m.copy(), 48, 1e-5), {"BLOCK": 64}),
        "rmsnorm": (rmsnorm_kernel, (m, w, m.copy(), 48, 1e-6), {"BLOCK": 64}),
        "softmax": (softmax_kernel, (m, m.copy(), 48, 48, 48), {"BLOCK": 64}),
        "matmul": (matmul_kernel, (a, b, c, 32, 32, 16, 16, 1, 32, 1, 32, 1),
                   {"BLOCK_M": 16, "BLOCK_N": 16, "BLOCK_K": 16, "NUM_STAGES": 2}),
    }
