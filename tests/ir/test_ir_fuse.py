"""fuse-elementwise: one titled case per fact, IR text in -> IR text out (written by hand)."""
import pytest
from ir_samples import canon, func, run_pass

from npujit.ir import parse_function, verify
from npujit.ir.passes import FuseElementwise

T = "tensor<4xf32>"
ARGS = "%p: !npu.ptr<f32>, %n: i32, %c: f32"
LOAD = ('%o = "npu.arange"() {end = 4 : i64, start = 0 : i64} : () -> tensor<4xi32>\n'
        f'%x = "npu.load"(%p, %o) : (!npu.ptr<f32>, tensor<4xi32>) -> {T}\n'
        f'%y = "npu.load"(%p, %o) : (!npu.ptr<f32>, tensor<4xi32>) -> {T}')


def op(name, kind, *args, t=T, src=None, attrs=""):
    types = ", ".join([src or t] * len(args))
    return f'{name} = "npu.{kind}"({", ".join(args)}) {attrs}: ({types}) -> {t}'


def store(v, t=T):
    return f'"npu.store"(%p, %o, {v}) : (!npu.ptr<f32>, tensor<4xi32>, {t}) -> ()'


def fused(results, inputs, block_args, body, yields, result_types=None):
    """``results = npu.fused(inputs)`` with region ``^bb0(block_args)``: body; yield."""
    yield_names = [y.split(":")[0] for y in yields]
    ytypes = [y.split(":")[1] for y in yields]
    in_types = [a.split(":")[1].strip() for a in block_args]
    rtypes = ytypes[0] if len(ytypes) == 1 else f"({', '.join(ytypes)})"
    return "\n".join([f'{results} = "npu.fused"({", ".join(inputs)}) ({{',
                      f"^bb0({', '.join(block_args)}):", *body,
                      f'"scf.yield"({", ".join(yield_names)}) : ({", ".join(ytypes)}) -> ()',
                      f'}}) : ({", ".join(in_types)}) -> {rtypes}'])


CASES = [
    ("two chained elementwise ops fuse",
     [op("%a", "exp", "%x"), op("%b", "neg", "%a"), store("%b")],
     [fused("%f", ["%x"], [f"%i: {T}"], [op("%a", "exp", "%i"), op("%b", "neg", "%a")],
            [f"%b:{T}"]), store("%f")]),
    ("a lone elementwise op is not fused", [op("%a", "exp", "%x"), store("%a")], None),
    ("scalar arithmetic is not fused",
     [op("%a", "add", "%n", "%n", t="i32"), op("%b", "mul", "%a", "%n", t="i32"),
      '"npu.print"(%b) {prefix = ""} : (i32) -> ()'], None),
    ("a splat feeding the group is pulled in",
     [f'%s = "npu.splat"(%c) {{shape = array<i64: 4>}} : (f32) -> {T}', op("%m", "mul", "%x", "%s"),
      store("%m")],
     [fused("%f", ["%c", "%x"], ["%i: f32", f"%j: {T}"],
            [f'%s = "npu.splat"(%i) {{shape = array<i64: 4>}} : (f32) -> {T}',
             op("%m", "mul", "%j", "%s")], [f"%m:{T}"]), store("%f")]),
    ("a splat used outside before the group stays outside",
     [f'%s = "npu.splat"(%c) {{shape = array<i64: 4>}} : (f32) -> {T}', store("%s"),
      op("%m", "mul", "%x", "%s"), op("%e", "exp", "%m"), store("%e")],
     [f'%s = "npu.splat"(%c) {{shape = array<i64: 4>}} : (f32) -> {T}', store("%s"),
      fused("%f", ["%x", "%s"], [f"%i: {T}", f"%j: {T}"],
            [op("%m", "mul", "%i", "%j"), op("%e", "exp", "%m")], [f"%e:{T}"]), store("%f")]),
    ("a broadcast feeding the group is pulled in; one of a group value closes that group",
     ['%r = "npu.reshape"(%x) {shape = array<i64: 4, 1>} : (tensor<4xf32>) -> tensor<4x1xf32>',
      op("%a", "exp", "%r", t="tensor<4x1xf32>"),
      op("%a2", "neg", "%a", t="tensor<4x1xf32>"),
      '%b = "npu.broadcast"(%a2) {shape = array<i64: 4, 4>} : (tensor<4x1xf32>) -> tensor<4x4xf32>',
      op("%s", "add", "%b", "%b", t="tensor<4x4xf32>"),
      op("%e", "exp", "%s", t="tensor<4x4xf32>"),
      '%out = "npu.reshape"(%e) {shape = array<i64: 16>} : (tensor<4x4xf32>) -> tensor<16xf32>',
      '"npu.print"(%out) {prefix = ""} : (tensor<16xf32>) -> ()'],
     ['%r = "npu.reshape"(%x) {shape = array<i64: 4, 1>} : (tensor<4xf32>) -> tensor<4x1xf32>',
      fused("%f1", ["%r"], ["%i: tensor<4x1xf32>"],
            [op("%a", "exp", "%i", t="tensor<4x1xf32>"), op("%a2", "neg", "%a", t="tensor<4x1xf32>")],
            ["%a2:tensor<4x1xf32>"]),
      fused("%f2", ["%f1"], ["%j: tensor<4x1xf32>"],
            ['%b = "npu.broadcast"(%j) {shape = array<i64: 4, 4>} : (tensor<4x1xf32>) -> tensor<4x4xf32>',
             op("%s", "add", "%b", "%b", t="tensor<4x4xf32>"), op("%e", "exp", "%s", t="tensor<4x4xf32>")],
            ["%e:tensor<4x4xf32>"]),
      '%out = "npu.reshape"(%f2) {shape = array<i64: 16>} : (tensor<4x4xf32>) -> tensor<16xf32>',
      '"npu.print"(%out) {prefix = ""} : (tensor<16xf32>) -> ()']),
    ("an outside use between group ops closes the group",
     [op("%a", "exp", "%x"), '%s = "npu.reduce"(%a) {axis = 0 : i64, kind = "sum"} : (tensor<4xf32>) -> f32',
      op("%b", "neg", "%a"), op("%d", "add", "%b", "%x"), store("%d"),
      '"npu.print"(%s) {prefix = ""} : (f32) -> ()'],
     [op("%a", "exp", "%x"), '%s = "npu.reduce"(%a) {axis = 0 : i64, kind = "sum"} : (tensor<4xf32>) -> f32',
      fused("%f", ["%a", "%x"], [f"%i: {T}", f"%j: {T}"],
            [op("%b", "neg", "%i"), op("%d", "add", "%b", "%j")], [f"%d:{T}"]), store("%f"),
      '"npu.print"(%s) {prefix = ""} : (f32) -> ()']),
    ("an unrelated op between group ops does not split it",
     [op("%a", "exp", "%x"), f'%l = "npu.load"(%p, %o) : (!npu.ptr<f32>, tensor<4xi32>) -> {T}',
      op("%b", "add", "%a", "%l"), store("%b")],
     [f'%l = "npu.load"(%p, %o) : (!npu.ptr<f32>, tensor<4xi32>) -> {T}',
      fused("%f", ["%x", "%l"], [f"%i: {T}", f"%j: {T}"],
            [op("%a", "exp", "%i"), op("%b", "add", "%a", "%j")], [f"%b:{T}"]), store("%f")]),
    ("group values used outside become results, in program order",
     [op("%a", "exp", "%x"), op("%b", "neg", "%a"), store("%b"), store("%a")],
     [fused("%f:2", ["%x"], [f"%i: {T}"], [op("%a", "exp", "%i"), op("%b", "neg", "%a")],
            [f"%a:{T}", f"%b:{T}"]), store("%f#1"), store("%f#0")]),
    ("an op joining two groups merges them",
     [op("%a", "exp", "%x"), op("%b", "neg", "%y"), op("%d", "sub", "%a", "%b"), store("%d")],
     [fused("%f", ["%x", "%y"], [f"%i: {T}", f"%j: {T}"],
            [op("%a", "exp", "%i"), op("%b", "neg", "%j"), op("%d", "sub", "%a", "%b")],
            [f"%d:{T}"]), store("%f")]),
    ("ops at different shapes make different groups",
     ['%x8 = "npu.reshape"(%x) {shape = array<i64: 2, 2>} : (tensor<4xf32>) -> tensor<2x2xf32>',
      op("%a", "exp", "%x"), op("%b", "exp", "%x8", t="tensor<2x2xf32>"),
      op("%c1", "neg", "%a"), op("%d", "neg", "%b", t="tensor<2x2xf32>"),
      store("%c1"), '"npu.print"(%d) {prefix = ""} : (tensor<2x2xf32>) -> ()'],
     ['%x8 = "npu.reshape"(%x) {shape = array<i64: 2, 2>} : (tensor<4xf32>) -> tensor<2x2xf32>',
      fused("%f1", ["%x"], [f"%i: {T}"], [op("%a", "exp", "%i"), op("%c1", "neg", "%a")], [f"%c1:{T}"]),
      fused("%f2", ["%x8"], ["%j: tensor<2x2xf32>"],
            [op("%b", "exp", "%j", t="tensor<2x2xf32>"), op("%d", "neg", "%b", t="tensor<2x2xf32>")],
            ["%d:tensor<2x2xf32>"]),
      store("%f1"), '"npu.print"(%f2) {prefix = ""} : (tensor<2x2xf32>) -> ()']),
    ("cmp, select and cast fuse across dtypes",
     ['%m = "npu.cmp"(%x, %y) {predicate = "lt"} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>',
      f'%s = "npu.select"(%m, %x, %y) : (tensor<4xi1>, {T}, {T}) -> {T}',
      '%h = "npu.cast"(%s) {dtype = f16} : (tensor<4xf32>) -> tensor<4xf16>',
      '"npu.print"(%h) {prefix = ""} : (tensor<4xf16>) -> ()'],
     [fused("%f", ["%x", "%y"], [f"%i: {T}", f"%j: {T}"],
            ['%m = "npu.cmp"(%i, %j) {predicate = "lt"} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>',
             f'%s = "npu.select"(%m, %i, %j) : (tensor<4xi1>, {T}, {T}) -> {T}',
             '%h = "npu.cast"(%s) {dtype = f16} : (tensor<4xf32>) -> tensor<4xf16>'],
            ["%h:tensor<4xf16>"]),
      '"npu.print"(%f) {prefix = ""} : (tensor<4xf16>) -> ()']),
    ("ops in a loop body fuse inside the body; a loop result is an outside operand",
     ['%r = "scf.for"(%n, %n, %n, %x) ({', f"^bb0(%k: i32, %acc: {T}):",
      op("%a", "mul", "%acc", "%x"), op("%b", "add", "%a", "%y"), f'"scf.yield"(%b) : ({T}) -> ()',
      f"}}) : (i32, i32, i32, {T}) -> {T}", op("%e", "exp", "%r"), op("%g", "neg", "%e"), store("%g")],
     ['%r = "scf.for"(%n, %n, %n, %x) ({', f"^bb0(%k: i32, %acc: {T}):",
      fused("%f", ["%acc", "%x", "%y"], [f"%i: {T}", f"%j: {T}", f"%l: {T}"],
            [op("%a", "mul", "%i", "%j"), op("%b", "add", "%a", "%l")], [f"%b:{T}"]),
      f'"scf.yield"(%f) : ({T}) -> ()', f"}}) : (i32, i32, i32, {T}) -> {T}",
      fused("%f2", ["%r"], [f"%i2: {T}"], [op("%e", "exp", "%i2"), op("%g", "neg", "%e")], [f"%g:{T}"]),
      store("%f2")]),
    ("a group read inside a later loop body is closed at the loop",
     [op("%a", "exp", "%x"), op("%b", "neg", "%a"),
      '"scf.for"(%n, %n, %n) ({', "^bb0(%k: i32):", store("%b"), '"scf.yield"() : () -> ()',
      "}) : (i32, i32, i32) -> ()", op("%d", "add", "%b", "%x"), store("%d")],
     [fused("%f", ["%x"], [f"%i: {T}"], [op("%a", "exp", "%i"), op("%b", "neg", "%a")], [f"%b:{T}"]),
      '"scf.for"(%n, %n, %n) ({', "^bb0(%k: i32):", store("%f"), '"scf.yield"() : () -> ()',
      "}) : (i32, i32, i32) -> ()", op("%d", "add", "%f", "%x"), store("%d")]),
]


def _text(lines):
    return func(ARGS, LOAD + "\n" + "\n".join(lines))


@pytest.mark.parametrize("title,before,after", CASES, ids=[c[0] for c in CASES])
def test_fuse(title, before, after):
    changed, text = run_pass(FuseElementwise(), _text(before), region_names=False)
    assert text == canon(_text(before if after is None else after), region_names=False)
    assert changed == (after is not None)
    verify(parse_function(text))


def test_fusing_twice_changes_nothing():
    fn = parse_function(_text(CASES[0][1]))
    assert FuseElementwise().run(fn)
    assert not FuseElementwise().run(fn)
