"""Long kernel bodies cut into segments, each its own numba function.

numba's compile time grows faster than the function: its IR passes recompute liveness
over every block and variable many times, so a straight-line body twice as long costs
about three times as much (a 56-op conformance batch, 26 s as one kernel, 15 s as three;
an 8-sub-kernel fuzz batch, 870 lines, 17 s).  The generated program body is a list of
independent statements in order, so a long one is cut here, after lowering, into
segments of about ``SEGMENT_LINES`` lines: each becomes a function of the variables it
reads that an earlier statement (or the kernel's set-up) defined, returning the ones it
defines that another segment or the kernel's epilogue reads.  Tiles are arrays allocated
in the set-up, so they pass by reference; scalars pass by value and come back.

Nothing changes for a body under ``2 * SEGMENT_LINES`` lines, the size of every bundled
kernel but the largest.  A body whose statements leave the program loop (``continue``,
``break``, ``return``) is left whole.

Example (a body of three statements cut after the second)::

    def k_seg0(pid0, x, t):             # reads x and t, defines s and u
        s = x[0] + 1.0
        u = s * 2.0
        return s, u
    ...
        for p in range(first, last):
            pid0 = ...
            s, u = k_seg0(pid0, x, t)
            t[0] = s + u
"""
from __future__ import annotations

import ast

from npujit.pyast import parse

SEGMENT_LINES = 150
_INDENT = "        "        # the program loop's body


def _names(nodes) -> tuple[set, set]:
    """The names ``nodes`` read and the names they bind."""
    loads, stores = set(), set()
    for node in nodes:
        for n in ast.walk(node):
            if isinstance(n, ast.Name):
                (loads if isinstance(n.ctx, ast.Load) else stores).add(n.id)
            elif isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Name):
                loads.add(n.target.id)
    return loads, stores


def _leaves_the_loop(stmt) -> bool:
    """Whether ``stmt`` has a ``return``, or a ``break``/``continue`` of the program loop."""
    def walk(node, in_loop):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Return):
                return True
            if isinstance(child, (ast.Break, ast.Continue)) and not in_loop:
                return True
            if isinstance(child, (ast.FunctionDef, ast.Lambda)):
                continue
            if walk(child, in_loop or isinstance(child, (ast.For, ast.While))):
                return True
        return False
    return isinstance(stmt, ast.Return) or walk(stmt, isinstance(stmt, (ast.For, ast.While)))


def outline(entry: str, body: list[str], defined: set, after: set,
            decorator: str) -> tuple[list[str], str]:
    """``body`` (lines of the program loop, indented 8) as calls of segment functions.

    ``defined``: the names bound before the loop (parameters, set-up, program ids);
    ``after``: the names the kernel reads after the loop.  Returns the new body lines and
    the segment functions' text (empty when the body is left whole)."""
    if len(body) < 2 * SEGMENT_LINES or not all(
            line.startswith(_INDENT) for line in body if line.strip()):
        return body, ""
    text = "if True:\n" + "\n".join(line[4:] for line in body)
    stmts = parse(text).body[0].body
    if any(_leaves_the_loop(s) for s in stmts):
        return body, ""
    # statements with the comment lines before them, as line ranges of ``body``
    spans, start = [], 0
    for s in stmts:
        end = s.end_lineno - 1          # line 1 of ``text`` is "if True:"
        spans.append((start, end))
        start = end
    chunks, cur, size = [], [], 0
    for s, (lo, hi) in zip(stmts, spans):
        cur.append((s, lo, hi))
        size += hi - lo
        if size >= SEGMENT_LINES:
            chunks.append(cur)
            cur, size = [], 0
    if cur:
        chunks.append(cur)
    if len(chunks) < 2:
        return body, ""
    uses = [_names([s for s, _, _ in c]) for c in chunks]
    functions, calls = [], []
    known = set(defined)
    for k, chunk in enumerate(chunks):
        loads, stores = uses[k]
        ins = sorted(loads & known)
        read_elsewhere = set(after)
        for j, (other, _) in enumerate(uses):
            if j != k:
                read_elsewhere |= other
        outs = sorted(stores & read_elsewhere)
        known |= stores
        name = f"{entry}_seg{k}"
        lines = [line[4:] for _, lo, hi in chunk for line in body[lo:hi]]
        if outs:
            ret = ", ".join(outs) + ("," if len(outs) == 1 else "")
            lines.append(f"    return ({ret})")
            call = f"{_INDENT}{', '.join(outs)}{',' if len(outs) == 1 else ''} = "
        else:
            call = _INDENT
        functions.append(f"{decorator}\ndef {name}({', '.join(ins)}):\n" + "\n".join(lines))
        calls.append(f"{call}{name}({', '.join(ins)})")
    return calls, "\n\n\n".join(functions) + "\n\n\n"


def bound_names(lines: list[str]) -> set:
    """The names that ``lines`` (statements at one indent) bind."""
    if not lines:
        return set()
    pad = len(lines[0]) - len(lines[0].lstrip())
    tree = parse("\n".join(line[pad:] for line in lines))
    return _names(tree.body)[1]
