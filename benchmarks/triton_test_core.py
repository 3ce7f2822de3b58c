"""Run Triton's own language tests (``python/test/unit/language/test_core.py``) against
npujit through a name-mapping shim, and print how many pass, per family and by cause.

Usage::

    python benchmarks/triton_test_core.py PATH/TO/test_core.py [--per-test 30] [-k EXPR]

The file is not part of this repository: read it from a Triton checkout (issue 17 used
``triton-lang/Triton-to-tile-IR``, upstream commit 6cc4505).  The shim installs modules
named ``triton``, ``triton.language``, ``triton._internal_testing`` and
``triton.runtime.errors`` that map Triton's names onto npujit's (``npujit.triton`` when it
exists, else ``npujit.language`` name for name), and, when torch is not installed, the
numpy stand-in of ``benchmarks/triton_fake_torch.py``.  Kernels run on the reference
backend with device "cpu".  At most ``--per-test`` parametrisations of each test function
run (evenly spaced over its list, so every dtype family is sampled).

Causes are read from each failure's exception (see ``CAUSES``); "harness" causes are
limits of the stand-ins here (fake torch, GPU-only driver calls), not of npujit.
"""
from __future__ import annotations

import argparse
import collections
import inspect
import linecache
import os
import re
import signal
import sys
import textwrap
import types

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
os.environ.setdefault("NPUJIT_BACKEND", "reference")

import ml_dtypes  # noqa: E402
import pytest  # noqa: E402

import npujit  # noqa: E402
import npujit.language as nl  # noqa: E402

INT_DTYPES = ["int8", "int16", "int32", "int64"]
UINT_DTYPES = ["uint8", "uint16", "uint32", "uint64"]
FLOAT_DTYPES = ["float16", "float32", "float64"]

# Test-function name (regex, first match wins) -> family, as issue 17 groups them.
FAMILIES = [
    (r"atomic", "atomics"),
    (r"dot|matmul|mma|tf32|scaled", "dot"),
    (r"cumsum|scan|cumprod", "cumsum/scan"),
    (r"reduce|sum|max|min|argm|xor_sum|histogram", "reductions"),
    (r"load|store|ptr|block_ptr|masked|descriptor|pointer|strided|vectorization", "load/store"),
    (r"where", "where"),
    (r"compare|_cmp|equal", "comparisons"),
    (r"cast|convert|bitcast|_to_|fp8|float8", "casts"),
    (r"constexpr|const_|static|literal", "constexpr"),
    (r"if|while|for|loop|return|nested|call|noinline|control|break|range", "control flow"),
    (r"arange|full|zeros", "arange/full"),
    (r"reshape|trans|permute|view|join|split|interleave|expand|broadcast|cat|ravel|gather",
     "reshape/trans"),
    (r"unary|math|abs|exp|log|sqrt|erf|umulhi|fma|precise|clamp|maximum|minimum", "unary math"),
    (r"bin_op|floordiv|shift|bitwise|addptr|unsigned|op_", "binary ops"),
]

# Exception text (regex over "Type: message") -> cause; first match wins.
CAUSES = [
    (r"TestTimeout", "harness: timed out"),
    (r"'Tensor' object has no attribute|fake torch|torch.cuda|get_device_capability|runtime\.driver|cuda|hip", "harness: torch/GPU-only API"),
    # fp8 first: the launch error's list of supported dtypes names float64 and uint8
    (r"float8|fp8|e4m3|e5m2|e4nv|e4b15", "missing dtype: fp8"),
    (r"uint(8|16|32|64)|float64|dtype\('?>?[uf]8|f64|unsigned", "missing dtype: unsigned/float64"),
    (r"Python bool|data-dependent|traced tensor cannot", "data-dependent control flow"),
    (r"unknown keyword argument '(num_warps|num_ctas|num_stages|maxnreg)'",
     "launch option {0} not accepted"),
    (r"(?:unexpected|unknown) keyword argument '(\w+)'", "missing keyword: {0}"),
    (r"has no attribute '(\w+)'", "missing name: {0}"),
    (r"grid\[\d\] = 0|every grid dimension must be positive", "grid (0,) / empty launch"),
    (r"0-d array is not a buffer", "0-d array argument"),
    (r"DID NOT RAISE", "expected error not raised"),
    (r"Regex pattern did not match", "error message differs"),
    (r"^AssertionError", "wrong result (assertion)"),
    (r"^LaunchError", "launch error (other)"),
    (r"^CompilationError", "compile error (other)"),
    (r"^TypeError", "TypeError (other)"),
]


# --- the shim ------------------------------------------------------------------------------

class _Missing:
    """A Triton name npujit lacks: test_core reads some at import time (dtype lists), so
    the name must exist; any use of it raises as a missing attribute would."""

    def __init__(self, name):
        self._name = name

    def __getattr__(self, attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        return _Missing(f"{self._name}.{attr}")

    def __call__(self, *args, **kwargs):
        raise AttributeError(f"npujit has no attribute '{self._name.split('.')[-1]}' "
                             f"(triton.language.{self._name})")

    def _used(self, *args):
        # arithmetic on a missing name (tl.float8e4b15.fp_mantissa_width ** 2): say which
        root = self._name.split(".")[0]
        raise AttributeError(f"npujit has no attribute '{root}' (triton.language.{root})")

    __sub__ = __rsub__ = __mul__ = __rmul__ = __pow__ = __rpow__ = __truediv__ = _used
    __rtruediv__ = __lshift__ = __rlshift__ = __and__ = __rand__ = __int__ = _used

    def __repr__(self):
        return f"<missing triton.language.{self._name}>"

    def __add__(self, other):  # a list of names built at import time: empty
        return self

    __radd__ = __add__

    def __iter__(self):
        return iter(())


def _language_module(names_only: bool):
    try:
        if names_only:
            raise ImportError("asked for the name-only shim")
        import npujit.triton.language as real
    except ImportError:  # before the compatibility entry point: map names one to one
        real = nl
    tl = types.ModuleType("triton.language")
    tl.__path__ = []

    def lookup(name):
        if name.startswith("__"):
            raise AttributeError(name)
        try:
            value = getattr(real, name)
        except AttributeError:
            return _Missing(name)
        if name == "dtype" and not hasattr(value, "SINT_TYPES"):
            return _Missing(name)  # test_core lists dtypes through tl.dtype at import time
        return value
    tl.__getattr__ = lookup
    return tl


def _triton_module(tl, names_only: bool):
    try:
        if names_only:
            raise ImportError("asked for the name-only shim")
        import npujit.triton as compat
        triton = types.ModuleType("triton")
        triton.__dict__.update({k: v for k, v in vars(compat).items() if not k.startswith("__")})
    except ImportError:
        triton = types.ModuleType("triton")
        triton.jit = npujit.npu_kernel
        triton.cdiv = npujit.cdiv
        triton.next_power_of_2 = npujit.next_power_of_2
    triton.jit = _decoration_safe(triton.jit)
    triton.__path__ = []
    triton.language = tl
    triton.TritonError = npujit.NPUJitError
    triton.CompilationError = npujit.CompilationError
    triton.JITFunction = _JITFunction
    return triton


class _Undecorated:
    """A kernel whose decoration raised: test_core decorates kernels at import time, so
    the error is kept and raised where the kernel is used."""

    def __init__(self, fn, error):
        self.fn, self.error = fn, error

    def __getitem__(self, grid):
        raise self.error

    def __call__(self, *args, **kwargs):
        raise self.error


def _decoration_safe(jit):
    def decorate(fn=None, **options):
        if fn is None:
            return lambda f: decorate(f, **options)
        try:
            return jit(fn, **options)
        except TypeError as e:
            if "unknown option" in str(e):  # the name-only shim drops Triton's options
                return decorate(fn)
            return _Undecorated(fn, e)
        except Exception as e:
            return _Undecorated(fn, e)
    return decorate


class _JITFunction:
    """Triton's ``JITFunction(fn)`` as test_core's ``patch_kernel`` uses it: ``src`` is the
    source from ``def``; ``_unsafe_update_src`` recompiles it under ``triton.jit``."""

    patched = 0

    def __init__(self, fn):
        self.fn = fn
        self.__name__ = fn.__name__
        src = textwrap.dedent(inspect.getsource(fn))
        self.src = src[re.search(r"^def\s", src, re.M).start():]
        self.kernel = None

    def _unsafe_update_src(self, src):
        ns: dict = {}
        _JITFunction.patched += 1
        filename = f"<patched {self.fn.__name__} #{_JITFunction.patched}>"
        linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)
        exec(compile(src, filename, "exec"), self.fn.__globals__, ns)
        self.kernel = sys.modules["triton"].jit(ns[self.fn.__name__])
        self.src = src

    def __getitem__(self, grid):
        return self.kernel[grid]

    def warmup(self, *args, **kwargs):
        return self.kernel.warmup(*args, **kwargs)


def _to_numpy_dtype(name: str):
    if name == "bfloat16":
        return ml_dtypes.bfloat16
    if name.startswith("float8"):
        return {"float8e4nv": ml_dtypes.float8_e4m3fn, "float8_e4m3fn": ml_dtypes.float8_e4m3fn,
                "float8e5": ml_dtypes.float8_e5m2, "float8_e5m2": ml_dtypes.float8_e5m2}[name]
    return np.dtype(name)


def _testing_module(tl):
    """Our own versions of the helpers test_core imports from ``triton._internal_testing``."""
    m = types.ModuleType("triton._internal_testing")
    m.int_dtypes, m.uint_dtypes = INT_DTYPES, UINT_DTYPES
    m.integral_dtypes = INT_DTYPES + UINT_DTYPES
    m.float_dtypes = FLOAT_DTYPES
    m.float_dtypes_with_bfloat16 = FLOAT_DTYPES + ["bfloat16"]
    m.dtypes = m.integral_dtypes + FLOAT_DTYPES
    m.dtypes_with_bfloat16 = m.dtypes + ["bfloat16"]
    m.torch_float8_dtypes = ["float8_e4m3fn", "float8_e5m2"]
    m.torch_dtypes = ["bool"] + INT_DTYPES + ["uint8"] + FLOAT_DTYPES + ["bfloat16"]
    for flag in ("is_cuda", "is_tileir", "is_interpreter", "is_hopper", "is_hip", "is_hip_cdna",
                 "is_hip_cdna2", "is_hip_cdna3", "is_hip_cdna4", "is_hip_rdna3", "is_hip_rdna4",
                 "is_xpu", "is_hip_mi200", "is_hip_mi300", "is_hip_mi350", "is_blackwell",
                 "is_hopper_or_newer", "is_ampere_or_newer"):
        setattr(m, flag, lambda: False)
    m.get_arch = lambda: "npu"
    m.str_to_triton_dtype = lambda s: getattr(tl, s)
    m.torch_dtype_name = lambda d: str(d).split(".")[-1]

    def numpy_random(shape, dtype_str, rs=None, low=None, high=None):
        rs = rs if rs is not None else np.random.RandomState(seed=17)
        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        if dtype_str in m.integral_dtypes:
            info = np.iinfo(dtype_str)
            lo = info.min if low is None else max(low, info.min)
            hi = info.max if high is None else min(high, info.max)
            x = rs.randint(lo, hi, shape, dtype=dtype_str)
            x[x == 0] = 1  # no zero divisors in the division tests
            return x
        if dtype_str == "bool":
            return rs.randint(0, 2, shape).astype(bool)
        if dtype_str.startswith("float8"):        # fp8 bit patterns, as Triton's helper
            return rs.randint(20, 40, shape, dtype=np.int8)
        if dtype_str == "bfloat16":
            x = rs.normal(0, 1, shape).astype(_to_numpy_dtype(dtype_str)).astype(np.float32)
            return x
        if dtype_str in FLOAT_DTYPES:
            return rs.normal(0, 1, shape).astype(dtype_str)
        raise ValueError(f"numpy_random: no rule for {dtype_str}")
    m.numpy_random = numpy_random

    def to_triton(x, device=None, dst_type=None):
        if dst_type is not None and dst_type.startswith("float8"):   # the bits, reinterpreted
            return sys.modules["triton"].reinterpret(np.array(x).view(_tensor_class()),
                                                     getattr(tl, dst_type))
        dtype = None if dst_type is None else _to_numpy_dtype(dst_type)
        # a copy (as torch.tensor makes) that keeps the layout: empty_like(x.T) is strided
        return np.array(x, dtype=dtype, order="K", copy=True).view(_tensor_class())
    m.to_triton = to_triton

    def to_numpy(x):
        a = np.asarray(x)
        if a.dtype == ml_dtypes.bfloat16 or a.dtype.name.startswith("float8"):
            return a.astype(np.float32)
        return a.view(np.ndarray)
    m.to_numpy = to_numpy
    return m


def _tensor_class():
    return getattr(sys.modules["torch"], "Tensor", np.ndarray)


def install_shim(names_only: bool = False):
    """Put the fake ``triton`` (and, without torch, a fake ``torch``) in ``sys.modules``."""
    try:
        import torch  # noqa: F401
        torch_note = "real torch"
    except ImportError:
        import triton_fake_torch
        sys.modules["torch"] = triton_fake_torch.make_module()
        torch_note = "fake torch (numpy stand-in, benchmarks/triton_fake_torch.py)"
    tl = _language_module(names_only)
    triton = _triton_module(tl, names_only)
    runtime = types.ModuleType("triton.runtime")
    runtime.__path__ = []
    errors = types.ModuleType("triton.runtime.errors")
    errors.InterpreterError = type("InterpreterError", (npujit.NPUJitError,), {})
    runtime.errors = errors
    # what test_core asks of the GPU driver, answered for one AI core of the 910B-like preset
    runtime.driver = types.SimpleNamespace(active=types.SimpleNamespace(
        get_current_target=lambda: types.SimpleNamespace(backend="npu", arch="npu", warp_size=32),
        get_current_device=lambda: 0,
        utils=types.SimpleNamespace(get_device_properties=lambda device: {
            "max_shared_mem": 192 * 1024, "multiprocessor_count": 24})))
    triton.runtime = runtime
    testing = _testing_module(tl)
    # test_core imports a few internals from triton.language.core: those it shares with
    # triton.language are found, the others are missing names
    sys.modules["triton.language.core"] = tl
    sys.modules.update({"triton": triton, "triton.language": tl, "triton.runtime": runtime,
                        "triton.runtime.errors": errors, "triton._internal_testing": testing})
    return torch_note


# --- the pytest plugin ---------------------------------------------------------------------

def family_of(test_name: str) -> str:
    base = test_name.split("[")[0]
    for pattern, fam in FAMILIES:
        if re.search(pattern, base):
            return fam
    return "other"


def cause_of(text: str) -> str:
    for pattern, cause in CAUSES:
        m = re.search(pattern, text, re.M)
        if m:
            return cause.format(*m.groups())
    return "other: " + text.split("\n")[0][:80]


class TestTimeout(Exception):
    """A test ran longer than --timeout seconds."""


def _timed_out(signum, frame):
    raise TestTimeout("harness: the test ran past --timeout")


class Measure:
    """Samples the parametrisations, provides the fixtures, records every outcome."""

    def __init__(self, per_test: int, timeout: int):
        self.per_test = per_test
        self.timeout = timeout
        self.results: dict = {}     # nodeid -> (outcome, text)
        self.collected = collections.Counter()

    @pytest.fixture
    def device(self):
        return "cpu"

    @pytest.fixture
    def with_allocator(self):
        return None

    @pytest.fixture
    def fresh_knobs(self):
        pytest.skip("fresh_knobs: Triton's knobs have no meaning here")

    def pytest_collection_modifyitems(self, items):
        groups = collections.defaultdict(list)
        for it in items:
            groups[it.originalname].append(it)
        keep = []
        for name, its in groups.items():
            self.collected[name] = len(its)
            n = len(its)
            if n <= self.per_test:
                keep += its
            else:
                idx = sorted({round(i * (n - 1) / (self.per_test - 1)) for i in range(self.per_test)})
                keep += [its[i] for i in idx]
        items[:] = keep

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_call(self, item):
        # a test that hangs or runs for minutes on the CPU tiers fails with a named cause
        signal.signal(signal.SIGALRM, _timed_out)
        signal.alarm(self.timeout)
        try:
            yield
        finally:
            signal.alarm(0)

    def pytest_exception_interact(self, node, call, report):
        # pytest logs the report first, then calls this: replace the report's text
        e = call.excinfo
        if report.nodeid in self.results and report.failed:
            self.results[report.nodeid] = ("failed", f"{e.typename}: {e.value}")

    def pytest_runtest_logreport(self, report):
        if report.when == "call" or (report.when == "setup" and report.outcome != "passed"):
            text = ""
            if report.failed:
                text = str(report.longrepr)[-400:]
            self.results[report.nodeid] = (report.outcome, text)


def summarise(results: dict, out=sys.stdout) -> dict:
    fams = collections.defaultdict(lambda: collections.Counter())
    causes = collections.defaultdict(list)
    for nodeid, (outcome, text) in results.items():
        name = nodeid.split("::")[-1]
        fam = family_of(name)
        fams[fam][outcome] += 1
        if outcome == "failed":
            causes[cause_of(text)].append((name, text))
    run = sum(c["passed"] + c["failed"] for c in fams.values())
    passed = sum(c["passed"] for c in fams.values())
    skipped = sum(c["skipped"] for c in fams.values())
    print(f"\nrun {run} (skipped {skipped}); passed {passed} = "
          f"{100.0 * passed / max(run, 1):.1f} %", file=out)
    print(f"\n{'family':<16} {'pass':>5} {'run':>5} {'%':>6}", file=out)
    for fam, c in sorted(fams.items(), key=lambda kv: -(kv[1]["passed"] + kv[1]["failed"])):
        r = c["passed"] + c["failed"]
        print(f"{fam:<16} {c['passed']:>5} {r:>5} {100.0 * c['passed'] / max(r, 1):>6.1f}", file=out)
    print("\nfailures by cause:", file=out)
    for cause, cases in sorted(causes.items(), key=lambda kv: -len(kv[1])):
        print(f"  {len(cases):>4}  {cause}   e.g. {cases[0][0]}", file=out)
    return {"run": run, "passed": passed, "causes": {k: len(v) for k, v in causes.items()}}


def main(argv=None):
    if os.environ.get("PYTHONHASHSEED") != "0":
        # some tests pick a code path from hash() of strings: make runs comparable
        os.environ["PYTHONHASHSEED"] = "0"
        os.execv(sys.executable, [sys.executable, os.path.abspath(__file__)] + sys.argv[1:])
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("path", help="Triton's python/test/unit/language/test_core.py")
    ap.add_argument("--per-test", type=int, default=30, help="parametrisations per test function")
    ap.add_argument("--timeout", type=int, default=60, help="seconds one test may run")
    ap.add_argument("-k", default=None, help="pytest -k expression to run a subset")
    ap.add_argument("--names-only", action="store_true",
                    help="map tl.X to npujit.language.X and triton.jit to npu_kernel only, "
                         "ignoring npujit.triton (issue 17's baseline shim)")
    ap.add_argument("--failures", default=None, help="write every failure (id, cause, text) here")
    args = ap.parse_args(argv)
    note = install_shim(args.names_only)
    compat = hasattr(sys.modules["triton"], "IGNORED_LAUNCH_OPTIONS")
    print(f"shim: {note}; {'npujit.triton' if compat else 'npujit.language names only'}; "
          f"backend {os.environ['NPUJIT_BACKEND']}")
    measure = Measure(args.per_test, args.timeout)
    pargs = [args.path, "-q", "-p", "no:cacheprovider", "-p", "no:xdist", "-p", "no:randomly",
             "--no-header", "-rN", "--tb=line", "-W", "ignore", "--rootdir",
             os.path.dirname(os.path.abspath(args.path)), "-o", "addopts="]
    if args.k:
        pargs += ["-k", args.k]
    pytest.main(pargs, plugins=[measure])
    summary = summarise(measure.results)
    if args.failures:
        with open(args.failures, "w") as f:
            for nodeid, (outcome, text) in sorted(measure.results.items()):
                if outcome == "failed":
                    f.write(f"{nodeid.split('::')[-1]}\t{cause_of(text)}\t{text[:300]!r}\n")
    return summary


if __name__ == "__main__":
    main()
