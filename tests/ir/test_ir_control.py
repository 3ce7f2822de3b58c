"""scf.if and scf.while in the IR: text round trip, type and verifier rules, what the
passes may do across their regions, and the reference interpreter's meaning."""
import numpy as np
import pytest
from ir_samples import canon, func, run_pass

from npujit.backends.reference.interpreter import interpret
from npujit.ir import VerifyError, parse_function, verify
from npujit.ir.passes.cse import CSE
from npujit.ir.passes.dce import DCE
from npujit.ir.printer import print_function

# out[pid] = (pid > 1 ? pid * 10 : -pid) + the number of halvings that take n to 0
KERNEL = func("%out: !npu.ptr<i32>, %n: i32", '''
  %pid = "npu.program_id"() {axis = 0 : i64} : () -> i32
  %one = "arith.constant"() {dtype = i32, value = 1 : i32} : () -> i32
  %c = "npu.cmp"(%pid, %one) {predicate = "gt"} : (i32, i32) -> i1
  %r = "scf.if"(%c) ({
  ^bb0:
    %ten = "arith.constant"() {dtype = i32, value = 10 : i32} : () -> i32
    %m = "npu.mul"(%pid, %ten) : (i32, i32) -> i32
    "scf.yield"(%m) : (i32) -> ()
  }, {
  ^bb0:
    %neg = "npu.neg"(%pid) : (i32) -> i32
    "scf.yield"(%neg) : (i32) -> ()
  }) : (i1) -> i32
  %zero = "arith.constant"() {dtype = i32, value = 0 : i32} : () -> i32
  %two = "arith.constant"() {dtype = i32, value = 2 : i32} : () -> i32
  %go = "npu.cmp"(%n, %zero) {predicate = "gt"} : (i32, i32) -> i1
  %w:2 = "scf.while"(%go, %n, %zero) ({
  ^bb0(%v: i32, %k: i32):
    %h = "npu.idiv"(%v, %two) : (i32, i32) -> i32
    %k1 = "npu.add"(%k, %one) : (i32, i32) -> i32
    %more = "npu.cmp"(%h, %zero) {predicate = "gt"} : (i32, i32) -> i1
    "scf.yield"(%more, %h, %k1) : (i1, i32, i32) -> ()
  }) : (i1, i32, i32) -> (i32, i32)
  %s = "npu.add"(%r, %w#1) : (i32, i32) -> i32
  "npu.store"(%out, %pid, %s) : (!npu.ptr<i32>, i32, i32) -> ()
''')


def test_round_trip_and_verify():
    fn = parse_function(KERNEL)
    verify(fn)
    text = print_function(fn)
    assert canon(text) == text and '"scf.if"' in text and '"scf.while"' in text


@pytest.mark.parametrize("n", [0, 1, 37])
def test_reference_semantics(n):
    out = np.zeros(4, np.int32)
    interpret(parse_function(KERNEL), (4, 1, 1), [out, np.asarray(n, np.int32)])
    halvings = 0 if n <= 0 else int(n).bit_length()
    assert out.tolist() == [(p * 10 if p > 1 else -p) + halvings for p in range(4)]


def test_simulator_records_each_decision_on_the_scalar_unit():
    from npujit.ir.pipeline import schedule
    from npujit.jit.simulate import lower
    from npujit.sim import ASCEND_910B_LIKE
    from npujit.sim.lower import BRANCH_CYCLES
    fn = parse_function(KERNEL)
    schedule(fn, ASCEND_910B_LIKE)
    out = np.zeros(4, np.int32)
    launch = lower(fn, (4, 1, 1), [out, np.asarray(37, np.int32)])
    for program in launch.programs:
        decisions = [i for i in program.instrs if i.kind == "scalar"]
        # one if, and the while's test before the loop and after each of its 6 trips
        assert len(decisions) == 1 + 7 and {i.cycles for i in decisions} == {BRANCH_CYCLES}


def _broken(old: str, new: str) -> str:
    assert old in KERNEL
    return KERNEL.replace(old, new, 1)


@pytest.mark.parametrize("text, fragment", [
    (_broken('"scf.yield"(%neg) : (i32) -> ()', '"scf.yield"() : () -> ()'),
     "the else region yields () but the results are (i32)"),
    (_broken('"scf.yield"(%more, %h, %k1) : (i1, i32, i32) -> ()',
             '"scf.yield"(%h, %k1) : (i32, i32) -> ()'),
     "the next condition then the carried values"),
    (_broken('%r = "scf.if"(%c)', '%r = "scf.if"(%pid)').replace(
        '}) : (i1) -> i32', '}) : (i32) -> i32'), "scf.if takes one i1 scalar condition"),
])
def test_verifier_names_the_broken_rule(text, fragment):
    with pytest.raises(VerifyError) as e:
        verify(parse_function(text))
    assert fragment in str(e.value)


def test_cse_keeps_branches_apart_and_dce_keeps_the_if():
    text = func("%out: !npu.ptr<i32>, %c: i1, %a: i32", '''
      %x = "npu.mul"(%a, %a) : (i32, i32) -> i32
      %r = "scf.if"(%c) ({
      ^bb0:
        %y = "npu.mul"(%a, %a) : (i32, i32) -> i32
        %t = "npu.add"(%y, %a) : (i32, i32) -> i32
        "scf.yield"(%t) : (i32) -> ()
      }, {
      ^bb0:
        %u = "npu.add"(%x, %a) : (i32, i32) -> i32
        "scf.yield"(%u) : (i32) -> ()
      }) : (i1) -> i32
      "scf.if"(%c) ({
      ^bb0:
        "scf.yield"() : () -> ()
      }, {
      ^bb0:
        "scf.yield"() : () -> ()
      }) : (i1) -> ()
      "npu.store"(%out, %a, %r) : (!npu.ptr<i32>, i32, i32) -> ()
    ''')
    changed, out = run_pass(CSE(), text)
    # the then region's a * a is the one before the if; the two adds stay (one per branch)
    assert changed and out.count('"npu.mul"') == 1 and out.count('"npu.add"') == 2
    changed, out = run_pass(DCE(), out)
    assert out.count('"scf.if"') == 2
