"""Counter-based random numbers, Triton's ``tl.rand`` family: Philox-4x32 with 10 rounds.

``rand(seed, offsets)`` is a pure function of its arguments: the same seed and offset give
the same number in every program, launch and backend, and the low-memory dropout of
Triton's tutorials (``keep = tl.rand(seed, offs) > p``) regenerates its mask in the
backward pass instead of storing it.  The stream is Triton's bit for bit: the 32-bit
offset (and, for a 64-bit one, its high half) is the Philox counter, the seed's low and
high 32 bits the key (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC
2011; the constants below are that paper's and Triton's).  Everything here is built from
the language's own ops (``umulhi``, uint32 wrap-around, ``where``), so every tier runs the
same code; ``randn``'s logarithm, sine and cosine are the language's, whose last bits may
differ from a GPU's libdevice.

Example (inside a kernel)::

    offs = nl.program_id(0) * BLOCK + nl.arange(0, BLOCK)
    keep = nl.rand(seed, offs) > p
    nl.store(out_ptr + offs, nl.where(keep, x / (1 - p), 0.0), mask=offs < n)
"""
from __future__ import annotations

from npujit.ir import types as T

from . import semantic as sem
from .core import builtin, unwrap_constexpr
from .math import cos, log, maximum, sin, sqrt, umulhi, where

N_ROUNDS = 10
_KEY_A, _KEY_B = 0x9E3779B9, 0xBB67AE85          # the key's increments per round
_ROUND_A, _ROUND_B = 0xD2511F53, 0xCD9E8D57      # the round multipliers
_LOW32 = 0xFFFFFFFF
# the largest scale with (2**31 - 1) * scale < 1 in f32: a uniform float stays in [0, 1)
_INT32_SCALE = 4.6566127342e-10


def _rounds(n_rounds) -> int:
    n = unwrap_constexpr(n_rounds)
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise sem.error(f"n_rounds must be a positive constant int, got {n!r}")
    return n


def _int(x, what: str):
    x = sem.to_tensor(x)
    if not x.dtype.is_int:
        raise sem.error(f"{what} must be an integer (scalar or tile), got {x.dtype}")
    return x


@builtin
def philox(seed, c0, c1, c2, c3, n_rounds=N_ROUNDS):
    """``n_rounds`` of Philox-4x32 on the counter ``(c0, c1, c2, c3)`` (32-bit integer
    tiles, read as uint32) keyed by the integer ``seed``: four uint32 tiles.

    Example::

        r0, r1, r2, r3 = nl.philox(seed, offs, offs * 0, offs * 0, offs * 0)
    """
    seed = sem.cast(_int(seed, "philox's seed"), T.int64)   # sign-extended, as Triton's
    k0 = sem.cast(seed & _LOW32, T.uint32)
    k1 = sem.cast((seed >> 32) & _LOW32, T.uint32)
    c = []
    for v in (c0, c1, c2, c3):
        v = _int(v, "a philox counter")
        if v.dtype.itemsize != 4:
            raise sem.error(f"philox counters are 32-bit integers, got {v.dtype}")
        c.append(sem.bitcast(v, T.uint32))
    c0, c1, c2, c3 = c
    a, b = sem.constant(_ROUND_A, T.uint32), sem.constant(_ROUND_B, T.uint32)
    for _ in range(_rounds(n_rounds)):
        c0, c1, c2, c3 = (umulhi(b, c2) ^ c1 ^ k0, b * c2,
                          umulhi(a, c0) ^ c3 ^ k1, a * c0)
        k0 = k0 + sem.constant(_KEY_A, T.uint32)
        k1 = k1 + sem.constant(_KEY_B, T.uint32)
    return c0, c1, c2, c3


@builtin
def randint4x(seed, offset, n_rounds=N_ROUNDS):
    """Four tiles of random uint32 for the integer ``offset`` tile (Philox's whole output).

    Example::

        r0, r1, r2, r3 = nl.randint4x(seed, offs)
    """
    offset = _int(offset, "the offset")
    lo = sem.cast(offset, T.uint32)
    hi = sem.cast(offset >> 32, T.uint32) if offset.dtype.itemsize == 8 else lo * 0
    zero = lo * 0
    return philox(seed, lo, hi, zero, zero, n_rounds)


@builtin
def randint(seed, offset, n_rounds=N_ROUNDS):
    """A tile of random uint32 for the integer ``offset`` tile (``randint4x``'s first).

    Example::

        bits = nl.randint(seed, offs)
    """
    return randint4x(seed, offset, n_rounds)[0]


@builtin
def uint_to_uniform_float(x):
    """Random 32-bit integers to f32 uniform in ``[0, 1)``: the bits read as int32, the
    negatives folded onto the positives (``~x``), times ``4.6566127342e-10``.

    Example::

        u = nl.uint_to_uniform_float(nl.randint(seed, offs))     # nl.rand(seed, offs)
    """
    x = _int(x, "uint_to_uniform_float's argument")
    if x.dtype.itemsize != 4:
        raise sem.error(f"uint_to_uniform_float takes 32-bit integers, got {x.dtype}")
    x = sem.bitcast(x, T.int32)
    x = where(x < 0, ~x, x)
    return sem.cast(x, T.float32) * _INT32_SCALE


@builtin
def rand(seed, offset, n_rounds=N_ROUNDS):
    """A tile of f32 uniform in ``[0, 1)`` for the integer ``offset`` tile.

    Example::

        keep = nl.rand(seed, offs) > p
    """
    return uint_to_uniform_float(randint(seed, offset, n_rounds))


@builtin
def rand4x(seed, offset, n_rounds=N_ROUNDS):
    """Four tiles of f32 uniform in ``[0, 1)`` (one Philox call).

    Example::

        u1, u2, u3, u4 = nl.rand4x(seed, offs)
    """
    return tuple(uint_to_uniform_float(v) for v in randint4x(seed, offset, n_rounds))


@builtin
def pair_uniform_to_normal(u1, u2):
    """Box-Muller: two uniform tiles to two standard normal ones.

    Example::

        n1, n2 = nl.pair_uniform_to_normal(u1, u2)
    """
    u1 = maximum(1.0e-7, u1)
    th = 6.283185307179586 * u2
    r = sqrt(-2.0 * log(u1))
    return r * cos(th), r * sin(th)


@builtin
def randn(seed, offset, n_rounds=N_ROUNDS):
    """A tile of f32 drawn from N(0, 1) for the integer ``offset`` tile.

    Example::

        noise = nl.randn(seed, offs) * sigma
    """
    i1, i2, _, _ = randint4x(seed, offset, n_rounds)
    return pair_uniform_to_normal(uint_to_uniform_float(i1), uint_to_uniform_float(i2))[0]


@builtin
def randn4x(seed, offset, n_rounds=N_ROUNDS):
    """Four tiles of f32 drawn from N(0, 1) (one Philox call).

    Example::

        n1, n2, n3, n4 = nl.randn4x(seed, offs)
    """
    u1, u2, u3, u4 = rand4x(seed, offset, n_rounds)
    return pair_uniform_to_normal(u1, u2) + pair_uniform_to_normal(u3, u4)
