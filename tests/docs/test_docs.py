"""Every page a user follows runs: the README's example, getting started, testing,
troubleshooting (each documented error message is the one npujit raises), coming from
Triton, the knobs, the NPU model, autotuning, and the tutorials (vector add, softmax,
matmul)."""
import os

import pytest

from .doc_blocks import parse, run_page

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PAGES = ["README.md", "docs/getting-started.md", "docs/testing.md",
         "docs/troubleshooting.md", "docs/coming-from-triton.md", "docs/knobs.md",
         "docs/npu-model.md", "docs/tutorials/01-vector-add.md",
         "docs/tutorials/02-softmax.md", "docs/tutorials/03-matmul.md", "docs/runtime.md",
         "docs/ascendc.md", "docs/moe.md", "docs/tutorials/04-moe-router.md",
         "docs/tutorials/05-fused-moe.md", "docs/cache.md", "docs/autotune.md",
         "docs/llvm.md"]


# Pages whose examples launch a dozen MoE kernels: they run on the reference backend here
# (3 s of CPU instead of 57 s of numba compiles with an empty cache); the same kernels run
# on numba against the same references in tests/moe.
ON_REFERENCE = {"docs/moe.md", "docs/tutorials/05-fused-moe.md"}


@pytest.mark.parametrize("page", PAGES)
def test_page_code_blocks_run(page, tmp_path, monkeypatch):
    if page in ON_REFERENCE:
        monkeypatch.setenv("NPUJIT_BACKEND", "reference")
    assert run_page(os.path.join(ROOT, page), str(tmp_path)) > 0


def test_every_doc_page_is_run_or_generated():
    """A new page under docs/ with python blocks must be listed above (or be generated)."""
    generated = {"docs/language.md"}
    for folder in ("docs", "docs/tutorials"):
        for name in sorted(os.listdir(os.path.join(ROOT, folder))):
            path = f"{folder}/{name}"
            if not name.endswith(".md") or path in generated or path in PAGES:
                continue
            with open(os.path.join(ROOT, path)) as f:
                runnable = [b for b in parse(f.read()) if b.runs]
            assert not runnable, f"{path} has python blocks no test runs; add it to PAGES"


def test_relative_links_resolve():
    import re
    for page in PAGES + ["docs/language.md"]:
        with open(os.path.join(ROOT, page)) as f:
            text = f.read()
        text = re.sub(r"```.*?```", "", text, flags=re.S)      # code is not links
        text = re.sub(r"`[^`]*`", "", text)
        for target in re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", text):
            path = os.path.normpath(os.path.join(ROOT, os.path.dirname(page), target))
            assert os.path.exists(path), f"{page} links to {target}, which does not exist"
