"""Scheduling scf.if / scf.while with transfers inside: flags balanced per region, the
simulator takes the branch the numbers take, and every debug check (races, NaN-poisoned
buffers, copies landing at their wait, flag balance) passes with numpy's answers."""
from __future__ import annotations

import collections

import numpy as np
import pytest

import npujit.language as nl
from npujit import npu_kernel
from npujit.ir import Kind, parse_function
from npujit.sim import ASCEND_910_LIKE, ASCEND_910B_LIKE, DebugOptions

FULL = DebugOptions.full(raise_on_race=True)


@npu_kernel(backend="reference")
def branchy(flag_ptr, x_ptr, y_ptr, out_ptr, n_iter, BLOCK: nl.constexpr):
    pid = nl.program_id(0)
    offs = pid * BLOCK + nl.arange(0, BLOCK)
    flag = nl.load(flag_ptr + pid)
    if flag > 0:                                   # heavy branch: two loads, a store
        a = nl.load(x_ptr + offs)
        b = nl.load(y_ptr + offs)
        nl.store(out_ptr + offs, a * b + 1.0)
    else:                                          # light branch: a store only
        nl.store(out_ptr + offs, nl.full((BLOCK,), -1.0, nl.float32))
    acc = nl.zeros((BLOCK,), nl.float32)
    for i in nl.range(0, n_iter, num_stages=2):    # a branch inside a pipelined loop
        if i % 2 == 0:
            acc += nl.load(x_ptr + offs)
    j = 0
    while j < flag:                                # a while loop loading every trip
        acc += nl.load(y_ptr + offs)
        j += 1
    nl.store(out_ptr + 64 + offs, acc)


def _want(flag, x, y, n_iter, block):
    out = np.zeros(128, np.float32)
    for pid, f in enumerate(flag.tolist()):
        s = slice(pid * block, (pid + 1) * block)
        out[s] = x[s] * y[s] + 1.0 if f > 0 else -1.0
        out[64 + pid * block:64 + (pid + 1) * block] = \
            x[s] * len(range(0, n_iter, 2)) + y[s] * max(f, 0)
    return out


def _region_flags_balance(text: str) -> int:
    """Checks every scf.if region sets exactly the flags it waits; returns how many
    regions held flags."""
    fn = parse_function(text)
    busy = 0
    for op in fn.walk():
        if op.kind is not Kind.IF:
            continue
        for region in op.regions:
            sets, waits = collections.Counter(), collections.Counter()
            for inner in region.walk():
                for attr, into in (("set_flags", sets), ("pre_set_flags", sets),
                                   ("wait_flags", waits), ("post_wait_flags", waits)):
                    into.update(str(f) for f in inner.attrs.get(attr, ()))
            assert sets == waits, (sets, waits)
            busy += bool(sets)
    return busy


@pytest.mark.parametrize("spec", [ASCEND_910B_LIKE, ASCEND_910_LIKE], ids=lambda s: s.name)
def test_branches_with_transfers_under_full_debug(spec):
    rng = np.random.default_rng(0)
    x, y = rng.random(32).astype(np.float32), rng.random(32).astype(np.float32)
    cycles = {}
    for name, flag in (("mixed", np.array([1, 0, 2, -1], np.int32)),
                       ("heavy", np.array([3, 3, 3, 3], np.int32)),
                       ("light", np.array([0, 0, 0, 0], np.int32))):
        out = np.zeros(128, np.float32)
        report = branchy.simulate(flag, x, y, out, 5, grid=(4,), spec=spec, debug=FULL,
                                  BLOCK=8)
        np.testing.assert_allclose(out, _want(flag, x, y, 5, 8), rtol=1e-6)
        assert report.races == [] and report.flag_issues == []
        assert report.cycles >= report.bound.cycles > 0
        cycles[name] = report.cycles
        if name == "mixed":   # timing only: the slice keeps what decides the branches
            quick = branchy.simulate(flag, x, y, np.zeros(128, np.float32), 5, grid=(4,),
                                     spec=spec, numerics=False, BLOCK=8)
            assert quick.cycles == report.cycles
    # the simulator runs the branch (and the trip count) each program's numbers choose
    assert cycles["light"] < cycles["mixed"] < cycles["heavy"]
    text = branchy.with_options(spec=spec).inspect(
        flag, x, y, out, 5, BLOCK=8)["schedule"]
    assert _region_flags_balance(text) >= 1
    assert '"scf.while"' in text and text.count('"scf.if"') == 2
