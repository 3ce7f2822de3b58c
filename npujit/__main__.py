"""Command line: ``python -m npujit demo`` (or the ``npujit`` script)."""
from __future__ import annotations

import argparse
import sys


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="npujit", description="npujit command line")
    sub = parser.add_subparsers(dest="cmd")
    sub.add_parser("demo", help="compile and run the bundled kernels, checked against numpy")
    args = parser.parse_args(argv)
    if args.cmd == "demo":
        from .demo import run_demo
        return 1 if run_demo() else 0
    parser.print_help()
    return 0


if __name__ == "__main__":
    sys.exit(main())
