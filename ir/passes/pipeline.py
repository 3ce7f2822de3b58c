"""The pass pipeline: one list of named steps, run in order.

``NPUJIT_DUMP_IR=all`` prints the IR after every step to stderr, ``after:fold,cse`` after
those steps only (each dump starts ``// -----// IR after <name> //----- //``, a comment the
parser skips, so a dump can be pasted back into ``parse_function``).

Example::

    >>> from npujit.ir.parser import parse_function
    >>> fn = parse_function('''"func.func"() ({
    ... ^bb0:
    ...   "func.return"() : () -> ()
    ... }) {function_type = () -> (), sym_name = "k"} : () -> ()''')
    >>> [p.name for p in DEFAULT_PASSES]
    ['verify', 'fold', 'cse', 'dce', 'fuse-elementwise', 'dce']
    >>> run_passes(fn, verify=True, dump="") is fn
    True
"""
from __future__ import annotations

import sys

from ..core import Function
from ..printer import print_function
from .. import verifier
from .cse import CSE
from .dce import DCE
from .fold import Fold
from .fuse import FuseElementwise


class Verify:
    """The verifier as a pipeline step: checks, never changes anything."""

    name = "verify"

    def run(self, fn: Function) -> bool:
        verifier.verify(fn)
        return False


DEFAULT_PASSES = [Verify(), Fold(), CSE(), DCE(), FuseElementwise(), DCE()]


def dump_selected(dump: str, name: str) -> bool:
    """Whether the ``NPUJIT_DUMP_IR`` value ``dump`` asks for the IR after pass ``name``.

    Example::

        >>> dump_selected("after:fold,cse", "cse"), dump_selected("all", "dce")
        (True, True)
    """
    dump = dump.strip()
    if dump == "all":
        return True
    if dump.startswith("after:"):
        return name in {s.strip() for s in dump[len("after:"):].split(",")}
    return False


def run_passes(fn: Function, passes=None, verify: bool = False, dump: str | None = None,
               locs: bool = False) -> Function:
    """Run ``passes`` (default ``DEFAULT_PASSES``) on ``fn`` in place and return it.

    ``verify=True`` runs the verifier after every pass, naming the pass that broke the IR.
    ``dump`` defaults to ``NPUJIT_DUMP_IR`` (see module doc); ``locs`` adds locations to
    dumps.

    Example::

        >>> run_passes(fn, passes=[Fold(), DCE()], verify=True)   # doctest: +SKIP
    """
    if dump is None:
        from npujit import knobs
        dump = knobs.dump_ir()
    for p in DEFAULT_PASSES if passes is None else passes:
        p.run(fn)
        if verify:
            try:
                verifier.verify(fn)
            except verifier.VerifyError as e:
                raise verifier.VerifyError(f"after pass {p.name!r}: {e}") from None
        if dump and dump_selected(dump, p.name):
            print(f"// -----// IR after {p.name} //----- //", file=sys.stderr)
            print(print_function(fn, locs=locs), file=sys.stderr)
    return fn

