"""A helper module for tests/runtime/test_globals.py: globals read from another module,
through a helper function and as ``module.NAME``."""
import npujit.language as nl

SCALE = 2.0
LIMIT = 2          # the same name as a global of the test module: a different binding


def scaled(v):
    """A plain helper the kernel calls: reads this module's SCALE."""
    return v * SCALE


@nl.inline
def shifted(v):
    """An @nl.inline helper: reads this module's LIMIT."""
    return v + LIMIT
