"""GM burst counting (sim/bursts.py) against a brute force over every byte touched, and
what it does to a copy's cost (sim/cost.py)."""
import itertools
import random

import numpy as np
import pytest

import npujit.language as nl
from npujit import npu_kernel
from npujit.sim import ASCEND_910B_LIKE, TINY, CoreProgram, copy, simulate
from npujit.sim.bursts import block_bursts, burst_runs, lanes_bursts, lanes_bursts_many
from npujit.sim.cost import copy_bytes, copy_occupancy


def _brute(elements, itemsize, burst) -> int:
    """Bytes of the distinct bursts the elements' bytes fall in."""
    touched = {b // burst for e in elements for b in range(e * itemsize, (e + 1) * itemsize)}
    return len(touched) * burst


def _block_elements(block, checked, shape, strides, offsets):
    ranges = []
    for d in range(len(block)):
        a, b = offsets[d], offsets[d] + block[d]
        if d in checked:
            a, b = max(a, 0), min(b, shape[d])
        ranges.append(range(a, b))
    return [sum(i * s for i, s in zip(idx, strides)) for idx in itertools.product(*ranges)]


def test_block_bursts_match_the_bytes_touched():
    rng = random.Random(0)
    for _ in range(1500):
        nd = rng.randint(1, 3)
        block = tuple(rng.randint(1, 9) for _ in range(nd))
        shape = tuple(rng.randint(1, 12) for _ in range(nd))
        strides = tuple(rng.choice([0, 1, 2, 3, 16, 64, 128, 256, 300]) for _ in range(nd))
        checked = tuple(d for d in range(nd) if rng.random() < 0.5)
        offsets = tuple(rng.randint(-3, 10) if d in checked else rng.randint(0, 10)
                        for d in range(nd))
        itemsize, burst = rng.choice([1, 2, 4, 8]), rng.choice([32, 64, 512])
        want = _brute(_block_elements(block, checked, shape, strides, offsets), itemsize, burst)
        got = block_bursts(block, checked, shape, strides, offsets, itemsize, burst)
        assert got == want, (block, checked, shape, strides, offsets, itemsize, burst)


@pytest.mark.parametrize("stride", [1, 2, 5, 64, 200, 1000])
def test_lane_bursts_are_exact_for_a_uniform_stride(stride):
    rng = random.Random(stride)
    for _ in range(200):
        n, lo = rng.randint(1, 60), rng.randint(0, 300)
        itemsize, burst = rng.choice([1, 2, 4]), rng.choice([32, 512])
        offs = lo + stride * np.arange(n)
        assert lanes_bursts(n, lo, int(offs[-1]), itemsize, burst) == \
            _brute(offs.tolist(), itemsize, burst)


def test_a_gather_pays_at_most_one_burst_per_lane_and_the_span():
    # 3 lanes spread over 40 bursts: 3 bursts; 100 lanes within 2 bursts: 2 bursts
    assert lanes_bursts(3, 0, 40 * 256 - 1, 2, 512) == 3 * 512
    assert lanes_bursts(100, 0, 255, 4, 512) == 2 * 512


def test_lane_bursts_with_runs_bound_the_bytes_touched_and_are_exact_for_row_gathers():
    rng = random.Random(1)
    for _ in range(300):
        itemsize, burst = rng.choice([1, 2, 4]), rng.choice([32, 512])
        width, row = rng.randint(1, 300), rng.randint(1, 2000)
        rows = rng.sample(range(40), rng.randint(1, 8))
        if rng.random() < 0.5:      # row starts on a burst: each row its own bursts
            row = -(-row * itemsize // burst) * burst // itemsize
            rows.sort()
        offs = np.array([r * row + c for r in rows for c in range(width)], np.int64)
        got = lanes_bursts(offs.size, int(offs.min()), int(offs.max()), itemsize, burst,
                           burst_runs(offs, itemsize, burst))
        want = _brute(offs.tolist(), itemsize, burst)
        assert got >= want
        if width <= row and (row * itemsize) % burst == 0:
            assert got == want, (rows, width, row, itemsize, burst)


def test_a_copy_moves_whole_bursts_on_the_910b_like_part():
    spec, burst = ASCEND_910B_LIKE, ASCEND_910B_LIKE.alignment["GM"]
    assert burst == 512 and spec.alignment["UB"] == 32
    # one run from a burst boundary: bytes rounded up to the burst
    assert copy_bytes("GM_to_UB", 100, spec) == burst
    assert copy_bytes("GM_to_UB", 8192 + 1, spec) == 17 * burst
    # a strided copy: the bursts its offsets touch, never less than its UB-aligned bytes
    assert copy_bytes("UB_to_GM", 4096, spec, burst_bytes=16 * burst) == 16 * burst
    assert copy_bytes("GM_to_UB", 4000, spec, burst_bytes=burst) == 4000
    # on-chip paths keep their own alignment
    assert copy_bytes("L1_to_L0A", 100, spec) == spec.alignment["L0A"]
    # the pipe streams the bursts at the port rate (uncontended)
    port = spec.paths["GM_to_UB"]
    rate = min(port.bytes_per_cycle, spec.hbm_bytes_per_cycle)
    assert copy_occupancy("GM_to_UB", 64, spec, burst_bytes=8 * burst) == \
        port.latency + -(-8 * burst // rate)


def test_simulated_hbm_bytes_count_the_bursts():
    prog = CoreProgram("AIV", [copy("GM_to_UB", 64, burst_bytes=4 * 512), copy("GM_to_UB", 64)])
    r = simulate(prog, ASCEND_910B_LIKE)
    assert r.hbm_read_bytes == 4 * 512 + 512
    assert r.bytes_by_path["GM_to_UB"] == 128
    # TINY keeps a 32 B GM granule so its hand-computed tests stay small
    assert simulate(CoreProgram("AIV", [copy("GM_to_UB", 64)]), TINY).hbm_read_bytes == 64


def test_burst_bytes_only_on_gm_copies():
    with pytest.raises(ValueError, match="burst_bytes"):
        copy("L1_to_L0A", 512, burst_bytes=512)


@npu_kernel
def column_kernel(x_ptr, out_ptr, stride, BLOCK: nl.constexpr):
    # a column of a row-major matrix (pointer lanes `stride` elements apart), stored as a row
    offs = nl.arange(0, BLOCK)
    nl.store(out_ptr + offs, nl.load(x_ptr + offs * stride) + 1.0)


@pytest.mark.parametrize("stride", [1, 8, 200])
def test_the_recorder_counts_the_bursts_of_a_strided_load(stride):
    spec, burst = ASCEND_910B_LIKE, ASCEND_910B_LIKE.alignment["GM"]
    block = 64
    x = np.arange(block * stride, dtype=np.float32)
    out = np.zeros(block, np.float32)
    r = column_kernel.with_options(backend="reference").simulate(
        x, out, stride, grid=(1,), spec=spec, BLOCK=block)
    np.testing.assert_array_equal(out, x[::stride] + 1.0)
    # 64 f32 lanes 4 * stride bytes apart: every burst of the span when that is under a
    # burst, else one burst per lane; the store is one 256 B run, one burst
    span = -(-((block - 1) * stride + 1) * 4 // burst)
    assert r.hbm_read_bytes == min(block, span) * burst
    assert r.hbm_write_bytes == burst
    assert r.bytes_by_path["GM_to_UB"] == 4 * block


@npu_kernel
def row_gather_kernel(x_ptr, idx_ptr, out_ptr, H, ROWS: nl.constexpr, BLOCK: nl.constexpr):
    # rows of x picked by index (as the MoE expert kernels gather token rows)
    r = nl.arange(0, ROWS)
    c = nl.arange(0, BLOCK)
    rows = nl.load(idx_ptr + r)
    tile = nl.load(x_ptr + rows[:, None] * H + c[None, :], mask=c[None, :] < H)
    nl.store(out_ptr + r[:, None] * BLOCK + c[None, :], tile)


@pytest.mark.parametrize("backend", ["reference", "numba"])
def test_a_gather_of_rows_pays_for_its_rows_not_their_span(backend):
    spec, burst = ASCEND_910B_LIKE, ASCEND_910B_LIKE.alignment["GM"]
    H, rows = 512, np.array([3, 60, 17, 99], np.int32)     # f32 rows of 2 KiB, far apart
    x = np.arange(100 * H, dtype=np.float32).reshape(100, H)
    out = np.zeros((4, H), np.float32)
    r = row_gather_kernel.with_options(backend=backend).simulate(
        x, rows, out, H, grid=(1,), spec=spec, ROWS=4, BLOCK=H)
    np.testing.assert_array_equal(out, x[rows])
    gathered = [int(i) * H + c for i in rows for c in range(H)]
    index_read = burst                       # the 16 B of indices: one burst
    assert r.hbm_read_bytes == _brute(gathered, 4, burst) + index_read == 17 * burst


def test_many_lane_accesses_at_once_match_one_at_a_time():
    """lanes_bursts_many (the recorder's pass over every repeated program) against
    lanes_bursts per access, and the bursts against a walk of the real offsets."""
    rng = np.random.default_rng(3)
    cases = []
    for _ in range(300):
        stride = int(rng.choice([1, 2, 3, 256, 1000]))
        count = int(rng.integers(0, 70))
        lo = int(rng.integers(0, 5000))
        offsets = lo + stride * np.arange(count)
        cases.append((count, lo, int(offsets[-1]) if count else lo, offsets))
    count = np.array([c for c, _, _, _ in cases], dtype=np.int64)
    lo = np.array([a for _, a, _, _ in cases], dtype=np.int64)
    hi = np.array([b for _, _, b, _ in cases], dtype=np.int64)
    for itemsize, burst in ((2, 512), (4, 32)):
        runs = np.array([burst_runs(o, itemsize, burst) for *_, o in cases], dtype=np.int64)
        for r in (runs, None):
            many = lanes_bursts_many(count, lo, hi, itemsize, burst, r).tolist()
            one = [lanes_bursts(c, a, b, itemsize, burst, None if r is None else int(r[i]))
                   for i, (c, a, b, _) in enumerate(cases)]
            assert many == one
        # uniform strides: exact, the distinct bursts the offsets fall in
        touched = [len(set((o * itemsize // burst).tolist())) * burst for *_, o in cases]
        assert lanes_bursts_many(count, lo, hi, itemsize, burst, runs).tolist() == touched


@npu_kernel
def pieces_kernel(x_ptr, out_ptr, n, H, KIND: nl.constexpr, BLOCK: nl.constexpr):
    # active lanes in several pieces: every other lane of rows H elements apart, 100 of
    # every 256 lanes, or whole rows of H < BLOCK elements that follow each other in x
    offs = nl.arange(0, BLOCK)
    r = nl.arange(0, 8)
    if KIND == 0:
        tile = nl.sum(nl.load(x_ptr + r[:, None] * H + offs[None, :],
                              mask=offs[None, :] % 2 == 0, other=0.0), axis=0)
    elif KIND == 1:
        tile = nl.load(x_ptr + offs, mask=(offs % 256 < 100) & (offs < n), other=0.0)
    else:
        tile = nl.sum(nl.load(x_ptr + r[:, None] * H + offs[None, :],
                              mask=offs[None, :] < H, other=0.0), axis=0)
    nl.store(out_ptr + offs, tile)


@pytest.mark.parametrize("kind, block, h", [(0, 128, 4096), (1, 1024, 0), (2, 1024, 200)])
def test_the_numba_recording_counts_the_bursts_of_lanes_in_pieces(kind, block, h):
    """The numba recording's burst runs (one loop when the active lanes are one piece,
    a second when they are several) against the reference interpreter's walk of the real
    offsets (sim/bursts.py burst_runs), through the whole report."""
    spec, burst = ASCEND_910B_LIKE, ASCEND_910B_LIKE.alignment["GM"]
    x = np.arange(8 * max(block, h), dtype=np.float32)
    reports = []
    for backend in ("reference", "numba"):
        out = np.zeros(block, np.float32)
        reports.append(pieces_kernel.with_options(backend=backend).simulate(
            x, out, 900, h, grid=(1,), spec=spec, KIND=kind, BLOCK=block))
    ref, got = reports
    assert (got.hbm_read_bytes, got.cycles) == (ref.hbm_read_bytes, ref.cycles)
    if kind == 0:       # 8 rows 16 KiB apart, 64 of their first 128 f32 each: 8 bursts
        assert ref.hbm_read_bytes == 8 * burst


def test_rows_reading_interleaved_runs_count_each_burst_once():
    """Each row reads 256 B from two panels (a panel-major workspace): walking the lanes
    leaves each burst and comes back to it on the next row; the lane above has it, so it
    counts once, as the brute force over the bytes does."""
    rows = np.arange(6)[:, None] * 128
    panels = np.concatenate([rows + np.arange(128), rows + 8192 + np.arange(128)], 1)
    assert burst_runs(panels, 2, 512) * 512 == _brute(panels.ravel(), 2, 512) == 6 * 512
    keep = np.arange(6)[:, None] != 3            # a row left out: still exact
    want = _brute(panels[np.broadcast_to(keep, panels.shape)], 2, 512)
    assert burst_runs(panels, 2, 512, keep) * 512 == want == 6 * 512
    gathered = np.array([0, 40, 3, 77])[:, None] * 4096 + np.arange(256)[None, :]
    assert burst_runs(gathered, 2, 512) == 4        # rows far apart: one burst each


@npu_kernel
def panel_rows_kernel(x_ptr, out_ptr, R, BLOCK_M: nl.constexpr, PANEL: nl.constexpr,
                      COLS: nl.constexpr):
    rows = nl.arange(0, BLOCK_M)
    cols = nl.arange(0, COLS)
    offs = ((cols // PANEL) * (R * PANEL) + cols % PANEL)[None, :] + rows[:, None] * PANEL
    v = nl.load(x_ptr + offs, mask=(rows < R - 1)[:, None])
    nl.store(out_ptr + rows[:, None] * COLS + cols[None, :], v)


def test_the_numba_recording_counts_interleaved_runs_as_the_reference_does():
    """A ``[16, 256]`` bf16-sized read of two 128-wide panels on both tiers: the same
    report, and the HBM bytes of the bursts really touched (15 rows of 256 B per panel)."""
    spec, burst = ASCEND_910B_LIKE, ASCEND_910B_LIKE.alignment["GM"]
    R = 16
    x = np.arange(2 * R * 128, dtype=np.float16)
    reports = []
    for backend in ("reference", "numba"):
        out = np.zeros((R, 256), np.float16)
        reports.append(panel_rows_kernel.with_options(backend=backend).simulate(
            x, out, R, grid=(1,), spec=spec, BLOCK_M=R, PANEL=128, COLS=256))
    ref, got = reports
    assert (got.hbm_read_bytes, got.cycles) == (ref.hbm_read_bytes, ref.cycles)
    rows = np.arange(R - 1)[:, None] * 128
    touched = np.concatenate([rows + np.arange(128), rows + R * 128 + np.arange(128)], 1)
    assert ref.hbm_read_bytes == _brute(touched.ravel(), 2, burst)
