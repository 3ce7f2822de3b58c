"""The schedule as IR attributes: every bundled kernel schedules, verifies and round-trips;
pipes and scopes follow the Vector and Cube dataflows; buffers fit and are aligned;
num_stages loops get rotating slots and slot-reuse waits; over-budget tiles are rejected
with the promised message."""
import re

import numpy as np
import pytest

import npujit
from npujit.ir import parse_function, print_function, verify
from npujit.ir.pipeline import schedule
from npujit.ir.schedule.model import scheduled_ops
from npujit.kernels.elementwise import add_kernel
from npujit.kernels.layernorm import layernorm_kernel, rmsnorm_kernel
from npujit.kernels.matmul import matmul_kernel
from npujit.kernels.softmax import softmax_kernel
from npujit.sim import ASCEND_910_LIKE, ASCEND_910B_LIKE, TINY

from npujit.kernels.elementwise import add_stream_kernel as stream_add_kernel


def _launches():
    x = np.ones(1000, np.float16)
    m = np.ones((4, 48), np.float16)
    w = np.ones(48, np.float16)
    a, b = np.ones((64, 32), np.float16), np.ones((32, 64), np.float16)
    c = np.zeros((64, 64), np.float32)
    return {
        "add": (add_kernel, (x, x, x.copy(), 1000), {"BLOCK": 256}),
        "layernorm": (layernorm_kernel, (m, w, w, m.copy(), 48, 1e-5), {"BLOCK": 64}),
        "rmsnorm": (rmsnorm_kernel, (m, w, m.copy(), 48, 1e-6), {"BLOCK": 64}),
        "softmax": (softmax_kernel, (m, m.copy(), 48, 48, 48), {"BLOCK": 64}),
        "matmul": (matmul_kernel, (a, b, c, 64, 64, 32, 32, 1, 64, 1, 64, 1),
                   {"BLOCK_M": 32, "BLOCK_N": 32, "BLOCK_K": 16, "NUM_STAGES": 2}),
        "stream_add": (stream_add_kernel, (x, x, x.copy(), 1000, 512), {"BLOCK": 128,
                                                                         "NUM_STAGES": 2}),
    }


KERNELS = ["add", "layernorm", "rmsnorm", "softmax", "matmul", "stream_add"]


def _scheduled(name, spec=None):
    kernel, args, meta = _launches()[name]
    if spec is not None:
        kernel = kernel.with_options(spec=spec)
    return parse_function(kernel.inspect(*args, **meta)["schedule"])


def _ops(fn, kind):
    return [op for op in scheduled_ops(fn.body) if op.kind.value == kind]


@pytest.mark.parametrize("name", KERNELS)
def test_scheduled_ir_verifies_and_round_trips(name):
    kernel, args, meta = _launches()[name]
    text = kernel.inspect(*args, **meta)["schedule"]
    fn = parse_function(text)
    verify(fn)
    assert print_function(fn) == text
    # Scheduling the parsed optimised IR again gives the same text (deterministic).
    again = parse_function(kernel.inspect(*args, **meta)["ir"])
    schedule(again, ASCEND_910B_LIKE)
    assert print_function(again) == text
    for op in scheduled_ops(fn.body):
        assert op.attrs["pipe"] in ("MTE1", "MTE2", "MTE3", "CUBE", "VECTOR", "FIXP", "SCALAR")


def test_add_is_mte2_vector_mte3_in_ub():
    fn = _scheduled("add")
    assert fn.attrs["npu.core"] == "AIV"
    loads, (add,), (store,) = _ops(fn, "npu.load"), _ops(fn, "npu.add")[-1:], _ops(fn, "npu.store")
    assert [(op.attrs["pipe"], op.attrs["scope"]) for op in loads] == [("MTE2", "UB")] * 2
    assert (add.attrs["pipe"], add.attrs["scope"]) == ("VECTOR", "UB")
    assert store.attrs["pipe"] == "MTE3"
    # producer -> consumer flags: MTE2 -> V before the add, V -> MTE3 before the store
    assert any(str(f).startswith("MTE2_V:") for f in add.attrs["wait_flags"])
    assert any(str(f).startswith("MTE2_V:") for f in loads[-1].attrs["set_flags"])
    assert any(str(f).startswith("V_MTE3:") for f in store.attrs["wait_flags"])
    assert any(str(f).startswith("V_MTE3:") for f in add.attrs["set_flags"])


def test_matmul_is_gm_l1_l0_cube_l0c_fixpipe():
    fn = _scheduled("matmul")
    assert fn.attrs["npu.core"] == "AIC"
    loads, (dot,) = _ops(fn, "npu.block_load"), _ops(fn, "npu.dot")
    (store,), (loop,) = _ops(fn, "npu.block_store"), _ops(fn, "scf.for")
    assert [(op.attrs["pipe"], op.attrs["scope"]) for op in loads] == [("MTE2", "L1")] * 2
    assert (dot.attrs["pipe"], dot.attrs["scope"]) == ("CUBE", "L0C")
    assert list(dot.attrs["operand_scopes"]) == ["L0A", "L0B"]
    assert store.attrs["pipe"] == "FIXP"
    events = {f.event for op in scheduled_ops(fn.body)
              for a in ("set_flags", "wait_flags") for f in op.attrs.get(a, ())}
    assert {"MTE2_MTE1", "MTE1_M", "M_FIX"} <= events
    assert "M_FIX:0" in map(str, loop.attrs["set_flags"])       # the accumulator leaves after the loop
    assert "M_FIX:0" in map(str, store.attrs["wait_flags"])


@pytest.mark.parametrize("spec", [ASCEND_910B_LIKE, ASCEND_910_LIKE, TINY], ids=lambda s: s.name)
@pytest.mark.parametrize("name", KERNELS)
def test_buffers_fit_are_aligned_and_never_overlap_while_live(name, spec):
    kernel, args, meta = _launches()[name]
    fn = parse_function(kernel.inspect(*args, **meta)["ir"])
    sched = schedule(fn, spec)
    assert sched.buffers
    for b in sched.buffers:
        align = spec.alignment[b.scope]
        assert b.offset % align == 0 and b.slot_bytes % align == 0
        assert b.slot_bytes >= int(np.prod(b.shape)) * b.itemsize
        assert b.offset + b.total <= spec.capacity[b.scope]
    for i, a in enumerate(sched.buffers):
        for b in sched.buffers[i + 1:]:
            live_together = a.start <= b.end and b.start <= a.end
            share_bytes = a.offset < b.offset + b.total and b.offset < a.offset + a.total
            assert not (a.scope == b.scope and live_together and share_bytes), (a, b)


@pytest.mark.parametrize("stages", [1, 2, 3])
def test_num_stages_gives_rotating_slots_and_slot_reuse_waits(stages):
    kernel, args, meta = _launches()["stream_add"]
    fn = parse_function(kernel.inspect(*args, **{**meta, "NUM_STAGES": stages})["schedule"])
    (loop,) = _ops(fn, "scf.for")
    loads = _ops(fn, "npu.load")
    assert [op.attrs["stages"] for op in loads] == [stages] * 2
    # slot i of a buffer sits at offset + i * bytes: the N slots are N distinct regions
    for op in loads:
        assert op.attrs["bytes"][0] * stages <= ASCEND_910B_LIKE.capacity["UB"]
    # the loop pre-sets one release flag per slot, drains them after, and the first load
    # waits for the release (V done with the slot) before overwriting it
    released = loop.attrs["pre_set_flags"]
    assert ("VECTOR", "MTE2") in {(s, d) for s, d, _, _ in released}
    assert loop.attrs["pre_set_flags"] == loop.attrs["post_wait_flags"]
    v_mte2 = loads[0].attrs["wait_flags"]
    assert any(s == "VECTOR" and d == "MTE2" and n == stages for s, d, _, n in v_mte2)
    # ids stay within the spec's event ids
    for op in scheduled_ops(fn.body):
        for attr in ("set_flags", "wait_flags", "pre_set_flags", "post_wait_flags"):
            for f in op.attrs.get(attr, ()):
                assert f.first + f.count <= ASCEND_910B_LIKE.event_ids


def test_over_budget_tile_is_rejected_with_the_promised_message():
    x = np.ones(1 << 17, np.float16)
    with pytest.raises(npujit.OutOfResources) as info:
        add_kernel[(1,)](x, x, x.copy(), x.size, BLOCK=1 << 17)
    msg = str(info.value)
    assert "elementwise.py:" in msg and "add_kernel" in msg
    assert re.search(r"nl\.\w+\(", msg)                      # the source line itself
    assert "196608 B" in msg                                  # the UB budget
    assert re.search(r"\d+ B x 1 stage = \d+ B", msg)         # each buffer, bytes x stages
    fits = int(re.search(r"try BLOCK <= (\d+)", msg).group(1))
    y = np.zeros(fits, np.float16)
    add_kernel[(1,)](y, y, y.copy(), fits, BLOCK=fits)       # the suggestion does fit


def test_over_budget_names_stages_and_the_cube_scopes():
    kernel, args, meta = _launches()["stream_add"]
    x = np.ones(1 << 15, np.float16)
    with pytest.raises(npujit.OutOfResources) as info:
        kernel.with_options(spec=TINY)[(1,)](x, x, x.copy(), x.size, x.size,
                                             BLOCK=1 << 12, NUM_STAGES=2)
    msg = str(info.value)
    assert "x 2 stages" in msg and str(TINY.capacity["UB"]) in msg and "try BLOCK <=" in msg
    a = np.ones((128, 128), np.float16)
    with pytest.raises(npujit.OutOfResources, match="L0C"):
        matmul_kernel.with_options(spec=TINY)[(1, 1)](
            a, a, np.zeros((128, 128), np.float32), 128, 128, 128, 128, 1, 128, 1, 128, 1,
            BLOCK_M=128, BLOCK_N=64, BLOCK_K=64, NUM_STAGES=2)


def test_schedule_is_the_same_whatever_the_backend(backend):
    kernel, args, meta = _launches()["add"]
    text = kernel.with_options(backend=backend).inspect(*args, **meta)["schedule"]
    assert text == kernel.with_options(backend="reference").inspect(*args, **meta)["schedule"]
    x = np.arange(1000, dtype=np.float16)
    out = np.zeros_like(x)
    kernel.with_options(backend=backend)[(4,)](x, x, out, 1000, BLOCK=256)
    np.testing.assert_array_equal(out, x + x)


def test_more_flag_ids_than_the_spec_has_is_out_of_resources():
    kernel, args, meta = _launches()["stream_add"]
    with pytest.raises(npujit.OutOfResources, match="event ids for HardEvent::"):
        kernel.with_options(spec=ASCEND_910_LIKE).inspect(*args, **{**meta, "NUM_STAGES": 5})


def test_dump_ir_prints_any_schedule_pass(monkeypatch, capsys):
    monkeypatch.setenv("NPUJIT_DUMP_IR", "after:insert-sync")
    kernel, args, meta = _launches()["add"]
    fn = parse_function(kernel.inspect(*args, **meta)["ir"])
    schedule(fn, ASCEND_910B_LIKE)
    err = capsys.readouterr().err
    assert "// -----// IR after insert-sync //----- //" in err and "wait_flags" in err
