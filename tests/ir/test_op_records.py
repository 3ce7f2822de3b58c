"""What an op is lives in one record per kind (ir/ops.py OpInfo); every consumer table is
complete, and a missing entry fails here naming the tier and the kind."""
import pytest

from npujit.ir import Kind
from npujit.ir.ops import INFO, REDUCE_KINDS, REDUCE_VEC_OP

# Families whose ops run on the Vector unit when they touch tiles (ir/schedule/placement.py).
VECTOR_FAMILIES = {"binary", "unary", "compare", "select", "cast", "shape", "reduce"}


def test_every_kind_has_one_record():
    assert set(INFO) == set(Kind)


def test_reference_tier_defines_every_kind():
    from npujit.backends.reference.table import SEMANTICS
    missing = [k.value for k in Kind if k not in SEMANTICS]
    assert not missing, f"the reference interpreter has no meaning for {missing}"


def test_numba_tier_lowers_every_kind():
    from npujit.backends.numba.codegen import LOWER
    # Terminators are written by their region's owner (the loop / the kernel's end).
    missing = [k.value for k in Kind if k not in LOWER and not INFO[k].terminator]
    assert not missing, f"the numba backend cannot lower {missing}"


def test_simulator_costs_every_vector_op():
    from npujit.sim.isa import VEC_OP_CLASS
    names = {k: INFO[k].vec_op for k in Kind
             if INFO[k].family in VECTOR_FAMILIES and k is not Kind.REDUCE}
    names.update({f"reduce {r}": REDUCE_VEC_OP[r] for r in REDUCE_KINDS})
    names[Kind.ARANGE] = INFO[Kind.ARANGE].vec_op
    missing = {str(k): v for k, v in names.items() if v not in VEC_OP_CLASS}
    assert not missing, f"the simulator has no Vector cost class for {missing}"


@pytest.mark.parametrize("kind", [k for k in Kind if INFO[k].attrs])
def test_verifier_requires_the_recorded_attributes(kind):
    """An op without a required attribute fails verification, naming the attribute."""
    from npujit.ir.core import Op
    from npujit.ir.verifier import rule_required_attrs
    op = Op(kind, [], [])
    msg = rule_required_attrs(op, None)
    assert msg is not None and INFO[kind].attrs[0] in msg


def test_operands_by_name():
    from npujit.ir import Builder, Function
    from npujit.ir import types as T
    fn = Function("k", [T.PtrType(T.float32), T.scalar(T.int32)], ["x", "n"])
    b = Builder(fn.body)
    offs = b.op(Kind.ARANGE, [], {"start": 0, "end": 8})
    mask = b.op(Kind.CMP, [offs, b.op(Kind.SPLAT, [fn.args[1]], {"shape": (8,)})],
                {"predicate": "lt"})
    load = b.op(Kind.LOAD, [fn.args[0], offs, mask]).op
    assert load.operand("ptr") is fn.args[0] and load.operand("mask") is mask
    assert load.operand("other") is None
    with pytest.raises(KeyError, match="npu.load has no operand 'value'"):
        load.operand("value")
    store = b.create(Kind.STORE, [fn.args[0], offs, load.result])
    assert store.operand("value") is load.result and store.operand("mask") is None


def test_block_store_value_counts_from_the_end():
    info = INFO[Kind.BLOCK_STORE]
    assert info.operand_index("ptr", 8) == 0 and info.operand_index("value", 8) == 7


def test_block_layout_splits_the_variadic_operands_per_axis():
    """A rank-2 block store: ptr, shape[2], strides[2], offsets[2], value."""
    from npujit.ir import Builder, Function
    from npujit.ir import types as T
    fn = Function("k", [T.PtrType(T.float32)] + [T.scalar(T.int64)] * 6,
                  ["p", "m", "n", "sm", "sn", "om", "on"])
    b = Builder(fn.body)
    ptr, *layout = fn.args
    tile = b.op(Kind.SPLAT, [b.constant(1.0, T.float32)], {"shape": (2, 4)})
    store = b.create(Kind.BLOCK_STORE, [ptr, *layout, tile], {"block_shape": (2, 4)})
    assert store.block_layout() == (layout[0:2], layout[2:4], layout[4:6])
    assert store.operand("value") is tile
    # an interpreter's evaluated operands, without the stored value
    assert store.block_layout(["mem", 10, 20, 30, 40, 50, 60]) == ([10, 20], [30, 40], [50, 60])
    with pytest.raises(TypeError, match="npu.splat is not a block access"):
        tile.op.block_layout()
