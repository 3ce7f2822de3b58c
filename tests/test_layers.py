"""Imports run one way only (DESIGN.md, "Imports run one way"): the leaves (errors, knobs,
the target description, host helpers) import nothing of ours; ir imports only leaves; the
language, the backends and the simulator each import ir and leaves but not each other; jit
orchestrates them; kernels and the package's public face sit on top.

The graph is grimp's, built over a copy of the package laid out as it installs
(setup.cfg maps the repo's root folders into ``npujit``), so a function-level import counts
as much as a module-level one.
"""
import configparser
import json
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

grimp = pytest.importorskip("grimp")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Highest layer first; a tuple is a set of siblings that must not import each other.
LAYERS = [
    "kernels",
    "jit",
    ("language", "backends", "sim"),
    "ir",
    ("errors", "knobs", "target", "host"),
]


def _installed_layout(dest: str) -> None:
    """Copy every package of setup.cfg's ``package_dir`` to where it installs."""
    cfg = configparser.ConfigParser()
    cfg.read(os.path.join(ROOT, "setup.cfg"))
    mapping = {}
    for line in cfg["options"]["package_dir"].strip().splitlines():
        pkg, _, src = (s.strip() for s in line.partition("="))
        mapping[pkg] = src
    for pkg, src in mapping.items():
        target = os.path.join(dest, *pkg.split("."))
        os.makedirs(target, exist_ok=True)
        for name in os.listdir(os.path.join(ROOT, src)):
            if name.endswith(".py"):
                shutil.copy(os.path.join(ROOT, src, name), target)


def _illegal(tmp_path) -> list:
    _installed_layout(str(tmp_path))
    script = textwrap.dedent(f"""
        import json, grimp
        graph = grimp.build_graph("npujit")
        layers = []
        for layer in {LAYERS!r}:
            names = layer if isinstance(layer, tuple) else (layer,)
            layers.append(grimp.Layer(*names, independent=True))
        found = graph.find_illegal_dependencies_for_layers(layers=layers,
                                                           containers={{"npujit"}})
        out = []
        for dep in sorted(found, key=lambda d: (d.importer, d.imported)):
            for route in dep.routes:
                out.append([dep.importer, dep.imported, list(route.heads), list(route.middle),
                            list(route.tails)])
        print(json.dumps(out))
    """)
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    res = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         env=env, cwd=str(tmp_path), check=True)
    return json.loads(res.stdout)


def test_no_import_runs_upward(tmp_path):
    bad = _illegal(tmp_path)
    assert not bad, "imports that run upward or sideways between layers:\n" + "\n".join(
        f"  {importer} -> {imported}: via {heads} {middle} {tails}"
        for importer, imported, heads, middle, tails in bad)


def test_the_check_sees_an_upward_import(tmp_path):
    """The layer check is not vacuous: an ir module that imports jit fails it."""
    _installed_layout(str(tmp_path))
    with open(tmp_path / "npujit" / "ir" / "bad_upward.py", "w") as f:
        f.write("from npujit.jit import kernel\n")
    script = textwrap.dedent("""
        import grimp
        graph = grimp.build_graph("npujit")
        found = graph.find_illegal_dependencies_for_layers(
            layers=["jit", "ir"], containers={"npujit"})
        print(any(d.importer == "npujit.ir" and d.imported == "npujit.jit" for d in found))
    """)
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    res = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         env=env, cwd=str(tmp_path), check=True)
    assert res.stdout.strip() == "True", res.stderr
