"""Bad IR text gives a ParseError that says what is wrong and where (line:col)."""
import pytest
from ir_samples import func

from npujit.ir import ParseError, parse_function

GOOD_OP = '%0 = "npu.add"(%n, %n) : (i32, i32) -> i32'

CASES = [
    # (title, text, message fragment, line, col)
    ("empty input", "", "expected a string", 1, 1),
    ("not a function", '"npu.add"() : () -> ()', 'expected "func.func"', 1, 1),
    ("unknown op", func("%n: i32", '"npu.frobnicate"(%n) : (i32) -> ()'),
     "unknown op 'npu.frobnicate'", 3, 1),
    ("undefined value", func("%n: i32", '%0 = "npu.add"(%n, %m) : (i32, i32) -> i32'),
     "use of undefined value %m", 3, 20),
    ("redefinition", func("%n: i32", GOOD_OP + "\n" + GOOD_OP), "redefinition of %0", 4, 1),
    ("operand type disagrees", func("%n: i32", '%0 = "npu.add"(%n, %n) : (i64, i64) -> i64'),
     "operand #0 has type i32, but the op's type says i64", 3, 26),
    ("operand count disagrees", func("%n: i32", '%0 = "npu.add"(%n, %n) : (i32) -> i32'),
     "has 2 operands but its type lists 1", 3, 26),
    ("result count disagrees", func("%n: i32", '%0:2 = "npu.add"(%n, %n) : (i32, i32) -> i32'),
     "declares 2 results but its type has 1", 3, 1),
    ("missing result name", func("%n: i32", '"npu.add"(%n, %n) : (i32, i32) -> i32'),
     "declares 0 results but its type has 1", 3, 1),
    ("multi-result used whole", func("%x: tensor<4xf32>", '''
        %0:2 = "npu.topk"(%x) {axis = 0 : i64, k = 2 : i64} : (tensor<4xf32>) -> (tensor<2xf32>, tensor<2xi32>)
        "npu.print"(%0) {prefix = ""} : (tensor<2xf32>) -> ()'''),
     "%0 has 2 results; use %0#i", 4, 21),
    ("result index out of range", func("%x: tensor<4xf32>", '''
        %0:2 = "npu.topk"(%x) {axis = 0 : i64, k = 2 : i64} : (tensor<4xf32>) -> (tensor<2xf32>, tensor<2xi32>)
        "npu.print"(%0#2) {prefix = ""} : (tensor<2xf32>) -> ()'''),
     "%0 has only 2 results", 4, 21),
    ("unknown element type", func("%n: f8", ""), "unknown element type 'f8'", 2, 10),
    ("bad type", func("%n: i32", '%0 = "npu.add"(%n, %n) : (i32, i32) -> [i32]'),
     "expected a type", 3, 40),
    ("missing colon type", func("%n: i32", '%0 = "npu.add"(%n, %n)'),
     "expected ':' and the op's type", 4, 3),
    ("unterminated string", func("%n: i32", '"npu.print"(%n) {prefix = "abc} : (i32) -> ()'),
     "unterminated string", 3, 27),
    ("bad escape", func("%n: i32", '"npu.print"(%n) {prefix = "a\\q"} : (i32) -> ()'),
     "bad escape in string", 3, 29),
    ("duplicate attribute", func("%n: i32", '"npu.print"(%n) {a = 1 : i64, a = 2 : i64} : (i32) -> ()'),
     "duplicate attribute 'a'", 3, 31),
    ("float literal with int type", func("%n: i32", '"npu.print"(%n) {a = 1.5 : i32} : (i32) -> ()'),
     "float literal with integer type i32", 3, 22),
    ("hex float too wide", func("%n: i32", '"npu.print"(%n) {a = 0x1FFFF : f16} : (i32) -> ()'),
     "hex float literal does not fit f16", 3, 22),
    ("unclosed region", '"func.func"() ({\n^bb0:\n', "expected '}' to close the region", 3, 1),
    ("missing block label", '"func.func"() ({\n"func.return"() : () -> ()\n})',
     "expected a block label", 2, 1),
    ("bad loc", func("%n: i32", '"npu.print"(%n) {prefix = ""} : (i32) -> () loc("f.py":x:0)'),
     'expected loc("file":line:col)', 3, 55),
    ("function_type disagrees", func("%n: i32", "").replace("(i32) -> ()", "(i64) -> ()"),
     "function_type does not match", 5, 4),
    ("missing sym_name", func("%n: i32", "").replace(', sym_name = "k"', ""),
     "needs a string sym_name", 5, 4),
    ("trailing text", func("%n: i32", "") + "\nextra", "unexpected text after the function", 6, 1),
]


@pytest.mark.parametrize("title,text,message,line,col", CASES, ids=[c[0] for c in CASES])
def test_parse_error(title, text, message, line, col):
    with pytest.raises(ParseError) as info:
        parse_function(text)
    err = info.value
    assert message in err.message
    assert (err.line, err.col) == (line, col), str(err)
    assert str(err).startswith(f"line {line}:{col}: ")


def test_error_shows_source_line_and_caret():
    text = func("%n: i32", '%0 = "npu.add"(%n, %m) : (i32, i32) -> i32')
    with pytest.raises(ParseError) as info:
        parse_function(text)
    assert str(info.value).splitlines()[1:] == [
        '  %0 = "npu.add"(%n, %m) : (i32, i32) -> i32',
        "                     ^"]


def test_region_values_are_not_visible_after_the_region():
    text = func("%x: !npu.ptr<f32>, %n: i32", '''
      %0 = "scf.for"(%n, %n, %n) ({
      ^bb0(%i: i32):
        %1 = "npu.add"(%i, %i) : (i32, i32) -> i32
        "scf.yield"() : () -> ()
      }) : (i32, i32, i32) -> ()
      "npu.print"(%1) {prefix = ""} : (i32) -> ()'''.replace("%0 = ", ""))
    with pytest.raises(ParseError, match="use of undefined value %1"):
        parse_function(text)
