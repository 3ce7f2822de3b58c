"""When a launch goes on threads (backends/threads.py ``ThreadChoice``): probes keep the
faster way, and the launches between probes double while the answer holds and start
over when it changes."""
from __future__ import annotations

import time

from npujit.backends import threads


def _ways(choice, costs, launches):
    """The way of each of ``launches`` launches; ``costs(i)`` -> (serial s, threaded s)."""
    ways = []
    for i in range(launches):
        serial, threaded = costs(i)
        choice.launch(lambda t: (ways.append(t), time.sleep(threaded if t else serial)))
    return ways


def _probes(ways):
    """Where each probe starts: a threaded launch after a serial one that follows a
    different way's run (the probe alternates, from threaded)."""
    starts, i = [], 2
    while i + 6 <= len(ways):
        if ways[i:i + 6] == [True, False] * 3:
            starts.append(i)
            i += 6
        else:
            i += 1
    return starts


def test_a_steady_answer_doubles_the_launches_between_probes(monkeypatch):
    monkeypatch.setattr(threads, "REPROBE_FIRST", 4)
    monkeypatch.setattr(threads, "REPROBE_AFTER", 16)
    choice = threads.ThreadChoice(None, 2, parallel_after=0.0)
    ways = _ways(choice, lambda i: (0.01, 0.0005), 80)
    assert ways[:2] == [False, False]                 # two serial launches, then a probe
    starts = _probes(ways)
    gaps = [b - a - 6 for a, b in zip(starts, starts[1:])]
    assert gaps[:4] == [4, 8, 16, 16]
    for a, b in zip(starts, starts[1:]):              # threads won: threaded in between
        assert all(ways[a + 6:b])


def test_a_changed_answer_probes_again_soon(monkeypatch):
    monkeypatch.setattr(threads, "REPROBE_FIRST", 4)
    monkeypatch.setattr(threads, "REPROBE_AFTER", 64)
    choice = threads.ThreadChoice(None, 2, parallel_after=0.0)
    # threads faster, until the other core is taken: from the first launch after 30
    # that is not part of a probe, serial is faster
    flip = []

    def costs(i):
        if (not flip and i >= 30 and not choice.probe and choice.way is not None
                and choice.until_probe > 0):
            flip.append(i)
        return (0.0005, 0.01) if flip else (0.01, 0.0005)
    ways = _ways(choice, costs, 80)
    starts = _probes(ways)
    first = next(s for s in starts if s >= flip[0])
    assert not any(ways[first + 6:first + 10])        # serial now, for REPROBE_FIRST
    assert first + 10 in starts                       # and probed again right after


def test_a_probe_does_not_time_threaded_launches_that_ran_alone(monkeypatch):
    # The first threaded launches of each probe "ran alone" (the workers asleep) and
    # were slow; the probe runs them again and times the ones with help.
    monkeypatch.setattr(threads, "REPROBE_FIRST", 4)
    choice = threads.ThreadChoice(None, 2, parallel_after=0.0)
    alone = [2]                      # the next this many threaded launches run alone
    timed = []

    def run(threaded):
        if threaded and alone[0] > 0:
            alone[0] -= 1
            time.sleep(0.01)
            return False
        time.sleep(0.0005 if threaded else 0.004)
        timed.append(threaded)
        return True if threaded else None
    for _ in range(2 + 6 + 2):
        choice.launch(run)
    assert choice.way is True and choice.best[True] < 0.004
    assert choice.retries == 2
