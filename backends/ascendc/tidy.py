"""Tidying of an emitted kernel body: what the one-pass emitter wrote but nothing reads.

Example::

    >>> drop_unused_scalars(["        const int32_t s = 1;", "        // k.py:3  x = 1"])
    []
"""
from __future__ import annotations

import re

_SCALAR_DEF = re.compile(r"\s*const [\w:<>]+ (\w+) = [^;]*;$")


def drop_unused_scalars(lines: list) -> list:
    """The body without scalar constants nobody reads (a block pointer's unchecked shape,
    say): g++ rejects them under -Werror, and they are dead code.  Their expressions are
    scalar arithmetic and GM reads, free of side effects."""
    while True:
        text = "\n".join(lines)
        unused = set()
        for line in lines:
            m = _SCALAR_DEF.match(line)
            if m and len(re.findall(rf"\b{m.group(1)}\b", text)) == 1:
                unused.add(m.group(1))
        if not unused:
            return _drop_bare_comments(lines)
        lines = [line for line in lines
                 if not ((m := _SCALAR_DEF.match(line)) and m.group(1) in unused)]


def _drop_bare_comments(lines: list) -> list:
    """Without the source-line comments that no code follows (their line's ops emitted
    nothing: symbolic offsets, or scalars nobody reads)."""
    def comment(line):
        return re.match(r"(\s*)// \S+\.py:\d+  ", line)

    out = []
    for i, line in enumerate(lines):
        m = comment(line)
        if m:
            nxt = lines[i + 1] if i + 1 < len(lines) else ""
            n = comment(nxt)
            if (n and n.group(1) == m.group(1)) or nxt.strip() in ("", "}"):
                continue
        out.append(line)
    return out
