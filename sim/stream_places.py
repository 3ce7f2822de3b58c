"""Where every recorded program of a launch sends its GM copies, placed for the whole
launch at once, and the distinct ``CoreProgram`` objects that makes.

``sim/lower.py``'s stream recorder keeps each distinct stream once, as a template with
its GM copies marked (``_Template``); a program is a template and one ``(gm_region,
burst_bytes)`` place per mark.  Walked programs bring their places as tuples; programs the
numba recording found to have run like an earlier one (``backends/numba/record.py``
``Repeats``) bring only where their events start, and their places come from the events
here, in numpy: per mark, a pointer access's ``(count, lo, hi[, burst runs])`` rows and a
block access's ``(shape, stride, offset)`` rows per axis (the block's answer computed once
per distinct row).  Regions are numbered (a pointer access's ``(name, lo, hi, count)`` as
an int row, other regions through a dict), so the regions touched once (``sim.l2.ONCE``)
and the programs with equal places (one ``CoreProgram``) are found by ``np.unique``; only
the distinct programs become Python tuples.

Example::

    >>> placed = LaunchPlaces(groups, events, runs, access_of)    # doctest: +SKIP
    >>> programs = placed.shared_programs("AIV", "add_kernel")    # doctest: +SKIP
"""
from __future__ import annotations

import numpy as np

from .isa import CoreProgram
from .l2 import ONCE

NONE = -1          # no region / no burst_bytes (None)
ONCE_CODE = -2     # a region no other copy of the launch touches


def unique_rows(rows: np.ndarray) -> tuple:
    """``(first, inverse, counts)`` of the distinct rows of the 2-D int64 ``rows``: the
    index of each distinct row's first occurrence, each row's distinct number, how many
    rows each one has.  Rows are compared by a wrapping int64 hash, then checked exactly
    (``np.unique(axis=0)``, ~10x slower, if two ever collide).

    Example::

        >>> first, inverse, counts = unique_rows(np.array([[1, 2], [3, 4], [1, 2]]))
        >>> first[inverse].tolist(), counts[inverse].tolist()
        ([0, 1, 0], [2, 1, 2])
    """
    if rows.shape[1] == 0:
        return (np.zeros(min(len(rows), 1), np.int64), np.zeros(len(rows), np.int64),
                np.full(min(len(rows), 1), len(rows), np.int64))
    weights = np.random.default_rng(0).integers(1, 1 << 62, rows.shape[1]) | 1
    _, first, inverse, counts = np.unique(rows @ weights, return_index=True,
                                          return_inverse=True, return_counts=True)
    if not (rows == rows[first[inverse]]).all():
        _, first, inverse, counts = np.unique(rows, axis=0, return_index=True,
                                              return_inverse=True, return_counts=True)
    return first, inverse.ravel(), counts


class _Group:
    """The programs of one template: ``index`` (launch order, ascending), ``codes``
    (region number per mark, raw), ``bursts`` (``burst_bytes`` per mark, ``NONE`` for
    None) and where each program's id comes from."""

    __slots__ = ("template", "index", "codes", "bursts", "walked_pids", "batches", "source")

    def __init__(self, template):
        self.template = template
        self.walked_pids: list = []
        self.batches: list = []

    def pid(self, k: int) -> tuple:
        """The program id of the ``k``-th program of the group."""
        which, at = self.source[k]
        return self.walked_pids[at] if which < 0 else self.batches[which].pid(at)


class LaunchPlaces:
    """The places of every recorded program (see the module docstring).

    ``walked``: ``(index, pid, template, places)`` per walked program; ``batches``:
    ``(template, Repeats)``; ``ev``/``runs``: the recording's events (None when nothing
    was repeated); ``access_of(op)``: the recorder's ``_Access`` of a marked op."""

    def __init__(self, walked: list, batches: list, ev, runs: bool, access_of):
        self._py: dict = {}            # region tuple (not a pointer access's) -> number
        self._py_regions: list = []
        self._names: dict = {}         # a pointer access's argument name -> number
        groups: dict = {}
        for index, pid, template, places in walked:
            g = groups.get(id(template))
            if g is None:
                g = groups[id(template)] = _Group(template)
            g.walked_pids.append((index, pid, places))
        for template, repeats in batches:
            g = groups.get(id(template))
            if g is None:
                g = groups[id(template)] = _Group(template)
            g.batches.append(repeats)
        self.groups = list(groups.values())
        self.count = sum(len(g.walked_pids) + sum(len(b) for b in g.batches)
                         for g in self.groups)
        lane_rows, lane_at = [], []
        for g in self.groups:
            self._place(g, ev, runs, [access_of(op) for _, _, op in g.template.marks],
                        lane_rows, lane_at)
        # Number the pointer accesses' regions after the others, by one unique over all.
        npy = len(self._py_regions)
        if lane_rows:
            rows = np.concatenate(lane_rows)
            first, inverse, lane_n = unique_rows(rows)
            self._lanes = rows[first]
            inverse = inverse + npy
            start = 0
            for (g, m, valid), part in zip(lane_at, lane_rows):
                g.codes[valid, m] = inverse[start:start + len(part)]
                start += len(part)
        else:
            self._lanes, lane_n = np.zeros((0, 4), np.int64), np.zeros(0, np.int64)
        py_n = np.zeros(npy, np.int64)
        for g in self.groups:
            c = g.codes[(g.codes >= 0) & (g.codes < npy)]
            py_n += np.bincount(c, minlength=npy)
        self._touches = np.concatenate([py_n, lane_n])
        self._name_of = list(self._names)

    def _place(self, g: _Group, ev, runs: bool, accesses: list, lane_rows: list,
               lane_at: list) -> None:
        walked = g.walked_pids
        g.walked_pids = [pid for _, pid, _ in walked]
        index = [np.array([i for i, _, _ in walked], np.int64)]
        source = [np.stack([np.full(len(walked), -1, np.int64),
                            np.arange(len(walked), dtype=np.int64)], axis=1)]
        for b, repeats in enumerate(g.batches):
            index.append(repeats.index)
            source.append(np.stack([np.full(len(repeats), b, np.int64),
                                    np.arange(len(repeats), dtype=np.int64)], axis=1))
        index = np.concatenate(index)
        order = np.argsort(index, kind="stable")
        g.index, g.source = index[order], np.concatenate(source)[order].tolist()
        n, marks = len(index), len(accesses)
        codes = np.full((n, marks), NONE, np.int64)
        bursts = np.full((n, marks), NONE, np.int64)
        lanes = np.zeros((n, marks, 4), np.int64)       # name, lo, hi, count
        lane_valid = np.zeros((n, marks), bool)
        for k, (_, _, places) in enumerate(walked):
            for m, ((region, burst), access) in enumerate(zip(places, accesses)):
                bursts[k, m] = NONE if burst is None else burst
                if region is None:
                    continue
                if access.lanes:
                    lanes[k, m] = (self._name(region[0]), *region[1:])
                    lane_valid[k, m] = True
                else:
                    codes[k, m] = self._py_code(region)
        if g.batches:
            rows = len(walked)
            starts = np.concatenate([r.starts for r in g.batches])
            events = np.array([event for _, event, _ in g.template.marks], np.int64)
            at = starts[:, None] + events
            for m, access in enumerate(accesses):
                part = slice(rows, rows + len(starts))
                if access.lanes:
                    count, lo, hi = ev[at[:, m], 1], ev[at[:, m], 2], ev[at[:, m], 3]
                    bursts[part, m] = access.lanes_bursts(
                        count, lo, hi, ev[at[:, m] + 1, 1] if runs else None)
                    if access.regions:
                        lanes[part, m, 0] = self._name(access.name)
                        lanes[part, m, 1], lanes[part, m, 2] = lo, hi
                        lanes[part, m, 3] = count
                        lane_valid[part, m] = count > 0
            by_rank: dict = {}
            for m, access in enumerate(accesses):
                if not access.lanes:
                    by_rank.setdefault(len(access.block), []).append(m)
            for ms in by_rank.values():
                codes[rows:, ms], bursts[rows:, ms] = self._blocks(
                    [accesses[m] for m in ms], ev, at[:, ms])
        g.codes, g.bursts = codes[order], bursts[order]
        lanes, lane_valid = lanes[order], lane_valid[order]
        for m in range(marks):
            valid = lane_valid[:, m]
            if valid.any():
                lane_rows.append(lanes[valid, m])
                lane_at.append((g, m, valid))

    def _blocks(self, accesses: list, ev, at: np.ndarray) -> tuple:
        """Region numbers and ``burst_bytes`` of block accesses of one rank, ``at[k, j]``
        the row where the events of the ``k``-th program's access ``accesses[j]`` start:
        ``block_place`` once per distinct access and ``(shape, offsets, strides)``."""
        n, marks = at.shape
        r = len(accesses[0].block)
        rows = ev[at[:, :, None] + np.arange(r)]       # (n, marks, r, [op, shape, stride, off])
        layout = np.concatenate([np.broadcast_to(np.arange(marks)[:, None], (n, marks, 1)),
                                 rows[..., 1], rows[..., 3], rows[..., 2]], axis=2)
        first, inverse, _ = unique_rows(layout.reshape(n * marks, 1 + 3 * r))
        codes, bursts = [], []
        for j, *row in layout.reshape(n * marks, -1)[first].tolist():
            region, burst = accesses[j].block_place(row[:r], row[r:2 * r], row[2 * r:])
            codes.append(NONE if region is None else self._py_code(region))
            bursts.append(NONE if burst is None else burst)
        inverse = inverse.reshape(n, marks)
        return np.array(codes, np.int64)[inverse], np.array(bursts, np.int64)[inverse]

    def _name(self, name: str) -> int:
        return self._names.setdefault(name, len(self._names))

    def _py_code(self, region) -> int:
        code = self._py.get(region)
        if code is None:
            code = self._py[region] = len(self._py_regions)
            self._py_regions.append(region)
        return code

    def region(self, code: int):
        """The region tuple numbered ``code`` (None for ``NONE``, ONCE for ``ONCE_CODE``)."""
        if code < 0:
            return None if code == NONE else ONCE
        npy = len(self._py_regions)
        if code < npy:
            return self._py_regions[code]
        name, lo, hi, count = self._lanes[code - npy].tolist()
        return (self._name_of[name], lo, hi, count)

    def _places(self, codes: list, bursts: list) -> tuple:
        return tuple((self.region(c), None if b == NONE else b) for c, b in zip(codes, bursts))

    def streams(self) -> list:
        """``(pid, template, places)`` of every program in launch order (regions as
        recorded, none replaced by ONCE)."""
        out = [None] * self.count
        for g in self.groups:
            for k, (i, c, b) in enumerate(zip(g.index.tolist(), g.codes.tolist(),
                                               g.bursts.tolist())):
                out[i] = (g.pid(k), g.template, self._places(c, b))
        return out

    def shared_programs(self, core: str, name: str) -> list:
        """One ``CoreProgram`` per program in launch order; programs of one template whose
        places are equal (a region touched once being ONCE) share one object, named after
        the first of them."""
        out = np.empty(self.count, dtype=object)
        once = self._touches == 1
        for g in self.groups:
            final = g.codes.copy()
            touched = final >= 0
            final[touched & once[np.where(touched, final, 0)]] = ONCE_CODE
            key = np.concatenate([final, g.bursts], axis=1)
            first, inverse, _ = unique_rows(key)
            rows = key[first]
            marks = final.shape[1]
            # each mark's distinct (region, burst) pair placed once: one Instr object in
            # every program that places it so (the queue compiler finds it by identity)
            placed = []
            for m, (pos, _, _) in enumerate(g.template.marks):
                pairs, which, _ = unique_rows(rows[:, [m, marks + m]])
                ins = g.template.instrs[pos]
                choices = []
                for code, burst in rows[pairs][:, [m, marks + m]].tolist():
                    region, burst = self.region(code), None if burst == NONE else burst
                    choices.append(ins if (ins.gm_region, ins.burst_bytes) == (region, burst)
                                   else ins._replace(gm_region=region, burst_bytes=burst))
                placed.append((pos, [choices[w] for w in which.tolist()]))
            positions = tuple(pos for pos, _ in placed)
            objs = np.empty(len(first), dtype=object)
            for u, k in enumerate(first.tolist()):
                instrs = list(g.template.instrs)
                for pos, choices in placed:
                    instrs[pos] = choices[u]
                objs[u] = CoreProgram(core, instrs, name=f"{name}{g.pid(k)}",
                                      placed_from=(g.template.instrs, positions))
            out[g.index] = objs[inverse]
        return out.tolist()
