"""The README's first command runs the demo: it must finish, agree with numpy on every
kernel (the demo checks each one), and show the simulated-NPU section."""
import io

from npujit.demo import run_demo


def test_demo_runs_and_every_kernel_matches_numpy():
    out = io.StringIO()
    assert run_demo(out) == 0
    text = out.getvalue()
    assert "all kernels match numpy" in text and "MISMATCH" not in text
    assert "On the simulated NPU" in text and "num_stages=2 is" in text
    assert text.count(" ok ") >= 6          # six kernels checked, each ok
