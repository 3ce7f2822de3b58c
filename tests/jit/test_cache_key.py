"""jit/cache_key.py: the hashes change with what a kernel depends on, and only with that."""
import types

import numpy as np

from npujit import npu_kernel
from npujit.jit.cache_key import compiler_hash, digest, kernel_hash, spec_hash

SOURCE = '''
import npujit.language as nl
from npujit import npu_kernel

SCALE = {scale}

def helper(x):
    return x * {factor}

@npu_kernel
def k(x_ptr, out_ptr, BLOCK: nl.constexpr):
    offs = nl.arange(0, BLOCK)
    nl.store(out_ptr + offs, helper(nl.load(x_ptr + offs)) + SCALE)
'''


def _kernel(scale=1.0, factor=2.0, blank_lines=0):
    mod = types.ModuleType("npujit_test_cache_key_mod")
    code = compile("\n" * blank_lines + SOURCE.format(scale=scale, factor=factor),
                   "<cache-key-test>", "exec")
    exec(code, vars(mod))
    return mod.k


def test_same_code_same_hash_wherever_it_sits():
    assert kernel_hash(_kernel()) == kernel_hash(_kernel(blank_lines=7))


def test_helper_and_global_edits_change_the_hash():
    base = kernel_hash(_kernel())
    assert kernel_hash(_kernel(factor=3.0)) != base        # the helper's code
    assert kernel_hash(_kernel(scale=1.5)) != base         # a global it reads


def test_a_global_array_is_hashed_by_its_contents():
    k = _kernel()
    g = k.fn.__globals__
    g["SCALE"] = np.arange(4, dtype=np.float32)
    a = kernel_hash(k)
    g["SCALE"] = np.arange(4, dtype=np.float32) + 1
    assert kernel_hash(k) != a
    g["SCALE"] = np.arange(4, dtype=np.float32)
    assert kernel_hash(k) == a


def test_compiler_and_spec_hashes():
    assert compiler_hash() == compiler_hash() and len(compiler_hash()) == 16
    assert spec_hash(None) == spec_hash("ascend-910b-like") != spec_hash("TINY")
    assert digest(1, "a") == digest(1, "a") != digest(1, "b")
