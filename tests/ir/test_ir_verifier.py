"""The verifier accepts good IR and catches each rule's violation, naming op, loc and rule."""
import pytest
from ir_samples import add_kernel, func, loop_kernel

from npujit.ir import Block, Function, Kind, Loc, Op, VerifyError, parse_function, types as T, verify

T4 = "tensor<4xf32>"
LOAD4 = '%offs = "npu.arange"() {end = 4 : i64, start = 0 : i64} : () -> tensor<4xi32>\n' \
        f'%x = "npu.load"(%p, %offs) : (!npu.ptr<f32>, tensor<4xi32>) -> {T4}'


def fails(fn, *fragments):
    with pytest.raises(VerifyError) as info:
        verify(fn)
    for f in fragments:
        assert f in str(info.value), str(info.value)
    return str(info.value)


def test_good_ir_verifies():
    verify(add_kernel())
    verify(loop_kernel(nested=True))


# --- text cases: one per rule the parser lets through ------------------------------------

TEXT_CASES = [
    ("result type differs from the type rule", "%n: i32",
     '%0 = "npu.add"(%n, %n) : (i32, i32) -> i64',
     ["npu.add at", "result types:", "(i64) differ from the type rule's (i32)"]),
    ("type rule rejects the operands", "%n: i32, %m: i64",
     '%0 = "npu.add"(%n, %m) : (i32, i64) -> i32',
     ["result types: type rule failed: npu.add operands must have one type"]),
    ("required attribute missing", "%n: i32",
     '%0 = "npu.splat"(%n) : (i32) -> tensor<4xi32>', ["required attrs: missing attribute(s) shape"]),
    ("terminator mid-block", "%n: i32",
     '"func.return"() : () -> ()\n"npu.print"(%n) {prefix = ""} : (i32) -> ()',
     ["func.return at", "terminator last: terminator in the middle of a block"]),
    ("scf.yield mid-block", "%n: i32",
     '"scf.yield"(%n) : (i32) -> ()', ["scf.yield at", "terminator in the middle of a block"]),
    ("loop body without scf.yield", "%n: i32", '''
     "scf.for"(%n, %n, %n) ({
     ^bb0(%i: i32):
       "npu.print"(%i) {prefix = ""} : (i32) -> ()
     }) : (i32, i32, i32) -> ()''', ["scf.for at", "region terminators: scf.for body must end with scf.yield"]),
    ("yield types differ from carried types", "%n: i32, %f: f32", '''
     %0 = "scf.for"(%n, %n, %n, %f) ({
     ^bb0(%i: i32, %acc: f32):
       "scf.yield"(%i) : (i32) -> ()
     }) : (i32, i32, i32, f32) -> f32''', ["for body: scf.yield gives (i32) but the loop carries (f32)"]),
    ("loop body args differ", "%n: i32, %f: f32", '''
     %0 = "scf.for"(%n, %n, %n, %f) ({
     ^bb0(%i: i64, %acc: f32):
       "scf.yield"(%acc) : (f32) -> ()
     }) : (i32, i32, i32, f32) -> f32''', ["must be the induction variable (i32) then the carried types (f32)"]),
    ("loop without a region", "%n: i32", '"scf.for"(%n, %n, %n) : (i32, i32, i32) -> ()',
     ["region count: has 0 regions; scf.for has 1"]),
    ("fused region arg types differ", "%p: !npu.ptr<f32>", LOAD4 + f'''
     %0 = "npu.fused"(%x) ({{
     ^bb0(%a: tensor<4xf16>):
       %e = "npu.exp"(%a) : (tensor<4xf16>) -> tensor<4xf16>
       "scf.yield"(%e) : (tensor<4xf16>) -> ()
     }}) : ({T4}) -> tensor<4xf16>''', ["fused region: region arguments must have the operand types"]),
    ("non-elementwise op in a fused region", "%p: !npu.ptr<f32>", LOAD4 + f'''
     %0 = "npu.fused"(%x) ({{
     ^bb0(%a: {T4}):
       %s = "npu.sort"(%a) {{axis = 0 : i64, descending = false}} : ({T4}) -> {T4}
       "scf.yield"(%s) : ({T4}) -> ()
     }}) : ({T4}) -> {T4}''', ["npu.sort is not elementwise and cannot be fused"]),
    ("fused region uses an outer value", "%p: !npu.ptr<f32>", LOAD4 + f'''
     %0 = "npu.fused"(%x) ({{
     ^bb0(%a: {T4}):
       %e = "npu.add"(%a, %x) : ({T4}, {T4}) -> {T4}
       "scf.yield"(%e) : ({T4}) -> ()
     }}) : ({T4}) -> {T4}''', ["fused regions see only their block arguments"]),
    ("fused region yields an outer value", "%p: !npu.ptr<f32>", LOAD4 + f'''
     %0 = "npu.fused"(%x) ({{
     ^bb0(%a: {T4}):
       "scf.yield"(%x) : ({T4}) -> ()
     }}) : ({T4}) -> {T4}''', ["scf.yield in the region uses a value from outside"]),
    ("fused results differ from the yield", "%p: !npu.ptr<f32>", LOAD4 + f'''
     %0 = "npu.fused"(%x) ({{
     ^bb0(%a: {T4}):
       %e = "npu.exp"(%a) : ({T4}) -> {T4}
       "scf.yield"(%e, %e) : ({T4}, {T4}) -> ()
     }}) : ({T4}) -> {T4}''', ["results must have the types the region yields"]),
    ("fused op at another shape", "%p: !npu.ptr<f32>, %f: f32", LOAD4 + f'''
     %0 = "npu.fused"(%x, %f) ({{
     ^bb0(%a: {T4}, %b: f32):
       %e = "npu.exp"(%b) : (f32) -> f32
       %s = "npu.splat"(%e) {{shape = array<i64: 4>}} : (f32) -> {T4}
       %m = "npu.mul"(%a, %s) : ({T4}, {T4}) -> {T4}
       "scf.yield"(%m) : ({T4}) -> ()
     }}) : ({T4}, f32) -> {T4}''', ["npu.exp works at another shape than the fused results"]),
    ("fused region without scf.yield", "%p: !npu.ptr<f32>", LOAD4 + f'''
     "npu.fused"(%x) ({{
     ^bb0(%a: {T4}):
       %e = "npu.exp"(%a) : ({T4}) -> {T4}
     }}) : ({T4}) -> ()''', ["npu.fused body must end with scf.yield"]),
]


@pytest.mark.parametrize("title,args,body,fragments", TEXT_CASES, ids=[c[0] for c in TEXT_CASES])
def test_rule_violation(title, args, body, fragments):
    fails(parse_function(func(args, body)), *fragments)


def test_fused_region_may_broadcast_inputs():
    verify(parse_function(func("%p: !npu.ptr<f32>, %f: f32", LOAD4 + f'''
     %0 = "npu.fused"(%x, %f) ({{
     ^bb0(%a: {T4}, %b: f32):
       %s = "npu.splat"(%b) {{shape = array<i64: 4>}} : (f32) -> {T4}
       %m = "npu.mul"(%a, %s) : ({T4}, {T4}) -> {T4}
       "scf.yield"(%m) : ({T4}) -> ()
     }}) : ({T4}, f32) -> {T4}''')))


# --- cases the parser cannot express: built or broken in Python ---------------------------

def test_return_takes_no_operands():
    fn = parse_function(func("%n: i32", '"func.return"(%n) : (i32) -> ()', ret=False))
    fails(fn, "return operands: func.return takes no operands")


def test_region_ending_in_func_return():
    fn = parse_function(func("%n: i32", '''
     "scf.for"(%n, %n, %n) ({
     ^bb0(%i: i32):
       "func.return"() : () -> ()
     }) : (i32, i32, i32) -> ()'''))
    fails(fn, "scf.for body must end with scf.yield")


def test_function_must_end_with_return():
    fn = add_kernel()
    fn.body.ops.pop()
    fails(fn, "func.func 'add_kernel': function body must end with func.return")


def test_function_body_has_no_parent_op():
    fn = add_kernel()
    fn.body.parent_op = fn.body.ops[0]
    fails(fn, "the function body block has a parent op")


def test_use_before_definition():
    fn = add_kernel()
    fn.body.ops[1], fn.body.ops[2] = fn.body.ops[2], fn.body.ops[1]  # mul before its constant
    msg = fails(fn, "npu.mul at add.py:7", "operands dominate", "operand #1 (i32) is not defined")
    assert '"npu.mul"' in msg  # the op's text is shown


def test_use_of_inner_region_value_outside():
    fn = loop_kernel()
    loop = next(op for op in fn.body.ops if op.kind is Kind.FOR)
    inner_value = loop.body.ops[0].result  # the load inside the loop
    store = next(op for op in fn.body.ops if op.kind is Kind.STORE)
    store.set_operand(2, inner_value)
    fails(fn, "npu.store at", "operands dominate")


def test_use_of_value_from_another_function():
    other = add_kernel()
    fn = add_kernel()
    fn.body.ops[2].set_operand(0, other.body.ops[0].result)
    fails(fn, "operands dominate")


def test_op_parent_pointer():
    fn = add_kernel()
    fn.body.ops[3].parent = Block()
    fails(fn, "parent links: op.parent is not the block that holds the op")


def test_result_owner_pointer():
    fn = add_kernel()
    fn.body.ops[3].results[0].index = 4
    fails(fn, "result #0 does not point back at its op")


def test_region_parent_pointer():
    fn = loop_kernel()
    loop = next(op for op in fn.body.ops if op.kind is Kind.FOR)
    loop.regions[0].parent_op = None
    fails(fn, "a region's parent_op is not the op that owns it")


def test_error_names_the_loc():
    fn = Function("k", [T.scalar(T.int32)])
    op = Op(Kind.ADD, [fn.args[0], fn.args[0]], [T.scalar(T.int64)], loc=Loc("user.py", 42))
    fn.body.append(op)
    fn.body.append(Op(Kind.RETURN, [], []))
    fails(fn, "npu.add at user.py:42: result types:")
