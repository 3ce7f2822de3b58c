"""A GM store then a load of the same bytes in one program (a two-phase kernel through a GM
workspace) needs an MTE3 -> MTE2 order.  Without it, the race detector reports a RAW on the
GM region and, with copies landing at their wait, the numbers show the stale bytes.  The
schedule's own flags are removed here, so the test holds whether or not the scheduler
already orders the pair."""
import numpy as np
import pytest

import npujit.language as nl
from npujit import npu_kernel
from npujit.backends.reference.backend import run_buffered
from npujit.ir import parse_function
from npujit.ir.schedule.model import scheduled_ops
from npujit.jit.simulate import lower
from npujit.sim import ASCEND_910B_LIKE, DebugOptions, simulate


@npu_kernel
def workspace_kernel(x_ptr, ws_ptr, out_ptr, BLOCK: nl.constexpr):
    offs = nl.arange(0, BLOCK)
    nl.store(ws_ptr + offs, nl.load(x_ptr + offs) * 2.0)
    nl.store(out_ptr + offs, nl.load(ws_ptr + offs) + 1.0)


def _case(drop_order: bool):
    x = np.arange(64, dtype=np.float32)
    ws, out = np.zeros(64, np.float32), np.zeros(64, np.float32)
    k = workspace_kernel.with_options(backend="reference")
    c = k.compile(x, ws, out, BLOCK=64)
    rt = c.signature.runtime_args(c.sigs, c.runtime_index,
                                  c.signature.bind((x, ws, out), {"BLOCK": 64}))
    fn = parse_function(c.ir_text)
    if drop_order:
        for op in scheduled_ops(fn.body):
            for attr in ("set_flags", "wait_flags"):
                if attr in op.attrs:
                    op.attrs[attr] = [f for f in op.attrs[attr]
                                      if not str(f).startswith("MTE3_MTE2")]
    return fn, rt, x, ws, out


@pytest.mark.parametrize("drop_order", [False, True], ids=["as_scheduled", "no_mte3_mte2"])
def test_stores_land_in_gm_at_their_wait(drop_order):
    fn, rt, x, ws, out = _case(drop_order)
    run_buffered(fn, (1,), rt, poison=False, on_wait=False)      # eager: always right
    np.testing.assert_array_equal(out, 2 * x + 1)
    ws[:] = 0
    out[:] = 0
    run_buffered(fn, (1,), rt, poison=False, on_wait=True)
    np.testing.assert_array_equal(ws, 2 * x)          # every store lands by the program end
    ordered = any(str(f).startswith("MTE3_MTE2") for op in scheduled_ops(fn.body)
                  for f in op.attrs.get("wait_flags", ()))
    if ordered:
        np.testing.assert_array_equal(out, 2 * x + 1)
    else:                                             # the load read GM before the store
        np.testing.assert_array_equal(out, np.ones(64, np.float32))


def test_race_detector_sees_the_gm_round_trip_without_order():
    fn, rt, *_ = _case(drop_order=True)
    report = simulate(lower(fn, (1,), rt), ASCEND_910B_LIKE,
                      debug=DebugOptions(detect_races=True))
    gm = [r for r in report.races if r.buffer == "GM ws_ptr"]
    assert [(r.kind, r.first[0], r.second[0]) for r in gm] == [("RAW", "MTE3", "MTE2")]
