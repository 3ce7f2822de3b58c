"""Fenced code blocks of a Markdown page, run as a test.

A page's ```python blocks run in order in one namespace (a tutorial builds up), each
written to a file of its own first, so kernels defined in it have source npujit can read.
The info string after ``python`` says more:

* ``python no-run``: shown, not run (a fragment, or a command for another environment);
* ``python raises=LaunchError``: the block must raise that exception (by class name).

A ```text block right after a python block is what that block prints, or, after a
``raises=`` block, the error message: every non-empty line of it must appear in the
output (lines starting ``at `` name a file and line, whose path is the reader's own, so
only their ``in kernel ...`` part is compared; a line ``...`` marks lines left out).

Example::

    >>> [b.info for b in parse("```python\\nx = 1\\n```\\n")]
    ['python']
"""
from __future__ import annotations

import contextlib
import io
import os
import re
from dataclasses import dataclass

FENCE = re.compile(r"^```(.*)$")


@dataclass
class Block:
    info: str          # the fence's info string, e.g. "python raises=LaunchError"
    code: str
    line: int          # 1-based line of the opening fence
    expect: str | None = None

    @property
    def lang(self) -> str:
        return self.info.split()[0] if self.info.split() else ""

    @property
    def runs(self) -> bool:
        return self.lang == "python" and "no-run" not in self.info.split()

    @property
    def raises(self) -> str | None:
        m = re.search(r"raises=(\w+)", self.info)
        return m.group(1) if m else None


def parse(text: str) -> list[Block]:
    """The page's fenced blocks; a ```text block right after a python block becomes that
    block's ``expect`` instead of a block of its own."""
    lines = text.splitlines()
    blocks: list[Block] = []
    i = 0
    last_end = -10
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        info, start = m.group(1).strip(), i
        i += 1
        body = []
        while i < len(lines) and not lines[i].startswith("```"):
            body.append(lines[i])
            i += 1
        code = "\n".join(body) + "\n"
        gap = lines[last_end + 1:start] if last_end >= 0 else ["x"]
        if (info == "text" and blocks and blocks[-1].lang == "python"
                and all(not g.strip() for g in gap)):
            blocks[-1].expect = code
        else:
            blocks.append(Block(info, code, start + 1))
        last_end = i
        i += 1
    return blocks


def _expected_lines(expect: str) -> list[str]:
    out = []
    for line in expect.splitlines():
        line = line.strip()
        if not line or line == "...":        # "..." marks lines left out
            continue
        if line.startswith("at ") and " in kernel " in line:
            line = line[line.index(" in kernel "):]
        out.append(line)
    return out


def check_output(block: Block, output: str, where: str) -> None:
    missing = [e for e in _expected_lines(block.expect or "") if e not in output]
    assert not missing, (f"{where}: the output lacks {missing!r}; it was:\n{output}")


def run_page(path: str, workdir: str) -> int:
    """Run every runnable python block of the Markdown page ``path`` (files written to
    ``workdir``, which is also the working directory); returns how many ran."""
    with open(path) as f:
        blocks = parse(f.read())
    name = os.path.splitext(os.path.basename(path))[0].replace("-", "_")
    namespace: dict = {"__name__": f"doc_{name}"}
    ran = 0
    old = os.getcwd()
    os.chdir(workdir)
    try:
        for n, block in enumerate(blocks):
            if not block.runs:
                continue
            where = f"{os.path.relpath(path)}:{block.line}"
            file = os.path.join(workdir, f"{name}_block{n}.py")
            with open(file, "w") as f:
                f.write(block.code)
            out = io.StringIO()
            try:
                with contextlib.redirect_stdout(out):
                    exec(compile(block.code, file, "exec"), namespace)
            except Exception as e:      # compared with what the page says it raises
                if block.raises is None:
                    raise AssertionError(f"{where}: the block raised {type(e).__name__}: "
                                         f"{e}") from e
                names = [c.__name__ for c in type(e).__mro__]
                assert block.raises in names, (f"{where}: expected {block.raises}, got "
                                               f"{type(e).__name__}: {e}")
                check_output(block, str(e), where)
            else:
                assert block.raises is None, f"{where}: expected {block.raises}, nothing raised"
                check_output(block, out.getvalue(), where)
            ran += 1
    finally:
        os.chdir(old)
    return ran
