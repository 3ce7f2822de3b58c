"""Errors a user sees, each pointing at their own source line or argument.

Example::

    >>> from npujit.ir import Loc
    >>> print(CompilationError("tile shapes (4,) and (8,) do not broadcast", Loc("k.py", 3)))
    ... # doctest: +SKIP
"""
from __future__ import annotations

import linecache


class NPUJitError(Exception):
    """Base class of every error npujit raises on purpose."""


class CompilationError(NPUJitError):
    """A kernel could not be traced or compiled; ``loc`` is the user's source line."""

    def __init__(self, message: str, loc=None, kernel: str | None = None):
        self.message = message
        self.loc = loc
        self.kernel = kernel
        super().__init__(self._format())

    @property
    def error_message(self) -> str:
        """The message without the source excerpt (Triton's ``CompilationError`` name)."""
        return self.message

    def _format(self) -> str:
        if self.loc is None or self.loc.line <= 0:
            return self.message
        where = f"{self.loc.file}:{self.loc.line}"
        if self.kernel:
            where += f" in kernel '{self.kernel}'"
        text = linecache.getline(self.loc.file, self.loc.line).rstrip()
        excerpt = f"\n    {text.strip()}\n" if text else "\n"
        return f"at {where}:{excerpt}{self.message}"


class LaunchError(NPUJitError, TypeError):
    """Arguments or grid of a launch are wrong; the message names the argument.  As
    ``OutOfBoundsError``, ``LaunchError(template, *ints)`` fills the template's ``%d``
    fields (what generated code raises)."""

    def __init__(self, message: str = "", *values):
        super().__init__(message % values if values else message)


class ArgumentOverflowError(LaunchError, OverflowError):
    """An int argument that no 64-bit type holds (below -2**63 or from 2**64 on); an
    ``OverflowError`` too, as Triton raises."""


class OutOfResources(CompilationError):
    """Tiles do not fit a memory scope of the NPU (or the schedule runs out of event ids).
    ``reason`` says it on one line -- the scope, the biggest buffer with its bytes x
    stages, the budget -- for tables such as the autotuner's (jit/autotune.py)."""

    def __init__(self, message: str, loc=None, kernel: str | None = None,
                 reason: str | None = None):
        self.reason = reason or message.splitlines()[0]
        super().__init__(message, loc, kernel)


# The ends of every backend's out-of-bounds messages: what to do about one lane (the
# reference interpreter and debug mode, which name the lane's offset), and about a range
# of offsets (the default range check, which names the active lanes' extremes).
OOB_FIX = "mask the lane off or fix its offset"
OOB_RANGE_HINT = ("; mask the access or fix its offsets (rerun with NPUJIT_DEBUG=1 to find "
                  "the exact lane)")


class OutOfBoundsError(NPUJitError, IndexError):
    """An active lane accessed memory outside its array argument (both tiers; the numba
    backend checks in debug mode, ``NPUJIT_DEBUG=1``).  The message names the kernel, the
    op and its source line, the program id, the offset and the argument.

    Generated code raises it as ``OutOfBoundsError(template, *ints)``: the template's
    ``%d`` fields are filled here, in Python, so compiled kernels carry no string code.
    The range check raises ``OutOfBoundsError(site, *ints)`` with the number of its check
    site instead (``backends/numba/check_lib.py``); the launcher re-raises it with the
    site's template, the numbers in ``values``.

    Example::

        >>> str(OutOfBoundsError("offset %d is outside [0, %d)", 9, 8))
        'offset 9 is outside [0, 8)'
    """

    def __init__(self, message: str | int, *values):
        self.site, self.values = (message, values) if isinstance(message, int) else (None, values)
        if self.site is not None:
            message = f"out-of-bounds access at range-check site {message}: values %s"
            values = (values,)
        super().__init__(message % values if values else message)


class DeviceAssertionError(NPUJitError, AssertionError):
    """``nl.device_assert`` failed in a lane (checked when the kernel is compiled with
    ``debug=True`` / ``NPUJIT_DEBUG=1``): kernel, line, program id, lane and message."""


class IndexOverflowError(DeviceAssertionError, OverflowError):
    """Integer index arithmetic wrapped around its 32-bit type (debug mode): the address
    it feeds would be wrong.  Cast the operand to ``nl.int64`` before the arithmetic."""
