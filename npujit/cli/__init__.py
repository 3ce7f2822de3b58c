"""The ``npujit`` command: one module per subcommand, registered in ``COMMANDS``.

A subcommand module defines ``NAME``, ``HELP`` (one line), ``EXAMPLE`` (a command line
shown under ``--help``), ``TAKES_TARGET`` (whether it takes ``FILE::KERNEL``; see
``target.py``), ``add_arguments(parser)`` and ``run(args) -> int`` (the exit
code: 0 ok, 1 a failed check); it raises :class:`~npujit.cli.target.UsageError` for bad
usage (exit 2).  Adding a verb (``emit``, ``autotune``, ``bench``, ``cache``, ...) is one
new module and one line in ``COMMANDS``.

Example::

    >>> main(["ir", "--help"])          # doctest: +SKIP
"""
from .main import COMMANDS, build_parser, main

__all__ = ["COMMANDS", "build_parser", "main"]
