"""Every environment knob npujit reads, in one typed place.

``NPUJIT_CACHE_DIR``      where compiled kernels are kept (default: the per-user cache dir)
``NPUJIT_DISABLE_CACHE``  1 = never read or write the disk cache
``NPUJIT_ALWAYS_COMPILE`` 1 = compile every specialisation afresh (nothing is read from the
                          disk cache; what is compiled is still written to it)
``NPUJIT_CACHE_SHARED``   1 = the cache directory is a team's: accept a group-writable
                          directory and entries owned by other users (docs/cache.md)
``NPUJIT_CACHE_MAX_MB``   size cap of the disk cache; least recently used entries are
                          evicted beyond it (default 1024)
``NPUJIT_MEMORY_CACHE_SIZE`` compiled specialisations each kernel keeps in memory, least
                          recently used dropped beyond it (default 64)
``NPUJIT_DUMP_IR``        ``all`` or ``after:<pass>[,<pass>...]``: print the IR after passes
``NPUJIT_BACKEND``        default backend for launches: ``llvm`` (default: LLVM IR compiled by
                          llvmlite, no numba; docs/llvm.md), ``numba``, ``reference`` or
                          ``ascendc-twin`` (the emitted Ascend C, built against the CPU twin)
``NPUJIT_DEBUG``          1 = bounds-check every GM access, run nl.device_assert, check int32
                          index arithmetic for wrap-around (both backends)
``NPUJIT_BOUNDS_CHECK``   0 = skip the default range check of every GM access (the CPU
                          backends; for benchmarks only: a bad offset then corrupts memory)
``NPUJIT_NUM_THREADS``    threads the CPU backends (llvm, numba) run a grid's programs on
                          (0 = the CPU count)
``NPUJIT_WIDE_VECTORS``   0 = leave numba's vector width alone (default: 512-bit vectors
                          on AVX-512 hosts; backends/numba/vector_width.py)
``NPUJIT_AUTOTUNE_PROGRESS`` 0 = no progress bar while an autotuning sweep runs (it shows
                          only when stderr is a terminal anyway)
``NPUJIT_AUTOTUNE_WORKERS`` processes of the autotuner's default pool (default: the CPU
                          count; 0 = measure every config in the calling process)
``NPUJIT_ONE_BIT_FLAGS``  0 = the timing simulator counts flag sets instead of modelling
                          the hardware's 1-bit flags (the default of ``npujit.sim.simulate``
                          and ``kernel.simulate``; a set on a still-set flag is an error)
``NPUJIT_SIM_ENGINE``     the timing simulator's engine: ``auto`` (default: the compiled
                          engine for launches of at least ``NPUJIT_SIM_COMPILED_MIN``
                          instructions, else the Python one), ``compiled`` or ``python``
``NPUJIT_SIM_COMPILED_MIN`` the ``auto`` engine's size threshold in instructions (default
                          20000)
``NPUJIT_SIM_COMPILED_COLD_MIN`` instructions a process runs on the Python engine before
                          the ``auto`` engine compiles a compiled engine that is not in
                          numba's cache yet (default 10000000)

Example::

    >>> from npujit import knobs
    >>> knobs.backend()
    'numba'
"""
from __future__ import annotations

import os


def env_bool(name: str, default: bool = False) -> bool:
    v = os.environ.get(name)
    if v is None or v == "":
        return default
    return v.strip().lower() in ("1", "true", "yes", "on")


def env_int(name: str, default: int) -> int:
    v = os.environ.get(name)
    if v is None or v.strip() == "":
        return default
    try:
        return int(v)
    except ValueError:
        raise ValueError(f"environment variable {name}={v!r} must be an integer") from None


def env_str(name: str, default: str) -> str:
    v = os.environ.get(name)
    return default if v is None or v == "" else v


def cache_dir() -> str:
    """The root of the on-disk kernel cache."""
    d = os.environ.get("NPUJIT_CACHE_DIR")
    if not d:
        import platformdirs
        d = platformdirs.user_cache_dir("npujit")
    return d


def cache_disabled() -> bool:
    return env_bool("NPUJIT_DISABLE_CACHE")


def always_compile() -> bool:
    return env_bool("NPUJIT_ALWAYS_COMPILE")


def cache_shared() -> bool:
    return env_bool("NPUJIT_CACHE_SHARED")


def cache_max_bytes() -> int:
    """The disk cache's size cap in bytes (``NPUJIT_CACHE_MAX_MB``, default 1024 MB)."""
    return env_int("NPUJIT_CACHE_MAX_MB", 1024) << 20


def memory_cache_size() -> int:
    """Specialisations a kernel keeps in memory (``NPUJIT_MEMORY_CACHE_SIZE``, default 64)."""
    return max(1, env_int("NPUJIT_MEMORY_CACHE_SIZE", 64))


def dump_ir() -> str:
    return env_str("NPUJIT_DUMP_IR", "")


def backend() -> str:
    return env_str("NPUJIT_BACKEND", "llvm")


def debug() -> bool:
    return env_bool("NPUJIT_DEBUG")


def bounds_check() -> bool:
    """The default of the ``bounds_check`` kernel option (``NPUJIT_BOUNDS_CHECK``, on)."""
    return env_bool("NPUJIT_BOUNDS_CHECK", True)


# The knobs a launch's default options come from (``NPUJIT_BACKEND``, ``NPUJIT_DEBUG``,
# ``NPUJIT_BOUNDS_CHECK``): the warm launch keys on their raw text (``launch_env``).
_LAUNCH_KNOBS = ("NPUJIT_BACKEND", "NPUJIT_DEBUG", "NPUJIT_BOUNDS_CHECK")
_LAUNCH_KEYS = tuple(os.environ.encodekey(k) for k in _LAUNCH_KNOBS)


def launch_env() -> tuple:
    """The raw values of the knobs a launch's defaults depend on (None where unset): equal
    tuples mean equal ``backend()``, ``debug()`` and ``bounds_check()``.  Read from the
    mapping under ``os.environ`` (~0.2 us, against ~1.5 us per ``os.environ.get``); it
    sees every change made through ``os.environ``, as the other knobs do."""
    try:
        data = os.environ._data
    except AttributeError:          # not CPython's os.environ: the plain, slower way
        return tuple(os.environ.get(k) for k in _LAUNCH_KNOBS)
    k0, k1, k2 = _LAUNCH_KEYS
    return data.get(k0), data.get(k1), data.get(k2)


def num_threads() -> int:
    return env_int("NPUJIT_NUM_THREADS", 0)


def wide_vectors() -> bool:
    """Ask numba for 512-bit vectors on AVX-512 hosts (``NPUJIT_WIDE_VECTORS``, on)."""
    return env_bool("NPUJIT_WIDE_VECTORS", True)


def one_bit_flags() -> bool:
    """The default of ``npujit.sim.simulate(one_bit_flags=)`` (``NPUJIT_ONE_BIT_FLAGS``, on)."""
    return env_bool("NPUJIT_ONE_BIT_FLAGS", True)


def sim_engine() -> str:
    """The default of ``npujit.sim.simulate(engine=)`` (``NPUJIT_SIM_ENGINE``, ``auto``)."""
    return env_str("NPUJIT_SIM_ENGINE", "auto")


def sim_compiled_min() -> int:
    """Instructions from which the ``auto`` engine is the compiled one
    (``NPUJIT_SIM_COMPILED_MIN``, 20000)."""
    return env_int("NPUJIT_SIM_COMPILED_MIN", 20000)


def sim_compiled_cold_min() -> int:
    """Instructions a process runs on the Python engine before the ``auto`` engine
    compiles a compiled engine that numba has not cached yet
    (``NPUJIT_SIM_COMPILED_COLD_MIN``, 10000000; ``npujit.sim.simulate.use_compiled``)."""
    return env_int("NPUJIT_SIM_COMPILED_COLD_MIN", 10_000_000)


def autotune_progress() -> bool:
    """Show a progress bar during autotuning sweeps (``NPUJIT_AUTOTUNE_PROGRESS``, on; it
    shows only on a terminal)."""
    return env_bool("NPUJIT_AUTOTUNE_PROGRESS", True)


def autotune_workers() -> int:
    """Processes of the autotuner's default pool (``NPUJIT_AUTOTUNE_WORKERS``; default the
    CPU count; 0 = in the calling process)."""
    n = env_int("NPUJIT_AUTOTUNE_WORKERS", -1)
    return (os.cpu_count() or 1) if n < 0 else n
