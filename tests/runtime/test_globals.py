"""Globals a kernel reads are compile-time constants: every one the kernel or its helpers
read is recorded at compile and checked at launch -- scalars, numpy arrays (identity,
shape, dtype, contents), ``module.NAME`` attributes, globals read by helpers -- and only
what Python really loads as a global (``x.shape`` is not the global ``shape``)."""
from __future__ import annotations

import pickle

import numpy as np
import pytest

import npujit.language as nl
import runtime_globals_helpers as helpers
from npujit import CompilationError, LaunchError, npu_kernel

TABLE = np.array([1, 2, 3, 4, 5, 6, 7, 8], np.float32)
LIMIT = 4
OFFSET = 10.0
shape = 3          # named like the tensor attribute the kernel reads


def add_offset(v):
    return v + OFFSET


def _table_kernel(out_ptr):
    offs = nl.arange(0, 4)
    nl.store(out_ptr + offs, nl.zeros((4,), nl.float32) + TABLE[3])


def _helpers_kernel(x_ptr, out_ptr):
    offs = nl.arange(0, 4)
    v = nl.load(x_ptr + offs)
    nl.store(out_ptr + offs, helpers.shifted(add_offset(helpers.scaled(v))) + LIMIT)


def _attr_kernel(out_ptr):
    offs = nl.arange(0, 4)
    nl.store(out_ptr + offs, nl.zeros((4,), nl.float32) + helpers.SCALE)


def _shape_kernel(x_ptr, out_ptr):
    offs = nl.arange(0, 4)
    v = nl.load(x_ptr + offs)
    nl.store(out_ptr + offs, v * v.shape[0])      # x.shape: an attribute, not a global


def _kernel(fn, backend="reference"):
    return npu_kernel(fn, backend=backend)    # a fresh kernel object: its own cache


def test_array_global_content_change_is_not_silently_stale():
    k = _kernel(_table_kernel)
    out = np.zeros(4, np.float32)
    k[(1,)](out)
    np.testing.assert_array_equal(out, np.full(4, TABLE[3]))
    assert set(k.read_globals()) == {"TABLE"} and k.read_globals()["TABLE"] is TABLE
    saved = TABLE[3]
    TABLE[3] = 100
    try:
        with pytest.raises(LaunchError, match=r"contents of the global array 'TABLE' changed"
                                              r".*pass it as an argument") as e:
            k[(1,)](out)
        assert "float32[8]" in str(e.value) and "100" not in str(e.value)
    finally:
        TABLE[3] = saved
    k[(1,)](out)          # back to the compiled contents: fine again
    np.testing.assert_array_equal(out, np.full(4, saved))


def test_array_global_rebound_is_refused():
    global TABLE
    k = _kernel(_table_kernel)
    out = np.zeros(4, np.float32)
    k[(1,)](out)
    saved = TABLE
    TABLE = saved.copy()        # equal contents, but another array
    try:
        with pytest.raises(LaunchError, match="'TABLE' now names another array"):
            k[(1,)](out)
    finally:
        TABLE = saved


def test_big_array_global_must_be_an_argument():
    global TABLE
    saved = TABLE
    TABLE = np.zeros(1 << 15, np.float32)     # 128 KiB
    try:
        with pytest.raises(CompilationError, match=r"global array 'TABLE' \(float32\[32768\]"
                                                   r".*pass it as an argument"):
            _kernel(_table_kernel)[(1,)](np.zeros(4, np.float32))
    finally:
        TABLE = saved


def test_globals_read_by_helpers_and_module_attributes_are_checked(backend):
    k = _kernel(_helpers_kernel, backend)
    x = np.arange(4, dtype=np.float32)
    out = np.zeros(4, np.float32)
    k[(1,)](x, out)
    want = x * helpers.SCALE + OFFSET + helpers.LIMIT + LIMIT
    np.testing.assert_array_equal(out, want)
    assert k.read_globals() == {"LIMIT": 4, "OFFSET": 10.0, "runtime_globals_helpers.SCALE": 2.0,
                                "runtime_globals_helpers.LIMIT": 2}
    for mod, name, new in ((helpers, "SCALE", 3.0), (helpers, "LIMIT", 7),
                           (globals(), "OFFSET", 11.0)):
        ns = mod if isinstance(mod, dict) else vars(mod)
        old = ns[name]
        ns[name] = new
        try:
            with pytest.raises(LaunchError, match=f"global '[a-z_.]*{name}' \\(read by "
                                                  f"helper '[a-z_]+'\\) was {old}, but it is "
                                                  f"now {new}"):
                k[(1,)](x, out)
        finally:
            ns[name] = old
    k[(1,)](x, out)
    np.testing.assert_array_equal(out, want)


def test_module_attribute_read_in_the_kernel(backend):
    k = _kernel(_attr_kernel, backend)
    out = np.zeros(4, np.float32)
    k[(1,)](out)
    np.testing.assert_array_equal(out, np.full(4, helpers.SCALE, np.float32))
    assert k.read_globals() == {"runtime_globals_helpers.SCALE": helpers.SCALE}
    helpers.SCALE = 5.0
    try:
        with pytest.raises(LaunchError, match=r"global 'runtime_globals_helpers.SCALE' was "
                                              r"2.0, but it is now 5.0"):
            k[(1,)](out)
    finally:
        helpers.SCALE = 2.0


def test_same_name_in_two_modules_is_two_bindings():
    k = _kernel(_helpers_kernel)
    x = np.zeros(4, np.float32)
    k[(1,)](x, np.zeros(4, np.float32))
    helpers.LIMIT = LIMIT          # the helper module's LIMIT changes (to the kernel's value)
    try:
        with pytest.raises(LaunchError, match=r"'runtime_globals_helpers.LIMIT' \(read by "
                                              r"helper 'shifted'\) was 2"):
            k[(1,)](x, np.zeros(4, np.float32))
    finally:
        helpers.LIMIT = 2


def test_global_named_like_an_attribute_is_not_read():
    global shape
    k = _kernel(_shape_kernel)
    x = np.arange(4, dtype=np.float32)
    out = np.zeros(4, np.float32)
    k[(1,)](x, out)
    assert "shape" not in k.read_globals()
    shape = 4
    try:
        k[(1,)](x, out)           # no false LaunchError: the kernel never read the global
    finally:
        shape = 3
    np.testing.assert_array_equal(out, x * 4)


SIZES = [1.0, 2.0, 3.0]


def _list_kernel(out_ptr):
    nl.store(out_ptr + nl.arange(0, 4), nl.zeros((4,), nl.float32) + SIZES[1])


def test_mutated_list_global_is_refused():
    k = _kernel(_list_kernel)
    out = np.zeros(4, np.float32)
    k[(1,)](out)
    np.testing.assert_array_equal(out, np.full(4, 2.0, np.float32))
    SIZES[1] = 5.0
    try:
        with pytest.raises(LaunchError, match=r"global 'SIZES' was \[1.0, 2.0, 3.0\], but it "
                                              r"is now \[1.0, 5.0, 3.0\]"):
            k[(1,)](out)
    finally:
        SIZES[1] = 2.0


def test_recorded_globals_survive_pickling():
    k = _kernel(_table_kernel)
    c = pickle.loads(pickle.dumps(k.compile(np.zeros(4, np.float32))))
    out = np.zeros(4, np.float32)
    c[(1,)](out)
    np.testing.assert_array_equal(out, np.full(4, TABLE[3]))
    saved = TABLE[3]
    TABLE[3] = -1
    try:
        with pytest.raises(LaunchError, match="contents of the global array 'TABLE' changed"):
            c[(1,)](out)
    finally:
        TABLE[3] = saved


def test_host_array_used_as_a_pointer_names_shape_and_dtype():
    big = np.arange(10000, dtype=np.float32)

    @npu_kernel(backend="reference")
    def k(out_ptr):
        offs = nl.arange(0, 4)
        nl.store(out_ptr + offs, nl.load(big + offs))

    with pytest.raises(CompilationError) as e:
        k[(1,)](np.zeros(4, np.float32))
    msg = str(e.value)
    assert "float32" in msg and "(10000,)" in msg and "pass it as a kernel argument" in msg
    assert "9999" not in msg and len(msg) < 600
