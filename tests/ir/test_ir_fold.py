"""fold: one titled case per fact, IR text in -> IR text out (expected text written by hand)."""
import pytest
from ir_samples import canon, func, run_pass

from npujit.ir import parse_function, verify
from npujit.ir.passes import Fold


def const(name, dtype, literal):
    """``%name = arith.constant`` of ``dtype`` whose value prints as ``literal``."""
    value = literal if literal in ("true", "false") else f"{literal} : {dtype}"
    return f'{name} = "arith.constant"() {{dtype = {dtype}, value = {value}}} : () -> {dtype}'


def show(name, type_):
    return f'"npu.print"({name}) {{prefix = ""}} : ({type_}) -> ()'


def binop(name, kind, a, b, t):
    return f'{name} = "npu.{kind}"({a}, {b}) : ({t}, {t}) -> {t}'


def scalar_case(title, kind, dtype, a, b, result):
    """``kind(a, b)`` on two constants of ``dtype`` folds to ``result`` (None: not folded)."""
    before = "\n".join([const("%a", dtype, a), const("%b", dtype, b),
                        binop("%r", kind, "%a", "%b", dtype), show("%r", dtype)])
    after = before if result is None else "\n".join(
        [const("%a", dtype, a), const("%b", dtype, b), const("%r", dtype, result), show("%r", dtype)])
    return (title, "", before, after)


def unary_case(title, kind, dtype, a, result, out_dtype=None, attrs=""):
    out = out_dtype or dtype
    op = f'%r = "npu.{kind}"(%a) {attrs}: ({dtype}) -> {out}'
    before = "\n".join([const("%a", dtype, a), op, show("%r", out)])
    after = before if result is None else "\n".join(
        [const("%a", dtype, a), const("%r", out, result), show("%r", out)])
    return (title, "", before, after)


T4F = "tensor<4xf32>"
T4I = "tensor<4xi32>"
LOAD_F = ('%o = "npu.arange"() {end = 4 : i64, start = 0 : i64} : () -> tensor<4xi32>\n'
          f'%x = "npu.load"(%p, %o) : (!npu.ptr<f32>, tensor<4xi32>) -> {T4F}')
LOAD_I = ('%o = "npu.arange"() {end = 4 : i64, start = 0 : i64} : () -> tensor<4xi32>\n'
          f'%x = "npu.load"(%q, %o) : (!npu.ptr<i32>, tensor<4xi32>) -> {T4I}')
ARGS = "%p: !npu.ptr<f32>, %q: !npu.ptr<i32>"


def splat(name, src, t):
    return f'{name} = "npu.splat"({src}) {{shape = array<i64: 4>}} : ({t.split("x")[1][:-1]}) -> {t}'


def identity_case(title, t, lines_before, kept_lines_after, shown):
    """Tile identities: the body before, the body after, the value finally printed."""
    load = LOAD_F if "f32" in t else LOAD_I
    return (title, ARGS, "\n".join([load] + lines_before + [show(shown[0], t)]),
            "\n".join([load] + kept_lines_after + [show(shown[1], t)]))


CASES = [
    # --- constant folding: integers (wrap at the width, C division semantics) -----------
    scalar_case("i32 add folds", "add", "i32", "2", "3", "5"),
    scalar_case("i8 add wraps", "add", "i8", "100", "100", "-56"),
    scalar_case("i32 mul wraps", "mul", "i32", "1073741824", "4", "0"),
    scalar_case("i64 sub wraps", "sub", "i64", "-9223372036854775808", "1", "9223372036854775807"),
    scalar_case("idiv truncates toward zero", "idiv", "i32", "-7", "2", "-3"),
    scalar_case("idiv by zero gives 0", "idiv", "i32", "5", "0", "0"),
    scalar_case("idiv INT_MIN by -1 wraps", "idiv", "i8", "-128", "-1", "-128"),
    scalar_case("rem takes the dividend's sign", "rem", "i32", "-7", "3", "-1"),
    scalar_case("rem by a negative divisor", "rem", "i32", "7", "-3", "1"),
    scalar_case("rem by zero gives 0", "rem", "i16", "7", "0", "0"),
    scalar_case("shl wraps", "shl", "i8", "64", "1", "-128"),
    scalar_case("shl by the bit width gives 0", "shl", "i32", "1", "32", "0"),
    scalar_case("shl by a negative count gives 0", "shl", "i32", "1", "-1", "0"),
    scalar_case("shr is arithmetic", "shr", "i32", "-8", "1", "-4"),
    scalar_case("shr out of range gives the sign fill", "shr", "i32", "-8", "40", "-1"),
    scalar_case("max of ints", "maximum", "i32", "-3", "2", "2"),
    scalar_case("xor of ints", "xor", "i32", "12", "10", "6"),
    scalar_case("and of bools", "and", "i1", "true", "false", "false"),
    scalar_case("xor of bools", "xor", "i1", "true", "true", "false"),
    unary_case("neg wraps INT_MIN", "neg", "i8", "-128", "-128"),
    unary_case("abs of INT_MIN is INT_MIN", "abs", "i32", "-2147483648", "-2147483648"),
    unary_case("not of an int is bitwise", "not", "i32", "0", "-1"),
    unary_case("not of a bool is logical", "not", "i1", "true", "false"),
    unary_case("an int constant that does not fit its dtype is not folded", "neg", "i8", "300", None),
    # --- constant folding: unsigned ints (modulo 2**bits) and f64 (f64 arithmetic) -------
    scalar_case("ui8 add wraps modulo 256", "add", "ui8", "200", "100", "44"),
    scalar_case("ui64 idiv is unsigned", "idiv", "ui64", "18446744073709551615", "2",
                "9223372036854775807"),
    scalar_case("ui32 shr is logical", "shr", "ui32", "4294967295", "28", "15"),
    unary_case("ui16 neg wraps", "neg", "ui16", "1", "65535"),
    scalar_case("f64 add computes in f64", "add", "f64", "0.1", "0.2", "0.30000000000000004"),
    unary_case("ui64 -> f64 rounds once", "cast", "ui64", "18446744073709551615",
               "1.8446744073709552e+19", "f64", "{dtype = f64} "),
    unary_case("f64 -> ui8 saturates at 0", "cast", "f64", "-3.5", "0", "ui8", "{dtype = ui8} "),
    # --- constant folding: floats (f32 arithmetic, halves rounded once from f32) ---------
    scalar_case("f32 add rounds to f32", "add", "f32", "0.1", "0.2", "0.30000001192092896"),
    scalar_case("f16 add computes in f32 and rounds to f16", "add", "f16", "1000.0", "0.3", "1000.5"),
    scalar_case("bf16 mul rounds to bf16", "mul", "bf16", "1.1", "3.0", "3.3125"),
    scalar_case("f32 div by zero is inf", "div", "f32", "1.0", "0.0", "0x7F800000"),
    scalar_case("f32 -1/0 is -inf", "div", "f32", "-1.0", "0.0", "0xFF800000"),
    scalar_case("f32 add overflows to inf", "add", "f32", "3.0e+38", "3.0e+38", "0x7F800000"),
    scalar_case("max skips NaN (np.fmax)", "maximum", "f32", "0x7FC00000", "1.0", "1.0"),
    scalar_case("min of two NaNs is NaN", "minimum", "f32", "0x7FC00000", "0x7FC00000", "0x7FC00000"),
    scalar_case("max of -0.0 and 0.0 is not folded", "maximum", "f32", "-0.0", "0.0", None),
    scalar_case("float rem is not folded", "rem", "f32", "5.5", "2.0", None),
    scalar_case("pow is not folded", "pow", "f32", "2.0", "0.5", None),
    unary_case("sqrt folds (correctly rounded)", "sqrt", "f32", "2.0", "1.4142135381698608"),
    unary_case("neg of -0.0 is 0.0", "neg", "f32", "-0.0", "0.0"),
    unary_case("floor folds", "floor", "f16", "-2.5", "-3.0"),
    unary_case("exp is not folded", "exp", "f32", "1.0", None),
    unary_case("sin is not folded", "sin", "f32", "1.0", None),
    # --- comparisons and casts -------------------------------------------------------------
    ("cmp folds; NaN compares false except ne", "", "\n".join([
        const("%n", "f32", "0x7FC00000"), const("%one", "f32", "1.0"),
        '%lt = "npu.cmp"(%n, %one) {predicate = "lt"} : (f32, f32) -> i1',
        '%ne = "npu.cmp"(%n, %n) {predicate = "ne"} : (f32, f32) -> i1',
        '"npu.print"(%lt, %ne) {prefix = ""} : (i1, i1) -> ()']), "\n".join([
        const("%n", "f32", "0x7FC00000"), const("%one", "f32", "1.0"),
        const("%lt", "i1", "false"), const("%ne", "i1", "true"),
        '"npu.print"(%lt, %ne) {prefix = ""} : (i1, i1) -> ()'])),
    unary_case("cast f32 to i32 truncates toward zero", "cast", "f32", "-2.7", "-2", "i32",
               "{dtype = i32} "),
    unary_case("cast NaN to int saturates to 0", "cast", "f32", "0x7FC00000", "0", "i32",
               "{dtype = i32} "),
    unary_case("cast out of range to int saturates to the max", "cast", "f32", "3.0e+10",
               "2147483647", "i32", "{dtype = i32} "),
    unary_case("cast -inf to int saturates to the min", "cast", "f32", "0xFF800000", "-128",
               "i8", "{dtype = i8} "),
    unary_case("cast int to int wraps", "cast", "i32", "300", "44", "i8", "{dtype = i8} "),
    unary_case("cast f32 to f16 rounds to nearest even", "cast", "f32", "0.1", "0.0999755859375",
               "f16", "{dtype = f16} "),
    unary_case("cast int to bf16 rounds via f32", "cast", "i32", "16842753", "16777216.0", "bf16",
               "{dtype = bf16} "),
    unary_case("cast to i1 is x != 0 (NaN too)", "cast", "f32", "0x7FC00000", "true", "i1",
               "{dtype = i1} "),
    unary_case("cast i1 to f32 is 0 or 1", "cast", "i1", "true", "1.0", "f32", "{dtype = f32} "),
    ("select on a constant condition picks an arm", "%u: f32, %v: f32", "\n".join([
        const("%c", "i1", "false"), '%s = "npu.select"(%c, %u, %v) : (i1, f32, f32) -> f32',
        show("%s", "f32")]), "\n".join([const("%c", "i1", "false"), show("%v", "f32")])),
    ("chains fold in one sweep", "", "\n".join([
        const("%a", "i32", "6"), binop("%b", "mul", "%a", "%a", "i32"),
        binop("%c", "sub", "%b", "%a", "i32"), show("%c", "i32")]), "\n".join([
        const("%a", "i32", "6"), const("%b", "i32", "36"), const("%c", "i32", "30"),
        show("%c", "i32")])),
    ("folding reaches loop bodies", "%n: i32", "\n".join([
        const("%a", "i32", "2"), '"scf.for"(%n, %n, %n) ({', "^bb0(%i: i32):",
        binop("%b", "add", "%a", "%a", "i32"), show("%b", "i32"), '"scf.yield"() : () -> ()',
        "}) : (i32, i32, i32) -> ()"]), "\n".join([
        const("%a", "i32", "2"), '"scf.for"(%n, %n, %n) ({', "^bb0(%i: i32):",
        const("%b", "i32", "4"), show("%b", "i32"), '"scf.yield"() : () -> ()',
        "}) : (i32, i32, i32) -> ()"])),
    # --- exact identities ------------------------------------------------------------------
    identity_case("x + 0 -> x for ints", T4I,
                  [const("%z", "i32", "0"), splat("%zs", "%z", T4I), binop("%r", "add", "%x", "%zs", T4I)],
                  [const("%z", "i32", "0"), splat("%zs", "%z", T4I)], ("%r", "%x")),
    identity_case("0 + x -> x for ints", T4I,
                  [const("%z", "i32", "0"), splat("%zs", "%z", T4I), binop("%r", "add", "%zs", "%x", T4I)],
                  [const("%z", "i32", "0"), splat("%zs", "%z", T4I)], ("%r", "%x")),
    identity_case("x + 0.0 stays for floats (-0.0 + 0.0 is 0.0)", T4F,
                  [const("%z", "f32", "0.0"), splat("%zs", "%z", T4F), binop("%r", "add", "%x", "%zs", T4F)],
                  [const("%z", "f32", "0.0"), splat("%zs", "%z", T4F), binop("%r", "add", "%x", "%zs", T4F)],
                  ("%r", "%r")),
    identity_case("x + -0.0 -> x for floats", T4F,
                  [const("%z", "f32", "-0.0"), splat("%zs", "%z", T4F), binop("%r", "add", "%x", "%zs", T4F)],
                  [const("%z", "f32", "-0.0"), splat("%zs", "%z", T4F)], ("%r", "%x")),
    identity_case("x - 0.0 -> x for floats", T4F,
                  [const("%z", "f32", "0.0"), splat("%zs", "%z", T4F), binop("%r", "sub", "%x", "%zs", T4F)],
                  [const("%z", "f32", "0.0"), splat("%zs", "%z", T4F)], ("%r", "%x")),
    identity_case("0 - x stays", T4I,
                  [const("%z", "i32", "0"), splat("%zs", "%z", T4I), binop("%r", "sub", "%zs", "%x", T4I)],
                  [const("%z", "i32", "0"), splat("%zs", "%z", T4I), binop("%r", "sub", "%zs", "%x", T4I)],
                  ("%r", "%r")),
    identity_case("x * 1.0 -> x for floats", T4F,
                  [const("%one", "f32", "1.0"), splat("%os", "%one", T4F), binop("%r", "mul", "%os", "%x", T4F)],
                  [const("%one", "f32", "1.0"), splat("%os", "%one", T4F)], ("%r", "%x")),
    identity_case("x * 0 -> 0 for ints", T4I,
                  [const("%z", "i32", "0"), splat("%zs", "%z", T4I), binop("%r", "mul", "%x", "%zs", T4I)],
                  [const("%z", "i32", "0"), splat("%zs", "%z", T4I)], ("%r", "%zs")),
    identity_case("x * 0.0 stays for floats (NaN * 0 is NaN)", T4F,
                  [const("%z", "f32", "0.0"), splat("%zs", "%z", T4F), binop("%r", "mul", "%x", "%zs", T4F)],
                  [const("%z", "f32", "0.0"), splat("%zs", "%z", T4F), binop("%r", "mul", "%x", "%zs", T4F)],
                  ("%r", "%r")),
    identity_case("x / 1.0 -> x for floats", T4F,
                  [const("%one", "f32", "1.0"), splat("%os", "%one", T4F), binop("%r", "div", "%x", "%os", T4F)],
                  [const("%one", "f32", "1.0"), splat("%os", "%one", T4F)], ("%r", "%x")),
    identity_case("x // 1 -> x for ints", T4I,
                  [const("%one", "i32", "1"), splat("%os", "%one", T4I), binop("%r", "idiv", "%x", "%os", T4I)],
                  [const("%one", "i32", "1"), splat("%os", "%one", T4I)], ("%r", "%x")),
    identity_case("select with a splat true condition -> first arm", T4F,
                  [const("%t", "i1", "true"), splat("%ts", "%t", "tensor<4xi1>"),
                   f'%n = "npu.neg"(%x) : ({T4F}) -> {T4F}',
                   f'%r = "npu.select"(%ts, %x, %n) : (tensor<4xi1>, {T4F}, {T4F}) -> {T4F}'],
                  [const("%t", "i1", "true"), splat("%ts", "%t", "tensor<4xi1>"),
                   f'%n = "npu.neg"(%x) : ({T4F}) -> {T4F}'], ("%r", "%x")),
    identity_case("select(c, a, a) -> a", T4F,
                  ['%c = "npu.cmp"(%x, %x) {predicate = "eq"} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>',
                   f'%r = "npu.select"(%c, %x, %x) : (tensor<4xi1>, {T4F}, {T4F}) -> {T4F}'],
                  ['%c = "npu.cmp"(%x, %x) {predicate = "eq"} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>'],
                  ("%r", "%x")),
    identity_case("cast to the same dtype -> x", T4F,
                  [f'%r = "npu.cast"(%x) {{dtype = f32}} : ({T4F}) -> {T4F}'], [], ("%r", "%x")),
    identity_case("broadcast to the same shape -> x", T4F,
                  [f'%r = "npu.broadcast"(%x) {{shape = array<i64: 4>}} : ({T4F}) -> {T4F}'], [], ("%r", "%x")),
    identity_case("reshape to the same shape -> x", T4F,
                  [f'%r = "npu.reshape"(%x) {{shape = array<i64: 4>}} : ({T4F}) -> {T4F}'], [], ("%r", "%x")),
    identity_case("splat of a constant stays a splat", T4F,
                  [const("%c", "f32", "2.0"), splat("%r", "%c", T4F)],
                  [const("%c", "f32", "2.0"), splat("%r", "%c", T4F)], ("%r", "%r")),
]


@pytest.mark.parametrize("title,args,before,after", CASES, ids=[c[0] for c in CASES])
def test_fold(title, args, before, after):
    changed, text = run_pass(Fold(), func(args, before))
    assert text == canon(func(args, after))
    assert changed == (canon(func(args, before)) != canon(func(args, after)))
    verify(parse_function(text))


def test_folded_constant_keeps_the_op_loc():
    add = binop("%b", "add", "%a", "%a", "i32") + ' loc("k.py":5:0)'
    fn = parse_function(func("", "\n".join([const("%a", "i32", "2"), add, show("%b", "i32")])))
    Fold().run(fn)
    assert str(fn.body.ops[1].loc) == "k.py:5"
    assert fn.body.ops[1].attrs == {"value": 4, "dtype": fn.body.ops[0].attrs["dtype"]}
