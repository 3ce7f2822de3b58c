"""The autotuner's stored results: one row per (kernel, key values, config, spec, objective,
compiler), kept on disk as one small JSON file each, shown as a table, exported and imported.

A row is a plain dict (``COLUMNS`` plus the hashes in ``HASH_COLUMNS``), so a table is a
list of dicts: no pandas.  Where rows live::

    <knobs.cache_dir()>/autotune/<kernel name>/<entry>.json

``entry`` is a digest of everything the measurement depends on (``entry_id``): the
kernel's code (``cache_key.kernel_hash``: its bytecode, helpers, the globals they read),
the compiler (``cache_key.compiler_hash``: npujit's sources and the versions it runs on),
the NPU spec's fields, the kernel options that change what is measured (``debug``
adds checks to the code; the backend only matters to wall time), the objective, the
``check=`` function, the key values and the config.  So adding a config to a sweep measures only that config; editing the kernel, the
compiler or the spec measures everything again, and never reads a stale row.  The files
are data (JSON), never code that runs; each is written to a temporary file and renamed
into place, so a reader never sees half a row; a directory that cannot be written keeps
the rows in memory, with one warning.

Example::

    >>> t = TuningTable([{"key": "n=8", "config": "BLOCK=4", "status": "ok",
    ...                   "value": 120, "unit": "cycles", "best": True}])
    >>> t.to_csv().splitlines()[0]
    'key,config,status,objective,value,unit,bound,spread,reason,best,source,spec'
"""
from __future__ import annotations

import csv
import io
import json
import os
import sys
import tempfile
import warnings

from npujit import knobs

from .cache_key import digest

FORMAT = "npujit-tuning/1"
# What a user reads, in table order.
COLUMNS = ("key", "config", "status", "objective", "value", "unit", "bound", "spread",
           "reason", "best", "source", "spec")
# What a row is keyed by (export keeps them, so an import can check them).
HASH_COLUMNS = ("kernel", "kernel_hash", "compiler_hash", "spec_hash", "options", "check",
                "entry")
# A row's status: measured, pruned by the roofline bound, buffers over the spec, result
# rejected by check=, the kernel failed for this config, dropped by the prune= callable.
STATUSES = ("ok", "pruned", "too-big", "rejected", "failed", "dropped")


class AutotuneWarning(UserWarning):
    """A note from the autotuner: a sweep ran in-process instead of in a pool, or its
    results could not be stored on disk."""


def warn(message: str) -> None:
    """An ``AutotuneWarning`` attributed to the user's line (the first frame outside the
    autotuner's modules)."""
    ours = {os.path.join(os.path.dirname(os.path.abspath(__file__)), f)
            for f in ("autotune.py", "tuning.py")}
    level, frame = 2, sys._getframe(1)
    while frame is not None and os.path.abspath(frame.f_code.co_filename) in ours:
        level += 1
        frame = frame.f_back
    warnings.warn(message, AutotuneWarning, stacklevel=level)


def entry_id(row: dict) -> str:
    """The digest a row is stored under (see the module doc for what it covers)."""
    return digest(FORMAT, row["kernel_hash"], row["compiler_hash"], row["spec_hash"],
                  row["options"], row["objective"], row["check"], row["key"], row["config"])


class TuningTable(list):
    """Rows of tuning results (a list of dicts); ``str(table)`` is an aligned text table,
    ``table.to_csv(path=None)`` CSV text (also written to ``path`` if given).

    Example::

        >>> print(TuningTable([{"config": "BLOCK=4", "status": "ok", "value": 9}]))
        config   status  value
        BLOCK=4  ok      9
    """

    def columns(self) -> list:
        """The user columns some row fills, in ``COLUMNS`` order."""
        return [c for c in COLUMNS if any(r.get(c) not in (None, "") for r in self)]

    def __str__(self) -> str:
        cols = self.columns()
        cells = [[_cell(r.get(c)) for c in cols] for r in self]
        widths = [max([len(c)] + [len(row[i]) for row in cells]) for i, c in enumerate(cols)]
        lines = ["  ".join(c.ljust(w) for c, w in zip(cols, widths)).rstrip()]
        lines += ["  ".join(v.ljust(w) for v, w in zip(row, widths)).rstrip() for row in cells]
        return "\n".join(lines)

    def to_csv(self, path: str | None = None) -> str:
        """The table as CSV text (every user column, then the hashes); written to
        ``path`` too when given."""
        out = io.StringIO()
        w = csv.DictWriter(out, fieldnames=list(COLUMNS) + list(HASH_COLUMNS),
                           extrasaction="ignore", lineterminator="\n")
        w.writeheader()
        for r in self:
            w.writerow({k: _cell(v) for k, v in r.items()})
        text = out.getvalue()
        if path is not None:
            with open(path, "w", newline="") as f:
                f.write(text)
        return text


def _cell(v) -> str:
    if v is None:
        return ""
    if isinstance(v, float):
        return f"{v:.6g}"
    return str(v)


class TuningStore:
    """The rows of one kernel: in memory, and on disk under ``knobs.cache_dir()``
    unless ``NPUJIT_DISABLE_CACHE`` is set or the directory cannot be written.

    Example::

        >>> store = TuningStore("matmul_kernel")          # doctest: +SKIP
        >>> store.load(entry_id(row)) is None             # doctest: +SKIP
        True
    """

    def __init__(self, kernel_name: str):
        self.kernel_name = kernel_name
        self._memory: dict = {}
        self._warned = False

    @property
    def root(self) -> str:
        """The kernel's folder (the cache dir is read when asked: a knob may change)."""
        return os.path.join(knobs.cache_dir(), "autotune", _safe(self.kernel_name))

    def load(self, entry: str) -> dict | None:
        """The stored row of ``entry``, or None; an unreadable file counts as missing."""
        row = self._memory.get(entry)
        if row is not None or knobs.cache_disabled():
            return row
        try:
            with open(os.path.join(self.root, entry + ".json")) as f:
                row = json.load(f)
        except (OSError, ValueError):
            return None
        if not isinstance(row, dict) or row.get("entry") != entry:
            return None
        self._memory[entry] = row
        return row

    def save(self, row: dict) -> None:
        """Keep ``row`` (its ``entry`` set) in memory and write it to disk atomically."""
        row = dict(row, entry=entry_id(row))
        self._memory[row["entry"]] = row
        if knobs.cache_disabled():
            return
        root = self.root
        try:
            os.makedirs(root, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=root, prefix=".tmp-", suffix=".json")
            try:
                with os.fdopen(fd, "w") as f:
                    json.dump(row, f, sort_keys=True)
                os.replace(tmp, os.path.join(root, row["entry"] + ".json"))
            except BaseException:
                os.unlink(tmp)
                raise
        except OSError as e:
            if not self._warned:
                self._warned = True
                warn(f"autotune: cannot write tuning results under {root} ({e}); they are "
                     "kept in memory for this process only. Set NPUJIT_CACHE_DIR to a "
                     "writable directory to keep them")

    def rows(self) -> list:
        """Every row stored for this kernel (any code version, key or spec)."""
        found = dict(self._memory)
        if not knobs.cache_disabled():
            try:
                names = sorted(os.listdir(self.root))
            except OSError:
                names = []
            for name in names:
                if name.endswith(".json") and not name.startswith("."):
                    row = self.load(name[:-5])
                    if row is not None:
                        found[row["entry"]] = row
        return list(found.values())


def _safe(name: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in name) or "kernel"


def export_rows(rows: list, path: str, kernel: str) -> int:
    """Write ``rows`` to ``path`` as a tuning-table JSON file; returns how many."""
    with open(path, "w") as f:
        json.dump({"format": FORMAT, "kernel": kernel, "rows": rows}, f, indent=1,
                  sort_keys=True)
    return len(rows)


def read_export(path: str, kernel: str) -> list:
    """The rows of a file ``export_rows`` wrote, checked to be a tuning table of
    ``kernel``; ValueError saying what is wrong otherwise."""
    with open(path) as f:
        try:
            data = json.load(f)
        except ValueError as e:
            raise ValueError(f"{path} is not a tuning table (not JSON: {e})") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise ValueError(f"{path} is not a tuning table of format {FORMAT!r} (written by "
                         "kernel.export_tuning)")
    if data.get("kernel") != kernel:
        raise ValueError(f"{path} holds the tuning table of kernel {data.get('kernel')!r}, "
                         f"not of {kernel!r}")
    rows = data.get("rows")
    if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
        raise ValueError(f"{path}: 'rows' must be a list of objects")
    need = set(HASH_COLUMNS) - {"entry"} | {"key", "config", "objective", "status"}
    for i, r in enumerate(rows):
        missing = sorted(need - set(r))
        if missing:
            raise ValueError(f"{path}: row {i} lacks {', '.join(missing)}")
    return rows
