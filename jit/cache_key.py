"""What a compiled kernel depends on, as hashes: the keys of the kernel cache and of the
autotuner's stored results.

``compiler_hash()``  the compiler itself: every ``.py`` file of npujit's own packages
                     (jit/, ir/, backends/, sim/, npujit/), the versions of Python, numpy,
                     numba and llvmlite.  A change to any of them makes every cached
                     entry a miss (never a stale hit).
``kernel_hash(k)``   one kernel's code: its bytecode, constants and names, the code of
                     every helper it calls (found as jit/kernel_globals.py finds them) and
                     the values of the globals it and its helpers read.  Editing the
                     kernel, a helper or a global it reads changes it.
``spec_hash(spec)``  an NPU spec's fields (a preset edited in place is another spec).
``digest(*parts)``   a short sha256 over any ``repr``-stable parts (keys, options).

Bytecode rather than source text: a kernel defined in a notebook cell or built with
``exec`` has no file, and a comment edit is not a new kernel for the autotuner's stored
results.  A compiled entry, though, carries the source lines of its messages (the IR's
locations, the generated code's error texts), so the kernel cache's key adds
``source_lines(k)``: where the kernel's and its helpers' lines are.  A kernel whose lines
moved (a line added above it) compiles again, and its errors name the lines it has now.

Example::

    >>> from npujit.kernels.elementwise import add_kernel
    >>> len(kernel_hash(add_kernel)) == len(compiler_hash()) == 16
    True
"""
from __future__ import annotations

import dataclasses
import glob
import hashlib
import importlib.util
import os
import sys
import threading
import types

import numpy as np

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# npujit's own packages (kernels/ is user code: its kernels are hashed as kernels)
_COMPILER_DIRS = ("jit", "ir", "backends", "sim", "npujit")
_compiler_hash: str | None = None
_lock = threading.Lock()


def digest(*parts) -> str:
    """A 16-hex-digit sha256 over the ``repr`` of ``parts``."""
    return hashlib.sha256(repr(parts).encode()).hexdigest()[:16]


def compiler_hash() -> str:
    """sha256 over npujit's own sources and the versions it compiles with (per process)."""
    global _compiler_hash
    if _compiler_hash is None:
        with _lock:
            if _compiler_hash is None:
                _compiler_hash = _hash_compiler()
    return _compiler_hash


def _hash_compiler() -> str:
    h = hashlib.sha256(f"{sys.version_info[:3]} numpy {np.__version__} numba "
                       f"{installed_version('numba')} llvmlite "
                       f"{installed_version('llvmlite')}".encode())
    for d in _COMPILER_DIRS:
        top = os.path.join(_ROOT, d)
        for dirpath, dirnames, filenames in os.walk(top):
            dirnames[:] = sorted(n for n in dirnames if n != "__pycache__")
            for name in sorted(filenames):
                if name.endswith((".py", ".h")):
                    path = os.path.join(dirpath, name)
                    with open(path, "rb") as f:
                        h.update(os.path.relpath(path, _ROOT).encode() + b"\0" + f.read())
    return h.hexdigest()[:16]


def installed_version(name: str) -> str:
    """The installed version of package ``name``, read from its metadata without importing
    it (importing numba costs 0.4-0.65 s; a process on the reference backend never needs
    it).  The ``<name>-<version>.dist-info`` folder beside the package names it; other
    layouts ask ``importlib.metadata`` (~40 ms to import).

    Example::

        >>> installed_version("numpy") == np.__version__
        True
    """
    spec = importlib.util.find_spec(name)
    if spec is not None and spec.origin:
        site = os.path.dirname(os.path.dirname(spec.origin))
        found = glob.glob(os.path.join(glob.escape(site), f"{name}-*.dist-info"))
        if len(found) == 1:
            return os.path.basename(found[0])[len(name) + 1:-len(".dist-info")]
    from importlib import metadata
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "absent"


def kernel_hash(kernel, scan: tuple | None = None) -> str:
    """sha256 over a kernel's code, its helpers' code and the globals they read.

    ``kernel`` is an ``NPUKernel`` (or the plain Python function it wraps); ``scan`` is
    its ``kernel_globals.scan_kernel`` result when the caller already has it."""
    from .kernel_globals import scan_kernel
    fn = getattr(kernel, "fn", kernel)
    reads, helpers = scan if scan is not None else scan_kernel(fn)
    h = hashlib.sha256()
    _code(h, fn.__code__)
    for f in helpers:                  # in the order the scan met them: deterministic
        h.update(f"helper {f.__module__}.{f.__qualname__}".encode())
        _code(h, f.__code__)
    for r in reads:
        h.update(f"global {r.label}=".encode())
        h.update(repr(r.array if r.array is not None else r.value).encode())
    return h.hexdigest()[:16]


def source_lines(kernel, scan: tuple | None = None) -> str:
    """A hash of where a kernel's and its helpers' lines are: file, first line and line
    table of each code object (``kernel_hash`` leaves them out).

    Example::

        >>> from npujit.kernels.elementwise import add_kernel
        >>> len(source_lines(add_kernel))
        16
    """
    from .kernel_globals import scan_kernel
    fn = getattr(kernel, "fn", kernel)
    helpers = (scan if scan is not None else scan_kernel(fn))[1]
    h = hashlib.sha256()
    for f in (fn, *helpers):
        _lines(h, f.__code__)
    return h.hexdigest()[:16]


def _lines(h, code: types.CodeType) -> None:
    h.update(f"{code.co_filename}:{code.co_firstlineno}:".encode() + code.co_linetable)
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            _lines(h, c)


def code_digest(fn) -> str:
    """A hash of a function's code (not its line numbers): equal for the same body.

    Example::

        >>> code_digest(lambda x: x + 1) == code_digest(lambda x: x + 1)
        True
    """
    h = hashlib.sha256()
    _code(h, fn.__code__)
    return h.hexdigest()[:16]


def _code(h, code: types.CodeType) -> None:
    """Feed a code object's behaviour (not its line numbers) into ``h``."""
    h.update(code.co_name.encode() + b"\0" + code.co_code)
    h.update(repr((code.co_names, code.co_varnames, code.co_freevars, code.co_argcount,
                   code.co_kwonlyargcount, code.co_flags)).encode())
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            _code(h, c)
        else:
            h.update(repr(c).encode())


def spec_hash(spec) -> str:
    """A hash of an NPU spec's fields (``None`` is the default preset's)."""
    from npujit.target import find_spec
    s = find_spec(spec)
    fields = dataclasses.asdict(s) if dataclasses.is_dataclass(s) else vars(s)
    return digest(sorted(fields.items(), key=lambda kv: kv[0]))
