"""The shared-bandwidth server against a naive O(n)-per-event fluid reference."""
import random

import pytest

from npujit.sim.hbm import INF, HBMServer


def naive_finish_times(bw, flows):
    """Max-min fair sharing with caps, recomputed from scratch at every event."""
    t, rem, fin = 0.0, {}, [None] * len(flows)
    pending = sorted(range(len(flows)), key=lambda i: (flows[i][0], i))
    k = 0
    while k < len(pending) or rem:
        active = sorted(rem, key=lambda i: flows[i][2])
        rates, left = {}, bw
        for j, i in enumerate(active):
            rates[i] = min(flows[i][2], left / (len(active) - j))
            left -= rates[i]
        t_arrive = flows[pending[k]][0] if k < len(pending) else INF
        t_finish = min((t + rem[i] / rates[i] for i in active), default=INF)
        t_next = min(t_arrive, t_finish)
        for i in active:
            rem[i] -= rates[i] * (t_next - t)
        t = t_next
        for i in list(rem):
            if rem[i] <= 1e-7 * flows[i][1]:
                fin[i] = t
                del rem[i]
        while k < len(pending) and flows[pending[k]][0] <= t:
            rem[pending[k]] = flows[pending[k]][1]
            k += 1
    return fin


def server_finish_times(bw, flows):
    s = HBMServer(bw)
    order = sorted(range(len(flows)), key=lambda i: (flows[i][0], i))
    fin, k = [None] * len(flows), 0
    while True:
        tf = s.peek()
        ta = flows[order[k]][0] if k < len(order) else INF
        if ta < tf:
            s.add(ta, flows[order[k]][1], flows[order[k]][2], order[k])
            k += 1
        elif tf == INF:
            break
        else:
            for i in s.pop_finished(tf):
                fin[i] = tf
    return fin, s


@pytest.mark.parametrize("seed", range(40))
def test_matches_naive_fluid_model(seed):
    rng = random.Random(seed)
    bw = rng.choice([100.0, 256.0, 888.9])
    caps = rng.sample([30.0, 64.0, 86.0, 110.0, 256.0], rng.randint(1, 3))
    flows = [(rng.randint(0, 300), rng.randint(1, 8000), rng.choice(caps))
             for _ in range(rng.randint(1, 60))]
    expected = naive_finish_times(bw, flows)
    got, server = server_finish_times(bw, flows)
    for e, g in zip(expected, got):
        assert g == pytest.approx(e, rel=1e-6, abs=1e-6)
    # conservation: the server integrated exactly the bytes it was given
    assert server.served == pytest.approx(sum(f[1] for f in flows), rel=1e-9)


def test_many_flows_switch_to_one_shared_clock_and_back():
    s = HBMServer(100.0)
    for i in range(20):
        s.add(0, 1000 + i, 64.0, i)        # 20 x 64 >> 100: everyone gets 5 B/cycle
    assert s.peek() == pytest.approx(1000 / 5)
    assert s.shared
    done = []
    while s.peek() != INF:
        done += s.pop_finished(s.peek())
    assert done == list(range(20)) and not s.shared


def test_lone_transfer_runs_at_its_cap():
    s = HBMServer(1000.0, record=True)
    s.add(5, 640, 64.0, "x")
    assert s.peek() == 15.0
    assert s.pop_finished(15.0) == ["x"]
    assert s.samples[0] == (5, 64.0)


@pytest.mark.parametrize("seed", range(40, 70))
def test_arrival_queue_matches_naive_fluid_model(seed):
    """The engine's path: transfers queued on ``arrivals`` and admitted by next_completion."""
    import heapq
    rng = random.Random(seed)
    bw = rng.choice([100.0, 256.0, 888.9])
    caps = rng.sample([30.0, 64.0, 86.0, 110.0, 256.0], rng.randint(1, 3))
    flows = [(rng.randint(0, 300), rng.randint(1, 8000), rng.choice(caps))
             for _ in range(rng.randint(1, 60))]
    s = HBMServer(bw)
    for i, (t, nbytes, cap) in enumerate(flows):
        heapq.heappush(s.arrivals, (t, i, nbytes, cap, i))
    got = [None] * len(flows)
    while (tf := s.next_completion()) != INF:
        for i in s.pop_finished(tf):
            got[i] = tf
    for e, g in zip(naive_finish_times(bw, flows), got):
        assert g == pytest.approx(e, rel=1e-6, abs=1e-6)


def test_next_completion_stops_at_the_callers_limit():
    import heapq
    s = HBMServer(100.0)
    heapq.heappush(s.arrivals, (50, 1, 1000, 100.0, "late"))
    assert s.next_completion(limit=20) == INF and len(s.arrivals) == 1
    assert s.next_completion() == 60.0
