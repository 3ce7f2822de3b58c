"""Constants passed to the range check and the event recorder, as values, not literals.

numba types a constant argument of a call to another jitted function as a literal
(``Literal[int](7)``), and compiles the callee once per distinct literal.  A range
check's site number (``ck.out_of_bounds(7, ...)``, ``ck.block_span``,
``ck.index_overflow``) and a recorded op's number (``rc.put(rec, rec_n, 12, 0, 0, 0)``)
are different in almost every call, so each call site was a compile of its own, and in
every later process a load of its own from numba's cache: a fresh checkout's test suite
made 1,282 helper specialisations, ``record.put`` 328 of them and the three checks 206.
Wrapped as ``i64(7)`` (``b1(True)`` for a bool) the argument is a plain int64, so these
helpers compile once per argument *types*.  They only raise, or append an event, so no
loop of theirs gets faster from knowing the constant.

Other helpers keep their literals: a reduction's row length (``rl.line_sum_f(x, 0,
1024)``) is a loop bound that LLVM unrolls and vectorises when it is a constant
(layernorm 2048x1024 f32 took 2.9 ms instead of 0.9 ms without it).

Example::

    >>> unliteral_helper_args("    ck.block_span(3, (a, b), (4, 8), i64(2), -1, True)")
    '    ck.block_span(i64(3), (a, b), (i64(4), i64(8)), i64(2), i64(-1), b1(True))'
    >>> unliteral_helper_args("    y = rl.line_sum_f(x, 0, 16)")
    '    y = rl.line_sum_f(x, 0, 16)'
"""
from __future__ import annotations

import re

# The helpers whose constant arguments become values (disk_cache.HELPERS' short names).
UNLITERAL = ("ck", "rc")
_CALL = re.compile(r"(?<![\w.])(?:" + "|".join(UNLITERAL) + r")\.\w+\(")
_CONST = re.compile(r"-?\d+(?![\w.])|True(?!\w)|False(?!\w)")
_INT64_MAX = (1 << 63) - 1


def unliteral_helper_args(text: str) -> str:
    """``text`` (generated module source) with each bare int or bool constant that is an
    argument of a helper call -- directly, or inside a tuple argument -- wrapped in its
    numba cast (see the module docstring)."""
    return "\n".join(_line(line) if _CALL.search(line) else line
                     for line in text.split("\n"))


def _line(line: str) -> str:
    if line.lstrip().startswith(("#", "'", '"')):
        return line
    out = []
    # one entry per open bracket: True where a constant there is a helper argument
    frames: list[bool] = []
    i, n = 0, len(line)
    while i < n:
        ch = line[i]
        if ch == "#":
            out.append(line[i:])
            break
        if ch in "'\"":
            j = line.index(ch, i + 1) + 1
            out.append(line[i:j])
            i = j
            continue
        m = _CALL.match(line, i) if (i == 0 or not _word(line[i - 1])) else None
        if m:
            out.append(m.group())
            frames.append(True)
            i = m.end()
            continue
        if ch in "([{":
            prev = line[:i].rstrip()[-1:]
            # a bare parenthesis inside a helper's arguments is a tuple argument
            tuple_arg = ch == "(" and bool(frames) and frames[-1] and prev in ("(", ",")
            frames.append(tuple_arg)
            out.append(ch)
            i += 1
            continue
        if ch in ")]}":
            if frames:
                frames.pop()
            out.append(ch)
            i += 1
            continue
        if frames and frames[-1] and not _word(line[i - 1]):
            m = _CONST.match(line, i)
            prev = line[:i].rstrip()[-1:]
            if m and prev in ("(", ","):
                tok = m.group()
                if tok in ("True", "False"):
                    out.append(f"b1({tok})")
                else:
                    out.append(f"{'u64' if int(tok) > _INT64_MAX else 'i64'}({tok})")
                i = m.end()
                continue
        out.append(ch)
        i += 1
    return "".join(out)


def _word(ch: str) -> bool:
    return ch.isalnum() or ch in "_."
