"""The contract between the generated code and its launcher (runtime.py), kept apart
from the code generator so a process that loads a cached kernel imports neither the
generator nor the IR walkers: the entry's name, where the entry reads an array's data
pointer and length, and ``LlvmSource``, what the launcher needs of a generated module.
"""
from __future__ import annotations

from dataclasses import dataclass, field

ENTRY = "npujit_kernel"
# Byte offsets of ``data`` and ``dimensions`` in numpy's array object (PyArrayObject: the
# object header, then the data pointer, the number of dimensions, the dimensions pointer),
# checked against numpy at run time (runtime._check_array_layout).
ARRAY_DATA, ARRAY_DIMS = 16, 32


@dataclass
class LlvmSource:
    """The generated module and what the launcher needs of it (plain data)."""

    text: str
    name: str
    arg_types: tuple
    arg_names: tuple
    scratch_bytes: int
    has_atomics: bool
    sites: list = field(default_factory=list)    # (error class name, template)
    narrow: dict = field(default_factory=dict)   # pointer arg index -> LaunchError text
    written: tuple = ()                          # pointer args the kernel stores to
    prints: list = field(default_factory=list)   # device_print sites: (prefix, dtype, shape)
