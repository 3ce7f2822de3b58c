"""Vector addition as in Triton's first tutorial: one masked block per program.

Example::

    >>> import numpy as np
    >>> x = np.arange(5000, dtype=np.float32)
    >>> bool((add(x, x) == 2 * x).all())
    True
"""
from __future__ import annotations

import numpy as np

import npujit.triton as triton
import npujit.triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, output_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    block_start = pid * BLOCK_SIZE
    offsets = block_start + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(output_ptr + offsets, x + y, mask=mask)


def add(x: np.ndarray, y: np.ndarray, block_size: int = 1024, kernel=add_kernel) -> np.ndarray:
    """``x + y`` for two 1-D arrays of one shape and dtype."""
    output = np.empty_like(x)
    n_elements = output.size
    grid = lambda meta: (triton.cdiv(n_elements, meta["BLOCK_SIZE"]),)  # noqa: E731
    kernel[grid](x, y, output, n_elements, BLOCK_SIZE=block_size)
    return output
