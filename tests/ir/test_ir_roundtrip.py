"""print(parse(print(fn))) == print(fn), and parsing rebuilds equal ops, attrs and types."""
import math

import pytest
from ir_samples import add_kernel, func, loop_kernel

from npujit.ir import Block, Builder, Function, Kind, Loc, Op, types as T, verify
from npujit.ir.parser import parse_function
from npujit.ir.printer import format_attr, format_float, print_function, print_op


def fused_kernel() -> Function:
    fn = Function("fused", [T.PtrType(T.float16)], ["x"])
    b = Builder(fn.body)
    offs = b.op(Kind.ARANGE, [], {"start": 0, "end": 16})
    x = b.op(Kind.LOAD, [fn.args[0], offs])
    half = b.constant(0.5, T.float16)
    region = Block([x.type, half.type])
    with b.at(region):
        s = b.op(Kind.SPLAT, [region.args[1]], {"shape": (16,)})
        m = b.op(Kind.MUL, [region.args[0], s])
        g = b.op(Kind.GELU, [m], {"approximate": "tanh"})
        b.create(Kind.YIELD, [m, g])
    fused = b.create(Kind.FUSED, [x, half], result_types=[x.type, x.type], regions=[region])
    b.create(Kind.STORE, [fn.args[0], offs, fused.results[1]])
    b.create(Kind.STORE, [fn.args[0], offs, fused.results[0]])
    b.create(Kind.RETURN, [])
    return fn


def topk_kernel() -> Function:
    fn = Function("topk", [T.PtrType(T.bfloat16), T.PtrType(T.int32)], ["x", "idx"])
    b = Builder(fn.body)
    offs = b.op(Kind.ARANGE, [], {"start": 0, "end": 32})
    x = b.op(Kind.LOAD, [fn.args[0], offs])
    x2 = b.op(Kind.RESHAPE, [x], {"shape": (4, 8)})
    top = b.create(Kind.TOPK, [x2], {"k": 2, "axis": 1})
    flat = b.op(Kind.RESHAPE, [top.results[1]], {"shape": (8,)})
    part = b.op(Kind.ARANGE, [], {"start": 0, "end": 8})
    b.create(Kind.STORE, [fn.args[1], part, flat])
    b.op(Kind.SORT, [top.results[0]], {"axis": 1, "descending": True})
    b.create(Kind.RETURN, [])
    return fn


def every_attr_kernel() -> Function:
    """Every kind of attribute value, on ops and on the function."""
    attrs = {"BLOCK": 128, "neg": -3, "ratio": 0.1, "tiny": 5e-324, "big": 1e300,
             "flag": True, "off": False, "name": 'say "hi"\\\n\tok \u00e9\u4e2d', "none": None,
             "shape": (4, 8), "empty": (), "bools": (True, False), "mixed": (1.5, "a", None),
             "nested": ((1, 2), (3,)), "opts": {"b": 2, "a": {"x": "y"}}, "dt": T.bfloat16,
             "tile": T.tensor((2, 3), T.int8), "ptr": T.PtrType(T.float16),
             "nan": float("nan"), "inf": float("-inf"), "negzero": -0.0,
             "needs quotes": 1, "dotted.name": 2}
    fn = Function("attrs", [T.PtrType(T.float32), T.scalar(T.int64), T.scalar(T.bool_)],
                  ["p", "n", "flag"], attrs=attrs)
    b = Builder(fn.body)
    blk = b.create(Kind.BLOCK_LOAD, [fn.args[0]] + [fn.args[1]] * 6,
                   {"block_shape": (4, 8), "boundary_check": (0,), "padding": "nan"}).result
    t = b.op(Kind.TRANS, [blk], {"perm": (1, 0)})
    r = b.op(Kind.REDUCE, [t], {"kind": "argmax", "axis": 0})
    sc = b.op(Kind.SCAN, [b.op(Kind.CAST, [r], {"dtype": T.int8})], {"kind": "sum", "axis": 0})
    b.create(Kind.PRINT, [sc, fn.args[2]], {"prefix": ""})
    b.create(Kind.RETURN, [])
    return fn


def constants_kernel() -> Function:
    """Constants of every dtype, including values that need care to print exactly."""
    fn = Function("consts", [])
    b = Builder(fn.body)
    values = []
    for d in (T.float32, T.float16, T.bfloat16):
        for v in (0.0, -0.0, 1.5, 0.1, 1e-05, 3.4e38, -1e-45, float("inf"), float("-inf"),
                  float("nan"), 65504.0, 1e+20):
            values.append(b.constant(v, d))
    for d in (T.int8, T.int16, T.int32, T.int64):
        values += [b.constant(-5, d), b.constant(0, d)]
    values += [b.constant(-2**63, T.int64), b.constant(2**63 - 1, T.int64)]
    values += [b.constant(True, T.bool_), b.constant(False, T.bool_)]
    b.create(Kind.PRINT, values, {"prefix": "c"})
    b.create(Kind.RETURN, [])
    return fn


SAMPLES = [add_kernel, loop_kernel, lambda: loop_kernel(nested=True), fused_kernel,
           topk_kernel, every_attr_kernel, constants_kernel]


def _attr_equal(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) == math.copysign(1, b))
    if isinstance(a, (list, tuple)):
        return isinstance(b, tuple) and len(a) == len(b) and all(map(_attr_equal, a, b))
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(_attr_equal(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


def _assert_same_ops(ops_a, ops_b, locs: bool):
    assert len(ops_a) == len(ops_b)
    for a, b in zip(ops_a, ops_b):
        assert a.kind is b.kind
        assert [v.type for v in a.operands] == [v.type for v in b.operands]
        assert [v.type for v in a.results] == [v.type for v in b.results]
        assert a.attrs.keys() == b.attrs.keys()
        for k in a.attrs:
            assert _attr_equal(a.attrs[k], b.attrs[k]), (k, a.attrs[k], b.attrs[k])
        if locs:
            assert a.loc == b.loc
        assert len(a.regions) == len(b.regions)
        for ra, rb in zip(a.regions, b.regions):
            assert [v.type for v in ra.args] == [v.type for v in rb.args]
            _assert_same_ops(ra.ops, rb.ops, locs)


@pytest.mark.parametrize("locs", [False, True])
@pytest.mark.parametrize("make", SAMPLES)
def test_round_trip(make, locs):
    fn = make()
    text = print_function(fn, locs=locs)
    back = parse_function(text)
    assert print_function(back, locs=locs) == text
    assert back.name == fn.name
    assert [a.type for a in back.args] == [a.type for a in fn.args]
    assert _attr_equal(fn.attrs, back.attrs)
    _assert_same_ops(fn.body.ops, back.body.ops, locs)


@pytest.mark.parametrize("make", [add_kernel, loop_kernel, fused_kernel, topk_kernel])
def test_samples_verify_before_and_after_round_trip(make):
    fn = make()
    verify(fn)
    verify(parse_function(print_function(fn)))


def test_printed_format():
    text = print_function(add_kernel(), locs=True)
    lines = text.splitlines()
    assert lines[0] == '"func.func"() ({'
    assert lines[1] == "^bb0(%x: !npu.ptr<f32>, %y: !npu.ptr<f32>, %out: !npu.ptr<f32>, %n: i32):"
    assert lines[2] == '  %0 = "npu.program_id"() {axis = 0 : i64} : () -> i32 loc("add.py":7:0)'
    assert '%8 = "npu.load"(%x, %5, %7) : (!npu.ptr<f32>, tensor<64xi32>, tensor<64xi1>) -> ' \
           'tensor<64xf32> loc("add.py":9:4)' in text
    assert lines[-1] == ('}) {function_type = (!npu.ptr<f32>, !npu.ptr<f32>, !npu.ptr<f32>, i32) '
                         '-> (), sym_name = "add_kernel"} : () -> ()')


def test_multi_result_uses_hash_index():
    text = print_function(topk_kernel())
    assert '%3:2 = "npu.topk"(%2) {axis = 1 : i64, k = 2 : i64}' in text
    assert '"npu.reshape"(%3#1)' in text and '"npu.sort"(%3#0)' in text


def test_constant_spelling():
    text = print_function(constants_kernel())
    assert "value = 0x7FC00000 : f32" in text          # NaN as MLIR spells it
    assert "value = 0xFF800000 : f32" in text          # -inf
    assert "value = 0x7C00 : f16" in text and "value = 0x7F80 : bf16" in text
    assert "value = 1.0e-05 : f32" in text             # MLIR floats need a '.'
    assert "value = -0.0 : f32" in text
    assert "value = -9223372036854775808 : i64" in text
    assert "value = true" in text


def test_format_attr_examples():
    assert format_attr((64, 64)) == "array<i64: 64, 64>"
    assert format_attr(()) == "array<i64>"
    assert format_attr(T.float16) == "f16"
    assert format_attr(3) == "3 : i64"
    assert format_attr(2.5) == "2.5 : f64"
    assert format_attr(None) == "unit"
    assert format_float(float("nan"), "f64") == "0x7FF8000000000000 : f64"


def test_block_arg_names():
    # A duplicated hint and hints that look like generated names fall back to %argN.
    fn = Function("k", [T.scalar(T.int32)] * 4, ["a", "a", "arg0", "7"])
    fn.body.append(Op(Kind.RETURN, [], []))
    text = print_function(fn)
    assert "^bb0(%a: i32, %arg1: i32, %arg2: i32, %arg3: i32):" in text
    back = parse_function(text)
    assert [a.name for a in back.args] == ["a", None, None, None]
    assert print_function(back) == text


def test_loc_with_odd_file_name():
    fn = Function("k", [])
    fn.body.append(Op(Kind.RETURN, [], [], loc=Loc('dir/we"ird\\ f\u00fc.py', 3, 2)))
    text = print_function(fn, locs=True)
    assert parse_function(text).body.ops[0].loc == Loc('dir/we"ird\\ f\u00fc.py', 3, 2)


def test_unknown_loc_prints_unknown():
    text = print_function(constants_kernel(), locs=True)
    assert "loc(unknown)" in text


def test_print_op_standalone():
    b = Builder(Block([T.scalar(T.float32)]))
    c = b.constant(1.5, T.float32)
    assert print_op(c.op) == '%0 = "arith.constant"() {dtype = f32, value = 1.5 : f32} : () -> f32'
    add = b.op(Kind.ADD, [b.block.args[0], c])
    assert print_op(add.op, locs=True) == \
        '%0 = "npu.add"(%v0, %v1) : (f32, f32) -> f32 loc(unknown)'


def test_parser_reads_unit_shorthand_comments_and_whitespace():
    text = func("%n: i32", '''
        // a comment the parser skips
        %r = "npu.print"(%n)   {prefix = "p", flag} :   (i32)->()
    ''').replace("%r = ", "")
    fn = parse_function(text)
    assert fn.body.ops[0].attrs == {"prefix": "p", "flag": None}


def test_function_attrs_are_printed_sorted():
    fn = Function("k", [], attrs={"zeta": 1, "alpha": "a"})
    fn.body.append(Op(Kind.RETURN, [], []))
    assert print_function(fn).endswith(
        '{alpha = "a", function_type = () -> (), sym_name = "k", zeta = 1 : i64} : () -> ()')


def test_reserved_function_attr_rejected():
    fn = Function("k", [], attrs={"sym_name": "x"})
    fn.body.append(Op(Kind.RETURN, [], []))
    with pytest.raises(ValueError, match="reserved"):
        print_function(fn)


def test_unprintable_attr_rejected():
    fn = Function("k", [], attrs={"obj": object()})
    fn.body.append(Op(Kind.RETURN, [], []))
    with pytest.raises(TypeError, match="cannot print attribute"):
        print_function(fn)


def test_op_with_two_regions_round_trips():
    # No kind has two regions yet; the syntax ("({...}, {...})") must still read back.
    fn = Function("k", [T.scalar(T.int32)], ["n"])
    regions = [Block([T.scalar(T.int32)]), Block()]
    for r in regions:
        r.append(Op(Kind.YIELD, [], []))
    fn.body.append(Op(Kind.FOR, [fn.args[0]] * 3, [], regions=regions))
    fn.body.append(Op(Kind.RETURN, [], []))
    text = print_function(fn)
    assert "  }, {\n  ^bb0:\n" in text
    assert print_function(parse_function(text)) == text
