"""The README's first command runs the demo (``python -m npujit demo``, here in a fresh
process, as a user runs it): it must finish, agree with numpy on every kernel (the demo
checks each one), show the simulated-NPU and MoE sections and write the trace it is asked for."""
import json
import os
import subprocess
import sys


def test_demo_runs_and_every_kernel_matches_numpy(tmp_path):
    trace = tmp_path / "demo.json"
    r = subprocess.run([sys.executable, "-m", "npujit", "demo", "--trace", str(trace)],
                       capture_output=True, text=True, env=os.environ.copy(), timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    text = r.stdout
    assert "all kernels match numpy" in text and "MISMATCH" not in text
    assert "On the simulated NPU" in text and "num_stages=2 is" in text
    assert text.count(" ok ") >= 6          # six kernels checked, each ok
    assert "router + dispatch + expert FFN + combine: ok" in text     # the MoE section
    assert "routing load (from the kernels): load [" in text and "fused " in text
    assert json.loads(trace.read_text())["traceEvents"]
