"""The numba backend's recording mode (backends/numba/record.py): a recorded launch,
replayed against the IR, drives an interpreter hook exactly as the reference interpreter
does -- same programs, same loop trip counts, same lanes and offsets moved by every memory
op -- and the outputs are the normal ones."""
import numpy as np
import pytest

import npujit.language as nl
from npujit import OutOfBoundsError, npu_kernel
from npujit.backends.numba.backend import record_launch
from npujit.backends.numba.record import replay
from npujit.backends.reference.backend import bind_args
from npujit.backends.reference.interpreter import Plan
from npujit.ir.ops import Kind
from npujit.kernels import numpy_reference as ref
from npujit.kernels.elementwise import add_stream_kernel
from npujit.kernels.matmul import matmul_kernel
from npujit.kernels.softmax import softmax_kernel


@npu_kernel
def counted_scale(x_ptr, out_ptr, counts_ptr, BLOCK: nl.constexpr):
    pid = nl.program_id(0)
    for t in nl.range(0, nl.load(counts_ptr + pid), 1, num_stages=2):
        offs = (pid * 8 + t) * BLOCK + nl.arange(0, BLOCK)
        nl.store(out_ptr + offs, nl.load(x_ptr + offs) * 2.0)


class Log:
    """An independent hook: what ran, per program, with each memory op's moved lanes."""

    def __init__(self):
        self.events = []

    def begin(self, program):
        self.events.append(("program", tuple(int(p) for p in program.pid)))

    def end(self, program):
        self.events.append(("end",))

    def before(self, program, op, operands):
        if op.kind is Kind.YIELD:
            self.events.append(("iteration", op.parent.parent_op.loc.line))

    def after(self, program, op, operands, results):
        k = op.kind
        if k in (Kind.LOAD, Kind.STORE, Kind.ATOMIC_RMW):
            offs = np.asarray(operands[1]).reshape(-1)
            m = 2 if k is Kind.LOAD else 3
            if len(operands) > m:
                offs = offs[np.broadcast_to(operands[m], np.shape(operands[1])).reshape(-1)]
            summary = (offs.size, int(offs.min()), int(offs.max())) if offs.size else (0,)
        elif k in (Kind.BLOCK_LOAD, Kind.BLOCK_STORE):
            r = len(op.attrs["block_shape"])
            summary = tuple(int(x) for x in operands[1:1 + 3 * r])
        else:
            summary = ()
        self.events.append((k.value, op.loc.line, summary))


def _case(kernel, args, meta):
    k = kernel.with_options(backend="reference")
    c = k.compile(*args, **meta)
    rt = c.signature.runtime_args(c.sigs, c.runtime_index, c.signature.bind(args, meta))
    return c.ir, rt


def _check(fn, grid, make_args, outputs):
    """Record on numba, replay into a Log; run the reference interpreter with a Log; the
    logs and the outputs must agree."""
    args_nb, args_ref = make_args(), make_args()
    events = record_launch(fn, grid, args_nb)
    got = Log()
    replay(fn, grid, events, got)
    want = Log()
    Plan(fn).run(tuple(grid), bind_args(fn, args_ref), hook=want)
    assert got.events == want.events
    for i in outputs:
        np.testing.assert_allclose(args_nb[i], args_ref[i], rtol=1e-6, atol=1e-6)
    return args_nb


@pytest.mark.parametrize("stages", [1, 2])
def test_streaming_add_with_ragged_masks(stages):
    rng = np.random.default_rng(1)
    x, y = rng.standard_normal(1000).astype(np.float32), rng.standard_normal(1000).astype(np.float32)
    fn, rt = _case(add_stream_kernel, (x, y, np.zeros(1000, np.float32), 1000, 384),
                   {"BLOCK": 128, "NUM_STAGES": stages})
    out = _check(fn, (3, 1, 1), lambda: [x, y, np.zeros(1000, np.float32), 1000, 384], [2])
    np.testing.assert_array_equal(out[2], x + y)


def test_matmul_with_block_pointers_and_ragged_edges():
    rng = np.random.default_rng(2)
    a = rng.random((40, 24)).astype(np.float16)
    b = rng.random((24, 36)).astype(np.float16)
    meta = {"BLOCK_M": 16, "BLOCK_N": 16, "BLOCK_K": 16, "NUM_STAGES": 2}
    scalars = [40, 36, 24, 24, 1, 36, 1, 36, 1]
    fn, _ = _case(matmul_kernel, (a, b, np.zeros((40, 36), np.float32), *scalars), meta)
    out = _check(fn, (3, 3, 1), lambda: [a.reshape(-1), b.reshape(-1),
                                         np.zeros(40 * 36, np.float32), *scalars], [2])
    np.testing.assert_allclose(out[2].reshape(40, 36), ref.matmul_f32(a, b), rtol=1e-5,
                               atol=1e-5)


def test_data_dependent_trip_counts_and_softmax():
    x = np.arange(4 * 8 * 16, dtype=np.float32)
    counts = np.array([3, 0, 8, 1], np.int32)
    fn, _ = _case(counted_scale, (x, np.zeros_like(x), counts), {"BLOCK": 16})
    _check(fn, (4, 1, 1), lambda: [x, np.zeros_like(x), counts], [1])
    s = np.random.default_rng(3).standard_normal((3, 50)).astype(np.float32)
    fn, _ = _case(softmax_kernel, (s, np.zeros_like(s), 50, 50, 50), {"BLOCK": 64})
    out = _check(fn, (3, 1, 1), lambda: [s.reshape(-1), np.zeros(150, np.float32), 50, 50, 50],
                 [1])
    np.testing.assert_allclose(out[1].reshape(3, 50), ref.softmax(s), rtol=1e-5, atol=1e-7)


def test_events_that_do_not_match_the_ir_are_an_error():
    x = np.arange(64, dtype=np.float32)
    fn, _ = _case(counted_scale, (x, np.zeros_like(x), np.array([1], np.int32)), {"BLOCK": 16})
    events = record_launch(fn, (1, 1, 1), [x, np.zeros_like(x), np.array([1], np.int32)])
    with pytest.raises(ValueError, match="does not match"):
        replay(fn, (1, 1, 1), events[1:], Log())


class _Walked:
    """A StreamRecorder without ``repeat``: the replay walks every program."""

    def __init__(self, rec):
        self.rec = rec

    def __getattr__(self, name):
        if name == "repeat":
            raise AttributeError(name)
        return getattr(self.rec, name)


@pytest.mark.parametrize("case", ["matmul", "softmax"])
def test_repeated_programs_give_the_streams_a_walk_gives(case):
    """Programs that ran alike are recorded from the first one's stream with their own GM
    regions (``hook.repeat``): instruction for instruction what walking each one gives,
    with the same sharing of CoreProgram objects."""
    from npujit.sim import ASCEND_910_LIKE, StreamRecorder
    rng = np.random.default_rng(4)
    if case == "matmul":          # boundary tiles (K = 40, M = 40) and re-read A/B tiles
        a = rng.random((40, 40)).astype(np.float16)
        b = rng.random((40, 48)).astype(np.float16)
        args = (a, b, np.zeros((40, 48), np.float32), 40, 48, 40, 40, 1, 48, 1, 48, 1)
        meta = {"BLOCK_M": 16, "BLOCK_N": 16, "BLOCK_K": 16, "NUM_STAGES": 2}
        kernel, grid = matmul_kernel, (3, 3, 1)
    else:
        x = rng.standard_normal((5, 40)).astype(np.float32)
        args, meta = (x, np.zeros_like(x), 40, 40, 40), {"BLOCK": 64}
        kernel, grid = softmax_kernel, (5, 1, 1)
    c = kernel.with_options(spec=ASCEND_910_LIKE).compile(*args, **meta)
    rt = c.signature.runtime_args(c.sigs, c.runtime_index, c.signature.bind(args, meta))
    events = record_launch(c.ir, grid, rt)
    fast = StreamRecorder(c.ir, gm_regions=True, spec=ASCEND_910_LIKE)
    walked = StreamRecorder(c.ir, gm_regions=True, spec=ASCEND_910_LIKE)
    replay(c.ir, grid, events, fast)
    replay(c.ir, grid, events, _Walked(walked))
    assert fast._repeats                                   # some programs were repeats
    fp, wp = fast.programs, walked.programs
    assert [p.instrs for p in fp] == [p.instrs for p in wp]
    assert [fp.index(p) for p in fp] == [wp.index(p) for p in wp]


@npu_kernel
def varied_rows(x_ptr, out_ptr, counts_ptr, n, BLOCK: nl.constexpr):
    """Each program scales its row a data-dependent number of times; a count past the
    row makes the load leave x (an out-of-bounds error naming its program)."""
    pid = nl.program_id(0)
    offs = pid * BLOCK + nl.arange(0, BLOCK)
    acc = nl.zeros((BLOCK,), dtype=nl.float32)
    for t in nl.range(0, nl.load(counts_ptr + pid), 1):
        acc += nl.load(x_ptr + offs + t * n)
    nl.store(out_ptr + offs, acc)


def test_a_recording_on_two_threads_gives_the_serial_events_and_outputs():
    """Programs record on two threads from 64 per thread (runtime.RECORD_THREADED_FROM):
    the events joined in grid order are the serial run's, event for event; a bad program
    raises the same error as serially, the first in grid order."""
    P, B = 300, 8
    rng = np.random.default_rng(5)
    x = rng.standard_normal(4 * P * B).astype(np.float32)
    counts = rng.integers(0, 4, P).astype(np.int32)
    fn, _ = _case(varied_rows, (x, np.zeros(P * B, np.float32), counts, P * B), {"BLOCK": B})
    runs = {}
    for threads in (1, 2):
        out = np.zeros(P * B, np.float32)
        events = record_launch(fn, (P, 1, 1), [x, out, counts, P * B],
                               {"num_threads": threads})
        runs[threads] = events, out
    np.testing.assert_array_equal(runs[2][0], runs[1][0])
    want = sum(x[t * P * B:(t + 1) * P * B] * (t < counts.repeat(B)) for t in range(4))
    np.testing.assert_allclose(runs[2][1], want, rtol=1e-6)
    bad = counts.copy()
    bad[[170, 190]] = 9                  # program 170 is the first to leave x
    for threads in (1, 2):
        with pytest.raises(OutOfBoundsError, match=r"program \(170, 0, 0\)"):
            record_launch(fn, (P, 1, 1), [x, np.zeros(P * B, np.float32), bad, P * B],
                          {"num_threads": threads})
