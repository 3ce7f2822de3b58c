"""Value.uses: the use lists every op keeps up to date, checked against a recount of the
operands (the oracle) after every step of the pipeline, and the verifier's rules that catch
an op taken out without dropping its reads."""
import numpy as np
import pytest

import npujit.language as nl
from npujit import npu_kernel
from npujit.ir import Builder, Function, Kind, Op, parse_function, verify
from npujit.ir.core import prune_uses
from npujit.ir import types as T
from npujit.ir.pipeline import CompileContext, pipeline
from npujit.ir.verifier import VerifyError
from npujit.target import ASCEND_910B_LIKE

from ir_samples import project_launches


def recount(fn: Function) -> dict:
    """id(value) -> sorted (id(op), operand number) of every read, from the operands."""
    out: dict = {}
    for op in fn.walk():
        for i, v in enumerate(op.operands):
            out.setdefault(id(v), []).append((id(op), i))
    return {k: sorted(v) for k, v in out.items()}


def listed(fn: Function) -> dict:
    """The same map, from the values' use lists."""
    out: dict = {}
    for op in fn.walk():
        for v in op.operands:
            out[id(v)] = sorted((id(u), i) for u, i in v.uses)
    return out


def _two_args():
    fn = Function("k", [T.scalar(T.int32)] * 2, ["n", "m"])
    return fn, Builder(fn.body), *fn.args


def test_an_op_registers_its_reads_and_set_operand_moves_them():
    fn, b, n, m = _two_args()
    add = b.create(Kind.ADD, [n, n], {})
    mul = b.create(Kind.MUL, [add.result, m], {})
    assert n.uses == [(add, 0), (add, 1)] and n.users == [add]
    assert add.result.uses == [(mul, 0)] and m.uses == [(mul, 1)]
    add.set_operand(1, m)
    assert n.uses == [(add, 0)] and m.uses == [(mul, 1), (add, 1)]
    add.operands = [m, m]
    assert n.uses == [] and sorted(i for _, i in m.uses) == [0, 1, 1]


def test_replace_all_uses_with_rewrites_every_reader():
    fn, b, n, m = _two_args()
    add = b.create(Kind.ADD, [n, m], {})
    mul = b.create(Kind.MUL, [n, n], {})
    n.replace_all_uses_with(m)
    assert add.operands == (m, m) and mul.operands == (m, m)
    assert n.uses == [] and len(m.uses) == 4


def test_erase_refuses_an_op_still_read_and_drops_the_reads_of_one_that_is_not():
    fn, b, n, m = _two_args()
    add = b.create(Kind.ADD, [n, m], {})
    mul = b.create(Kind.MUL, [add.result, add.result], {})
    with pytest.raises(ValueError, match="still read by npu.mul"):
        add.erase()
    mul.erase()
    assert add.result.uses == [] and mul not in fn.body.ops
    add.erase()
    assert n.uses == [] and m.uses == [] and fn.body.ops == []


def test_the_verifier_names_a_read_left_by_an_op_taken_out_without_erase():
    fn = parse_function('''"func.func"() ({
    ^bb0(%n: i32):
      %0 = "npu.add"(%n, %n) : (i32, i32) -> i32
      "func.return"() : () -> ()
    }) {function_type = (i32) -> (), sym_name = "k"} : () -> ()''')
    verify(fn)
    fn.body.ops.pop(0)                       # out of the block, its reads still listed
    with pytest.raises(VerifyError, match="lists a use by npu.add .* not in the function"):
        verify(fn)


def test_prune_uses_forgets_reads_by_ops_outside_the_function():
    fn, b, n, m = _two_args()
    kept = b.create(Kind.ADD, [n, m], {})
    Op(Kind.MUL, [n, n], [n.type])                      # made, never put in a block
    assert len(n.uses) == 3
    assert prune_uses(fn) == 2
    assert n.uses == [(kept, 0)] and m.uses == [(kept, 1)]


@npu_kernel(backend="reference")
def _running_sum(x_ptr, out_ptr, n, BLOCK: nl.constexpr):
    s = 0.0                                  # a number the loop turns into a tile: traced twice
    for i in nl.range(0, n, BLOCK):
        offs = i + nl.arange(0, BLOCK)
        s = s + nl.load(x_ptr + offs, mask=offs < n, other=0.0)
    nl.store(out_ptr + nl.arange(0, BLOCK), s)


def test_a_loop_traced_twice_leaves_no_reads_behind(monkeypatch):
    monkeypatch.setenv("NPUJIT_ALWAYS_COMPILE", "1")     # trace now, not from the disk cache
    # the first trace of the body is thrown away; its reads of x_ptr and n must go with it
    # (jit/loops.py drops them, and the trace prunes what any attempt left), else the
    # pipeline's first verify refuses the function
    x = np.arange(40, dtype=np.float32)
    out = np.zeros(8, np.float32)
    _running_sum[(1,)](x, out, 40, BLOCK=8)
    np.testing.assert_allclose(out, x.reshape(5, 8).sum(axis=0))


@pytest.mark.parametrize("name", ["add", "layernorm", "rmsnorm", "softmax", "matmul"])
def test_use_lists_match_a_recount_after_every_step(name):
    kernel, args, meta = project_launches()[name]
    fn = parse_function(kernel.inspect(*args, **meta)["trace"])
    ctx = CompileContext(spec=ASCEND_910B_LIKE, dump="")
    changed = []
    for step in pipeline(ctx):
        changed.append(step.run(fn, ctx))
        assert listed(fn) == recount(fn), f"after {step.name}"
        verify(fn)
    assert any(changed)                      # the steps did rewrite the function
