"""cse and dce: one titled case per fact, IR text in -> IR text out (written by hand)."""
import pytest
from ir_samples import canon, func, run_pass

from npujit.ir import parse_function, verify
from npujit.ir.passes import CSE, DCE

T = "tensor<4xf32>"
ARGS = "%p: !npu.ptr<f32>, %n: i32"
LOAD = ('%o = "npu.arange"() {end = 4 : i64, start = 0 : i64} : () -> tensor<4xi32>\n'
        f'%x = "npu.load"(%p, %o) : (!npu.ptr<f32>, tensor<4xi32>) -> {T}\n'
        f'%y = "npu.load"(%p, %o) : (!npu.ptr<f32>, tensor<4xi32>) -> {T}')


def show(*names, t=T):
    types = ", ".join([t] * len(names))
    return f'"npu.print"({", ".join(names)}) {{prefix = ""}} : ({types}) -> ()'


def op(name, kind, *args, t=T, attrs=""):
    types = ", ".join([t] * len(args))
    return f'{name} = "npu.{kind}"({", ".join(args)}) {attrs}: ({types}) -> {t}'


def loop(body, carried="", inits="", results=""):
    """An scf.for over (%n, %n, %n) with the given body lines."""
    ctypes = [c.split(":")[1].strip() for c in carried.split(",")] if carried else []
    head = (f'{results} = ' if results else "") + \
        f'"scf.for"(%n, %n, %n{", " + inits if inits else ""}) ({{'
    rtypes = "()" if not ctypes else ctypes[0] if len(ctypes) == 1 else f"({', '.join(ctypes)})"
    args = "%i: i32" + (", " + carried if carried else "")
    return "\n".join([head, f"^bb0({args}):", body,
                      f"}}) : ({', '.join(['i32'] * 3 + ctypes)}) -> {rtypes}"])


YIELD0 = '"scf.yield"() : () -> ()'

CSE_CASES = [
    ("equal pure ops merge", LOAD + "\n" + op("%a", "exp", "%x") + "\n" + op("%b", "exp", "%x")
     + "\n" + show("%a", "%b"),
     LOAD + "\n" + op("%a", "exp", "%x") + "\n" + show("%a", "%a")),
    ("add matches with operands swapped", LOAD + "\n" + op("%a", "add", "%x", "%y") + "\n"
     + op("%b", "add", "%y", "%x") + "\n" + show("%a", "%b"),
     LOAD + "\n" + op("%a", "add", "%x", "%y") + "\n" + show("%a", "%a")),
    ("sub does not match with operands swapped", LOAD + "\n" + op("%a", "sub", "%x", "%y") + "\n"
     + op("%b", "sub", "%y", "%x") + "\n" + show("%a", "%b"), None),
    ("maximum does not match swapped (which zero/NaN comes out may differ)",
     LOAD + "\n" + op("%a", "maximum", "%x", "%y") + "\n" + op("%b", "maximum", "%y", "%x")
     + "\n" + show("%a", "%b"), None),
    ("different attributes do not match", LOAD + "\n"
     + '%a = "npu.cmp"(%x, %y) {predicate = "lt"} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>\n'
     + '%b = "npu.cmp"(%x, %y) {predicate = "le"} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>\n'
     + show("%a", "%b", t="tensor<4xi1>"), None),
    ("equal constants merge", '%a = "arith.constant"() {dtype = f32, value = 0x7FC00000 : f32} : () -> f32\n'
     '%b = "arith.constant"() {dtype = f32, value = 0x7FC00000 : f32} : () -> f32\n' + show("%a", "%b", t="f32"),
     '%a = "arith.constant"() {dtype = f32, value = 0x7FC00000 : f32} : () -> f32\n' + show("%a", "%a", t="f32")),
    ("0.0 and -0.0 constants stay apart", '%a = "arith.constant"() {dtype = f32, value = 0.0 : f32} : () -> f32\n'
     '%b = "arith.constant"() {dtype = f32, value = -0.0 : f32} : () -> f32\n' + show("%a", "%b", t="f32"), None),
    ("loads are not merged (memory may change between them)", LOAD + "\n" + show("%x", "%y"), None),
    ("an op in a loop is replaced by an equal op before the loop",
     LOAD + "\n" + op("%a", "exp", "%x") + "\n"
     + loop(op("%b", "exp", "%x") + "\n" + show("%b") + "\n" + YIELD0),
     LOAD + "\n" + op("%a", "exp", "%x") + "\n" + loop(show("%a") + "\n" + YIELD0)),
    ("an op after a loop is not replaced by an equal op inside it",
     LOAD + "\n" + loop(op("%b", "exp", "%x") + "\n" + show("%b") + "\n" + YIELD0) + "\n"
     + op("%a", "exp", "%x") + "\n" + show("%a"), None),
    ("ops in two sibling loops stay apart",
     LOAD + "\n" + loop(op("%b", "exp", "%x") + "\n" + show("%b") + "\n" + YIELD0) + "\n"
     + loop(op("%c", "exp", "%x") + "\n" + show("%c") + "\n" + YIELD0), None),
    ("equal ops inside one fused region merge", LOAD + "\n" + f'''
     %f = "npu.fused"(%x) ({{
     ^bb0(%a: {T}):
       %e1 = "npu.exp"(%a) : ({T}) -> {T}
       %e2 = "npu.exp"(%a) : ({T}) -> {T}
       %s = "npu.add"(%e1, %e2) : ({T}, {T}) -> {T}
       "scf.yield"(%s) : ({T}) -> ()
     }}) : ({T}) -> {T}''' + "\n" + show("%f"), LOAD + "\n" + f'''
     %f = "npu.fused"(%x) ({{
     ^bb0(%a: {T}):
       %e1 = "npu.exp"(%a) : ({T}) -> {T}
       %s = "npu.add"(%e1, %e1) : ({T}, {T}) -> {T}
       "scf.yield"(%s) : ({T}) -> ()
     }}) : ({T}) -> {T}''' + "\n" + show("%f")),
    ("ops with regions are not merged", LOAD + "\n" + "\n".join(f'''
     %f{i} = "npu.fused"(%x) ({{
     ^bb0(%a: {T}):
       %e = "npu.exp"(%a) : ({T}) -> {T}
       "scf.yield"(%e) : ({T}) -> ()
     }}) : ({T}) -> {T}''' for i in (1, 2)) + "\n" + show("%f1", "%f2"), None),
]

DCE_CASES = [
    ("an unused pure op goes", LOAD + "\n" + op("%a", "exp", "%x"), LOAD),
    ("a dead chain goes in one run", LOAD + "\n" + op("%a", "exp", "%x") + "\n"
     + op("%b", "add", "%a", "%y") + "\n" + op("%c", "neg", "%b"), LOAD),
    ("unused loads stay (impure)", LOAD, None),
    ("used ops stay", LOAD + "\n" + op("%a", "exp", "%x") + "\n" + show("%a"), None),
    ("dead ops inside a loop body go", LOAD + "\n" + loop(op("%a", "exp", "%x") + "\n" + YIELD0),
     LOAD + "\n" + loop(YIELD0)),
    ("a dead fused op goes with its region", LOAD + "\n" + f'''
     %f = "npu.fused"(%x) ({{
     ^bb0(%a: {T}):
       %e = "npu.exp"(%a) : ({T}) -> {T}
       "scf.yield"(%e) : ({T}) -> ()
     }}) : ({T}) -> {T}''', LOAD),
    ("an unused carried value goes with the ops computing it",
     LOAD + "\n" + loop(op("%s", "add", "%acc", "%x") + "\n" + f'"scf.yield"(%s) : ({T}) -> ()',
                        carried=f"%acc: {T}", inits="%x", results="%r"),
     LOAD + "\n" + loop(YIELD0)),
    ("a carried value whose result is used stays",
     LOAD + "\n" + loop(op("%s", "add", "%acc", "%x") + "\n" + f'"scf.yield"(%s) : ({T}) -> ()',
                        carried=f"%acc: {T}", inits="%x", results="%r") + "\n" + show("%r"), None),
    ("a carried value read by a store in the body stays",
     LOAD + "\n" + loop('"npu.store"(%p, %o, %acc) : (!npu.ptr<f32>, tensor<4xi32>, tensor<4xf32>) -> ()'
                        + "\n" + f'"scf.yield"(%acc) : ({T}) -> ()',
                        carried=f"%acc: {T}", inits="%x", results="%r"), None),
    ("a carried value feeding another used carried value stays",
     LOAD + "\n" + loop(op("%s", "add", "%a", "%b") + "\n"
                        + f'"scf.yield"(%b, %s) : ({T}, {T}) -> ()',
                        carried=f"%a: {T}, %b: {T}", inits="%x, %y", results="%r:2") + "\n"
     + show("%r#1"), None),
    ("only the dead one of two carried values goes",
     LOAD + "\n" + loop(op("%s", "add", "%a", "%x") + "\n" + op("%t", "mul", "%b", "%b") + "\n"
                        + f'"scf.yield"(%s, %t) : ({T}, {T}) -> ()',
                        carried=f"%a: {T}, %b: {T}", inits="%x, %y", results="%r:2") + "\n"
     + show("%r#0"),
     LOAD + "\n" + loop(op("%s", "add", "%a", "%x") + "\n" + f'"scf.yield"(%s) : ({T}) -> ()',
                        carried=f"%a: {T}", inits="%x", results="%r") + "\n" + show("%r")),
    ("a multi-result op with one result used stays", LOAD + "\n"
     + f'%t:2 = "npu.topk"(%x) {{axis = 0 : i64, k = 2 : i64}} : ({T}) -> (tensor<2xf32>, tensor<2xi32>)\n'
     + show("%t#1", t="tensor<2xi32>"), None),
]


@pytest.mark.parametrize("title,before,after", CSE_CASES, ids=[c[0] for c in CSE_CASES])
def test_cse(title, before, after):
    _check(CSE(), before, after)


@pytest.mark.parametrize("title,before,after", DCE_CASES, ids=[c[0] for c in DCE_CASES])
def test_dce(title, before, after):
    _check(DCE(), before, after)


def _check(p, before, after):
    """``after=None`` means the pass must leave the IR unchanged."""
    changed, text = run_pass(p, func(ARGS, before))
    assert text == canon(func(ARGS, before if after is None else after))
    assert changed == (after is not None)
    verify(parse_function(text))
