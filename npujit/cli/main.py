"""``npujit <verb> ...``: the parser built from the subcommand modules, and the exit codes.

Exit codes: 0 ok, 1 a failed check (or an error while running, printed as one line),
2 bad usage.  ``--traceback`` shows the full Python traceback of an error.

Example::

    >>> build_parser().parse_args(["ir", "kernels/softmax.py::softmax_kernel"]).verb
    'ir'
"""
from __future__ import annotations

import argparse
import importlib
import sys

from .target import UsageError

# The subcommand modules (npujit/cli/<name>.py), in the order --help lists them.
COMMANDS = ("demo", "check", "ir", "simulate", "emit", "cache", "moe_report")

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


# Shown under --help of the subcommands that take FILE::KERNEL.
TARGET_NOTE = """
FILE::KERNEL is a Python file (or module) and the @npu_kernel in it; the launch's
arguments come from example_args(kernel, shape=None, dtype=None) in that file
(docs/getting-started.md)."""


def _modules():
    return [importlib.import_module(f"{__package__}.{name}") for name in COMMANDS]


class _Parser(argparse.ArgumentParser):
    """argparse's parser, but a usage error names the subcommand's example too."""

    example = ""

    def error(self, message):
        hint = f"\nexample: {self.example}" if self.example else ""
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}{hint}\n")


def build_parser() -> argparse.ArgumentParser:
    """The ``npujit`` argument parser with every registered subcommand."""
    parser = _Parser(prog="npujit",
                     description="npujit: a Triton-style JIT compiler for a simulated "
                                 "Ascend-like NPU.",
                     epilog="Run 'npujit <command> --help' for a command's options. "
                            "Exit codes: 0 ok, 1 a failed check, 2 bad usage.")
    parser.add_argument("--traceback", action="store_true",
                        help="show the full Python traceback of an error")
    sub = parser.add_subparsers(dest="verb", metavar="<command>", parser_class=_Parser)
    for mod in _modules():
        epilog = f"example:\n  {mod.EXAMPLE}\n"
        if getattr(mod, "TAKES_TARGET", False):
            epilog += TARGET_NOTE
        p = sub.add_parser(mod.NAME, help=mod.HELP, epilog=epilog,
                           description=(mod.__doc__ or mod.HELP).strip(),
                           formatter_class=argparse.RawDescriptionHelpFormatter)
        p.example = mod.EXAMPLE
        p.add_argument("--traceback", action="store_true", default=argparse.SUPPRESS,
                       help="show the full Python traceback of an error")
        mod.add_arguments(p)
        p.set_defaults(command=mod)
    return parser


def one_line(e: BaseException) -> str:
    """An error as one line: its type, its message's first line, and for a compile error
    the source line it points at."""
    msg = getattr(e, "message", None) or str(e)
    first = msg.strip().splitlines()[0] if msg.strip() else ""
    loc = getattr(e, "loc", None)
    where = f" ({loc.file}:{loc.line})" if loc is not None and getattr(loc, "line", 0) > 0 \
        else ""
    return f"{type(e).__name__}: {first}{where}"


def main(argv=None) -> int:
    """Run the ``npujit`` command line with ``argv`` (default ``sys.argv[1:]``); returns
    the exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.verb is None:
        parser.print_help()
        return EXIT_USAGE
    prog = f"npujit {args.verb}"
    try:
        return int(args.command.run(args))
    except UsageError as e:
        if args.traceback:
            raise
        print(f"{prog}: error: {e}\nexample: {args.command.EXAMPLE}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return 130
    except Exception as e:      # one clear line; --traceback for the rest
        if args.traceback:
            raise
        print(f"{prog}: {one_line(e)}\n(run with --traceback for the full traceback)",
              file=sys.stderr)
        return EXIT_FAILED
