"""``nl.device_print`` on the llvm backend: the generated code calls back into Python.

Each printed value is a *site* (``LlvmSource.prints``: its prefix, dtype and shape; a
print with no value is one site with no dtype).  The code puts the value where the
callback can read it -- a scalar in a stack slot, a tile in a contiguous scratch tile, in
the tile's memory type (a bool as a byte, a 16- or 8-bit float as its f32 value) -- and
calls the launch context's ``printer`` with the site, the program id and the address
(runtime.py ``Launcher._print``), which formats it as the reference interpreter does:
``[pid (x, y, z)] <prefix> <value>``, numpy's text of the value in its own dtype.  As on
the other backends, programs on several threads print in the order they run.

Example::

    >>> sorted(k.value for k in LOWERINGS)
    ['npu.print']
"""
from __future__ import annotations

from npujit.ir import Kind

from .ir_text import memory_type
from .values import Scalar, Tile


def device_print(cg, op) -> None:
    w = cg.w
    prefix = op.attrs.get("prefix", "")
    if not op.operands:
        _call(cg, _site(cg, prefix, None, ()), "null")
        return
    for v in op.operands:
        val = cg.val(v)
        dt = v.type.dtype
        if isinstance(val, Scalar):
            mt = memory_type(dt)
            slot = w.alloca(mt, "printed")
            ref = w.assign(f"zext i1 {val.ref} to i8") if dt.is_bool else val.ref
            w.store(mt, ref, slot)
            _call(cg, _site(cg, prefix, dt, ()), slot)
            continue
        tile = val if isinstance(val, Tile) and val.contiguous else cg.materialise(val)
        _call(cg, _site(cg, prefix, dt, tuple(v.type.shape)), tile.ptr)


def _site(cg, prefix: str, dtype, shape: tuple) -> int:
    cg.prints.append((prefix, dtype, shape))
    return len(cg.prints) - 1


def _call(cg, site: int, data: str) -> None:
    cg.w.line(f"call void %printer(i64 {site}, i64 %pid0, i64 %pid1, i64 %pid2, "
              f"ptr {data})")


LOWERINGS = {
    Kind.PRINT: device_print,
}
