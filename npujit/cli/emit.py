"""``npujit emit FILE::KERNEL -o DIR``: write the kernel's example specialisation as Ascend C
for CANN's compiler (the kernel .cpp, the tiling header, a host launcher and a
CMakeLists.txt; docs/ascendc.md), then list the files.

To prove the emitted code on this machine, run it on the CPU twin of the Ascend C API
against the example's reference: ``npujit check FILE::KERNEL --backend ascendc-twin``.
"""
from __future__ import annotations

import os

from .target import add_target_arguments, resolve

NAME = "emit"
HELP = "write a kernel's example specialisation as Ascend C for CANN"
TAKES_TARGET = True
EXAMPLE = "npujit emit npujit.kernels.elementwise::add_kernel -o out/add"


def add_arguments(parser) -> None:
    add_target_arguments(parser)
    parser.add_argument("-o", "--out", metavar="DIR", required=True,
                        help="the directory to write the Ascend C files into")


def run(args) -> int:
    kernel, _, _grid, largs, kwargs, _reference = resolve(args)
    kernel.emit("ascendc", args.out, *largs, **kwargs)
    for name in sorted(os.listdir(args.out)):
        print(os.path.join(args.out, name))
    return 0
