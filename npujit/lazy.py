"""Re-exports imported on first use (PEP 562), so ``import npujit`` stays cheap.

A package whose ``__init__`` re-exports names from heavy submodules (the compiler, the
autotuner, the simulator) lists them in a table ``{name: "module"}`` or ``{name:
"module:attribute"}`` and installs the ``__getattr__`` and ``__dir__`` this module
builds: the first ``package.name`` (or ``from package import name``) imports the
submodule, later ones find the value in the package's namespace.  ``python -X importtime``
then shows each submodule where it is really first needed.

A leaf: it imports nothing of npujit's, so any layer may use it.

Example::

    __getattr__, __dir__ = lazy_exports(__name__, {
        "autotune": "npujit.jit.autotune:autotune",   # a module's attribute
        "moe": "npujit.moe",                          # a module itself
    })
"""
from __future__ import annotations

import importlib
import sys


def lazy_exports(package: str, table: dict) -> tuple:
    """``(__getattr__, __dir__)`` for module ``package`` that import ``table``'s names on
    first use; a name not in the table is an ``AttributeError`` as usual."""

    def __getattr__(name: str):
        where = table.get(name)
        if where is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module, _, attribute = where.partition(":")
        value = importlib.import_module(module)
        if attribute:
            value = getattr(value, attribute)
        setattr(sys.modules[package], name, value)     # the next access is a plain lookup
        return value

    def __dir__() -> list:
        return sorted(set(vars(sys.modules[package])) | set(table))

    return __getattr__, __dir__
