"""Host-side helpers for computing grids and tile sizes.

Example::

    >>> next_power_of_2(1000), cdiv(1000, 256)
    (1024, 4)
"""
from __future__ import annotations


def next_power_of_2(n: int) -> int:
    """The smallest power of two >= n (1 for n <= 1)."""
    n = int(n)
    return 1 if n <= 1 else 1 << (n - 1).bit_length()


def cdiv(a: int, b: int) -> int:
    """Ceiling division for grid sizes."""
    return (a + b - 1) // b

