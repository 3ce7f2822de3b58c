"""The npujit kernel language (``import npujit.language as nl``), Triton-shaped.

Every function here builds IR while a kernel is traced; called outside a kernel it says so.
"""
from npujit.language.inline import inline

from .core import (bfloat16, block_ptr, bool_, const, constexpr, dtype, float16, float32, int1,
                   int8, int16, int32, int64, pointer, pointer_type, tensor)
from .core import float64, uint8, uint16, uint32, uint64, float8e4nv, float8e5
from .creation import (arange, cdiv, full, full_like, num_programs, program_id, zeros,
                       zeros_like)
from .cube import dot
from .scaled import dot_scaled
from .debug import debug_barrier, device_assert, device_print, static_assert, static_print
from .hints import assume, max_constancy, max_contiguous, multiple_of
from .loops import condition, range, static_range
from .math import (abs, cast, ceil, clamp, cos, erf, exp, exp2, floor, fma, gelu, log, log2,
                   maximum, minimum, PropagateNan, rsqrt, sigmoid, silu, sin, sqrt, tanh, umulhi,
                   where)
from .atomics import (atomic_add, atomic_and, atomic_cas, atomic_max, atomic_min, atomic_or,
                      atomic_xchg, atomic_xor)
from .memory import advance, load, make_block_ptr, store
from .descriptor import (load_tensor_descriptor, make_tensor_descriptor, store_tensor_descriptor,
                         tensor_descriptor)
from .combine import associative_scan, cumprod, map_elementwise, reduce, reduce_or, xor_sum
from .random import (pair_uniform_to_normal, philox, rand, rand4x, randint, randint4x, randn,
                     randn4x, uint_to_uniform_float)
from .reduction import (argmax, argmin, cumsum, gather, histogram, max, min, prod, softmax, sort,
                        sum, topk)
from .shape import (broadcast, broadcast_to, cat, expand_dims, interleave, join, permute, ravel,
                    reshape, split, trans, view)

__all__ = [
    # dtypes and values
    "bfloat16", "bool_", "const", "constexpr", "dtype", "float16", "float32", "int1", "int8",
    "int16", "int32", "int64", "tensor", "pointer", "pointer_type", "block_ptr",
    "float64", "uint8", "uint16", "uint32", "uint64", "float8e4nv", "float8e5",
    # programs and creation
    "program_id", "num_programs", "arange", "zeros", "zeros_like", "full", "full_like", "cdiv",
    # memory
    "load", "store", "make_block_ptr", "advance", "make_tensor_descriptor",
    "load_tensor_descriptor", "store_tensor_descriptor", "tensor_descriptor",
    # atomics
    "atomic_add", "atomic_max", "atomic_min", "atomic_xchg", "atomic_and", "atomic_or",
    "atomic_xor", "atomic_cas",
    # math
    "abs", "cast", "ceil", "clamp", "cos", "erf", "exp", "exp2", "floor", "fma", "gelu", "log",
    "log2", "maximum", "minimum", "PropagateNan", "rsqrt", "sigmoid", "silu", "sin", "sqrt", "tanh", "umulhi",
    "where",
    # random numbers (Philox, as Triton's)
    "rand", "rand4x", "randint", "randint4x", "randn", "randn4x", "philox",
    "uint_to_uniform_float", "pair_uniform_to_normal",
    # reductions and selection
    "sum", "prod", "max", "min", "argmax", "argmin", "cumsum", "sort", "topk", "softmax",
    "histogram", "gather", "reduce", "associative_scan", "cumprod", "map_elementwise",
    "xor_sum", "reduce_or",
    # shape
    "reshape", "view", "ravel", "expand_dims", "trans", "permute", "broadcast_to", "broadcast", "join",
    "split", "interleave", "cat",
    # cube
    "dot", "dot_scaled",
    # control flow and debugging
    "range", "static_range", "condition", "inline", "static_assert", "static_print",
    "device_assert", "device_print", "debug_barrier",
    # hints (checked in debug mode)
    "multiple_of", "max_contiguous", "max_constancy", "assume",
]


# Triton's fp8 variants for particular GPUs: named here so that asking for one says what
# to use instead (docs/semantics.md, "fp8")
_OTHER_FP8 = {"float8e4b15": "Triton's E4M3 with exponent bias 15, for pre-Hopper GPUs",
              "float8e4b8": "AMD's E4M3 FNUZ (bias 8)", "float8e5b16": "AMD's E5M2 FNUZ (bias 16)",
              "float8e4m3b11fnuz": "E4M3 FNUZ with bias 11"}


def __getattr__(name):
    if name in _OTHER_FP8:
        raise AttributeError(f"npujit.language has no {name} ({_OTHER_FP8[name]}); its fp8 "
                             "types are float8e4nv (OCP E4M3FN) and float8e5 (OCP E5M2)")
    raise AttributeError(f"module 'npujit.language' has no attribute {name!r}")
