"""The npujit command: every subcommand run in a subprocess on a shipped kernel (the
bundled kernels' example_args), bad usage (exit 2), a failed check (exit 1), errors as one
line, and the help texts with their examples."""
import importlib
import json
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

from npujit.cli import COMMANDS, main

# The subcommands as typed (a module's NAME: moe_report.py is ``npujit moe-report``).
VERBS = [importlib.import_module(f"npujit.cli.{c}").NAME for c in COMMANDS]


def run_cli(*args, cwd=None):
    """``python -m npujit *args`` in a fresh process (the disk kernel cache is shared
    through NPUJIT_CACHE_DIR, so warm runs skip numba compiles)."""
    return subprocess.run([sys.executable, "-m", "npujit", *args], capture_output=True,
                          text=True, cwd=cwd, env=os.environ.copy(), timeout=300)


MY_KERNELS = '''
import numpy as np
import npujit.language as nl
from npujit import npu_kernel

@npu_kernel
def double_kernel(x_ptr, out_ptr, n, BLOCK: nl.constexpr):
    offs = nl.arange(0, BLOCK)
    nl.store(out_ptr + offs, nl.load(x_ptr + offs, mask=offs < n) * 2, mask=offs < n)

@npu_kernel
def broken_kernel(x_ptr, n):
    offs = nl.arange(0, n)
    nl.store(x_ptr + offs, nl.load(x_ptr + offs))

def example_args(kernel, shape=None, dtype=None):
    n = shape[0] if shape else 100
    x = np.arange(n, dtype=dtype or np.float32)
    if kernel == "double_kernel":
        # a wrong reference on purpose: the check must fail
        return (1,), [x, np.zeros_like(x), n], {"BLOCK": 128}, lambda x, out, n: 3 * x
    return (1,), [x, n], {}
'''


@pytest.fixture
def my_kernels(tmp_path):
    path = tmp_path / "my_kernels.py"
    path.write_text(MY_KERNELS)
    return str(path)


# --- subprocesses: each subcommand on a shipped kernel --------------------------------------

def test_ir_prints_every_stage_of_a_shipped_kernel():
    r = run_cli("ir", "npujit.kernels.softmax::softmax_kernel", "--shape", "4x100")
    assert r.returncode == 0, r.stderr
    for stage in ("trace", "ir", "schedule", "buffers"):
        assert f"// ===== {stage} =====" in r.stdout
    assert '"npu.exp"' in r.stdout and "BLOCK = 128" in r.stdout


def test_ir_prints_the_llvm_backends_generated_module():
    r = run_cli("ir", "npujit.kernels.softmax::softmax_kernel", "--shape", "4x100",
                "--backend", "llvm", "--stage", "backend")
    assert r.returncode == 0, r.stderr
    assert "// ===== backend =====" in r.stdout
    assert "define " in r.stdout and "fdiv" in r.stdout       # the module, with its divide


def test_simulate_checks_and_writes_a_trace(tmp_path):
    trace = tmp_path / "add.json"
    r = run_cli("simulate", "kernels/elementwise.py::add_stream_kernel", "--check",
                "--trace", str(trace), cwd=os.path.dirname(os.path.dirname(
                    os.path.dirname(os.path.abspath(__file__)))))
    assert r.returncode == 0, r.stderr
    assert "SimReport: launch 'add_stream_kernel' on ascend-910b-like" in r.stdout
    assert "check ok: no races, no flag problems, outputs match the reference" in r.stdout
    events = json.loads(trace.read_text())["traceEvents"]
    assert any(e.get("name") == "thread_name" and e["args"]["name"] == "MTE2" for e in events)


def test_emit_writes_ascend_c_that_the_twin_runs(tmp_path):
    """emit writes the kernel, tiling header, launcher and CMakeLists; the same kernel then
    checks out on the CPU twin against the example's reference."""
    out = tmp_path / "add"
    r = run_cli("emit", "npujit.kernels.elementwise::add_kernel", "-o", str(out))
    assert r.returncode == 0, r.stderr
    files = sorted(os.listdir(out))
    assert "CMakeLists.txt" in files and any(f.endswith(".cpp") for f in files)
    assert all(str(out / f) in r.stdout for f in files)
    src = next((out / f).read_text() for f in files if f.endswith(".cpp")
               and "__aicore__" in (out / f).read_text())
    assert 'extern "C" __global__ __aicore__' in src
    if shutil.which("g++"):
        r = run_cli("check", "npujit.kernels.elementwise::add_kernel",
                    "--backend", "ascendc-twin")
        assert r.returncode == 0, r.stdout + r.stderr


def test_check_runs_the_tiers_and_a_failed_check_exits_1(my_kernels):
    r = run_cli("check", "npujit.kernels.layernorm::rmsnorm_kernel",
                "--backend", "reference,scheduled")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "check_kernel(rmsnorm_kernel): ok" in r.stdout
    r = run_cli("check", f"{my_kernels}::double_kernel", "--backend", "reference")
    assert r.returncode == 1
    assert "output 'out_ptr': 99 of 100 elements differ" in r.stdout


def test_demo_help_and_bad_usage_exit_2():
    r = run_cli("demo", "--help")
    assert r.returncode == 0 and "example:\n  npujit demo --trace" in r.stdout
    r = run_cli("ir", "kernels/softmax.py")               # no ::KERNEL
    assert r.returncode == 2
    assert r.stderr.splitlines()[0] == ("npujit ir: error: expected FILE::KERNEL (e.g. "
                                        "kernels/softmax.py::softmax_kernel), got "
                                        "'kernels/softmax.py'")
    assert "Traceback" not in r.stderr


def test_the_console_script_is_installed():
    script = shutil.which("npujit", path=os.path.dirname(sys.executable))
    if script is None:
        pytest.skip("npujit is not installed as a script beside this Python")
    r = subprocess.run([script, "--help"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0
    for verb in VERBS:
        assert verb in r.stdout


# --- in process: usage errors, exit codes, one-line errors ----------------------------------

def _main(capsys, *argv):
    try:
        code = main(list(argv))
    except SystemExit as e:           # argparse: --help (0) and bad options (2)
        code = e.code
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.mark.parametrize("verb", VERBS)
def test_every_subcommand_has_help_with_an_example(capsys, verb):
    code, out, _ = _main(capsys, verb, "--help")
    assert code == 0 and "example:\n  npujit " + verb in out


@pytest.mark.parametrize("argv, message", [
    (["nope"], "invalid choice: 'nope'"),
    (["ir"], "the following arguments are required: FILE::KERNEL"),
    (["ir", "no/such/file.py::k"], "no such file: no/such/file.py"),
    (["ir", "npujit.kernels.softmax::nope"], "has no 'nope'; its kernels: softmax_kernel"),
    (["ir", "npujit.kernels.softmax::np"], "'np' in npujit.kernels.softmax is a module, "
                                           "not an @npu_kernel"),
    (["ir", "npujit.kernels.softmax::softmax_kernel", "--after", "nope"],
     "unknown pass 'nope'; --after takes one of verify, check-strided-views, index-checks, fold"),
    (["ir", "npujit.kernels.softmax::softmax_kernel", "--shape", "4xq"],
     "--shape takes positive ints like 1024 or 64x128, got '4xq'"),
    (["ir", "npujit.kernels.softmax::softmax_kernel", "--dtype", "float7"],
     "--dtype takes a dtype name"),
    (["ir", "npujit.host::cdiv"], "is a function, not an @npu_kernel"),
    (["simulate", "npujit.kernels.softmax::softmax_kernel", "--spec", "h100"],
     "unknown --spec 'h100'; presets:"),
    (["check", "npujit.kernels.softmax::softmax_kernel", "--backend", "cuda"],
     "unknown backend 'cuda'"),
    (["moe-report", "--quick", "--tokens", "16,x"],
     "--tokens takes comma-separated integers, got '16,x'"),
])
def test_bad_usage_exits_2_with_one_clear_line(capsys, argv, message):
    code, _, err = _main(capsys, *argv)
    assert code == 2
    assert message in err and "Traceback" not in err


def test_no_example_args_is_a_usage_error(capsys, tmp_path):
    path = tmp_path / "bare.py"
    path.write_text(textwrap.dedent('''
        import npujit.language as nl
        from npujit import npu_kernel

        @npu_kernel
        def k(x_ptr):
            nl.store(x_ptr + nl.arange(0, 8), nl.zeros((8,), nl.float32))
    '''))
    code, _, err = _main(capsys, "ir", f"{path}::k")
    assert code == 2 and "defines no example_args(kernel, shape=None, dtype=None)" in err


def test_an_error_is_one_line_and_traceback_shows_it(capsys, my_kernels):
    code, _, err = _main(capsys, "ir", f"{my_kernels}::broken_kernel")
    assert code == 1
    first, hint = err.strip().splitlines()
    assert first == ("npujit ir: CompilationError: arange end must be a constant int (a "
                     "literal or a constexpr parameter), got nl.tensor<i32> "
                     f"({my_kernels}:13)")
    assert hint == "(run with --traceback for the full traceback)"
    with pytest.raises(Exception, match="arange"):
        main(["ir", f"{my_kernels}::broken_kernel", "--traceback"])


def test_ir_after_a_pass_and_one_stage(capsys):
    code, out, _ = _main(capsys, "ir", "npujit.kernels.elementwise::add_kernel",
                         "--after", "fold")
    assert code == 0 and out.startswith("// -----// IR after fold //----- //")
    assert out.count("IR after") == 1
    code, out, _ = _main(capsys, "ir", "npujit.kernels.elementwise::add_kernel",
                         "--stage", "buffers")
    assert code == 0 and out.startswith("// ===== buffers =====") and "=== ir ===" not in out


def test_plot_needs_matplotlib(capsys, tmp_path):
    png = tmp_path / "t.png"
    code, out, err = _main(capsys, "simulate", "npujit.kernels.elementwise::add_kernel",
                           "--plot", str(png))
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        assert code == 1 and "--plot needs matplotlib: pip install matplotlib" in err
        return
    assert code == 0 and png.stat().st_size > 0
