"""run_passes: the named steps, NPUJIT_DUMP_IR, verify-after-every-pass; module doctests."""
import doctest
import importlib
import sys

import pytest
from ir_samples import add_kernel, canon, func, loop_kernel

from npujit.ir import VerifyError, parse_function, print_function, verify
from npujit.ir.pipeline import CompileContext, dump_selected, pipeline, run_passes
from npujit.target import ASCEND_910B_LIKE

DEFAULT_PASSES = pipeline(CompileContext(dump=""))

T = "tensor<4xf32>"


def test_default_pipeline_order():
    assert [p.name for p in DEFAULT_PASSES] == ["verify", "check-strided-views", "fold", "cse",
                                                "dce", "affine-access", "cse",
                                                "dot-accumulate", "fuse-elementwise", "dce"]


def test_one_pipeline_list_holds_every_step():
    """Debug mode adds the index checks; a spec adds the scheduling steps, ending with the
    schedule verifier: one list, so a dump can follow any step."""
    names = [p.name for p in pipeline(CompileContext(spec=ASCEND_910B_LIKE, debug=True))]
    assert names == ["verify", "check-strided-views", "index-checks", "fold", "cse", "dce",
                     "affine-access", "cse", "dot-accumulate",
                     "fuse-elementwise", "dce", "clear-schedule", "place-and-assign-pipes",
                     "split-cores", "group-loads", "allocate-buffers", "insert-sync",
                     "verify-schedule"]


@pytest.mark.parametrize("step", ["index-checks", "split-cores", "insert-sync",
                                  "verify-schedule"])
def test_dump_after_any_step(capsys, step):
    from npujit.ir.pipeline import run_pipeline
    run_pipeline(add_kernel(), CompileContext(spec=ASCEND_910B_LIKE, debug=True,
                                              dump=f"after:{step}"))
    err = capsys.readouterr().err
    assert err.startswith(f"// -----// IR after {step} //----- //\n")
    assert parse_function(err.split("//----- //\n", 1)[1]).name == "add_kernel"


def test_pipeline_end_to_end():
    before = func("%p: !npu.ptr<f32>", f'''
      %o = "npu.arange"() {{end = 4 : i64, start = 0 : i64}} : () -> tensor<4xi32>
      %x = "npu.load"(%p, %o) : (!npu.ptr<f32>, tensor<4xi32>) -> {T}
      %one = "arith.constant"() {{dtype = f32, value = 1.0 : f32}} : () -> f32
      %two = "npu.add"(%one, %one) : (f32, f32) -> f32
      %s1 = "npu.splat"(%two) {{shape = array<i64: 4>}} : (f32) -> {T}
      %s2 = "npu.splat"(%two) {{shape = array<i64: 4>}} : (f32) -> {T}
      %a = "npu.mul"(%x, %s1) : ({T}, {T}) -> {T}
      %b = "npu.mul"(%x, %s2) : ({T}, {T}) -> {T}
      %c = "npu.add"(%a, %b) : ({T}, {T}) -> {T}
      %dead = "npu.exp"(%c) : ({T}) -> {T}
      "npu.store"(%p, %o, %c) : (!npu.ptr<f32>, tensor<4xi32>, {T}) -> ()''')
    after = func("%p: !npu.ptr<f32>", f'''
      %o = "npu.arange"() {{end = 4 : i64, start = 0 : i64}} : () -> tensor<4xi32>
      %x = "npu.load"(%p, %o) : (!npu.ptr<f32>, tensor<4xi32>) -> {T}
      %two = "arith.constant"() {{dtype = f32, value = 2.0 : f32}} : () -> f32
      %f = "npu.fused"(%two, %x) ({{
      ^bb0(%arg1: f32, %arg2: {T}):
        %s1 = "npu.splat"(%arg1) {{shape = array<i64: 4>}} : (f32) -> {T}
        %a = "npu.mul"(%arg2, %s1) : ({T}, {T}) -> {T}
        %c = "npu.add"(%a, %a) : ({T}, {T}) -> {T}
        "scf.yield"(%c) : ({T}) -> ()
      }}) : (f32, {T}) -> {T}
      "npu.store"(%p, %o, %f) : (!npu.ptr<f32>, tensor<4xi32>, {T}) -> ()''')
    fn = run_passes(parse_function(before), verify=True, dump="")
    assert print_function(fn) == canon(after)


def test_dump_all_prints_after_every_step(capsys):
    run_passes(add_kernel(), dump="all")
    err = capsys.readouterr().err
    headers = [line for line in err.splitlines() if line.startswith("// -----//")]
    assert headers == [f"// -----// IR after {p.name} //----- //" for p in DEFAULT_PASSES]


def test_dump_after_selected_passes_reads_back(capsys):
    fn = run_passes(loop_kernel(), dump="after:fold,fuse-elementwise")
    err = capsys.readouterr().err
    assert err.count("// -----// IR after") == 2
    assert "// -----// IR after fold //----- //" in err
    last = err.split("// -----// IR after fuse-elementwise //----- //")[1]
    assert parse_function(last).name == fn.name  # a dump parses (the header is a comment)


def test_dump_defaults_to_the_environment_knob(capsys, monkeypatch):
    monkeypatch.setenv("NPUJIT_DUMP_IR", "after:cse")
    run_passes(add_kernel())
    assert capsys.readouterr().err.startswith("// -----// IR after cse //----- //\n\"func.func\"")
    monkeypatch.delenv("NPUJIT_DUMP_IR")
    run_passes(add_kernel())
    assert capsys.readouterr().err == ""


def test_dump_with_locs(capsys):
    run_passes(add_kernel(), passes=[DEFAULT_PASSES[1]], dump="all", locs=True)
    assert 'loc("add.py":7:0)' in capsys.readouterr().err


@pytest.mark.parametrize("dump,name,want", [("all", "dce", True), ("after:fold,cse", "cse", True),
                                            ("after:fold", "dce", False), ("", "fold", False),
                                            ("after: fold , dce", "dce", True)])
def test_dump_selected(dump, name, want):
    assert dump_selected(dump, name) == want


class _Breaker:
    name = "breaker"

    def run(self, fn, ctx=None):
        fn.body.ops.pop()  # drops func.return
        return True


def test_verify_after_each_pass_names_the_pass():
    with pytest.raises(VerifyError, match="after step 'breaker': func.func 'add_kernel': "
                                          "function body must end with func.return"):
        run_passes(add_kernel(), passes=[_Breaker()], verify=True, dump="")


def test_verify_step_rejects_bad_input():
    fn = add_kernel()
    fn.body.ops.pop()
    with pytest.raises(VerifyError):
        run_passes(fn, dump="")


def test_passes_report_no_change_on_a_second_run():
    fn = run_passes(loop_kernel(nested=True), dump="")
    verify(fn)
    assert not any(p.run(fn) for p in DEFAULT_PASSES)


MODULES = ["printer", "parser", "verifier", "passes", "passes.fold", "passes.cse", "passes.dce",
           "passes.affine_access", "passes.affine_forms", "passes.dot_accumulate", "passes.fuse", "pipeline"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(f"npujit.ir.{name}")
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0 and result.attempted > 0


def test_one_pipeline_list_serves_many_threads():
    """Steps keep no state between runs: threads running one shared list on different
    kernels at once get what a lone run gets."""
    from concurrent.futures import ThreadPoolExecutor

    from npujit.ir.pipeline import run_pipeline
    ctx = CompileContext(spec=ASCEND_910B_LIKE, dump="")
    shared = pipeline(ctx)
    makers = [add_kernel, loop_kernel, lambda: loop_kernel(nested=True)] * 12
    want = [run_pipeline(make(), ctx)["schedule"] for make in makers[:3]]
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)          # switch threads often, so runs interleave
    try:
        with ThreadPoolExecutor(8) as pool:
            got = list(pool.map(lambda make: run_pipeline(make(), ctx, shared)["schedule"],
                                makers))
    finally:
        sys.setswitchinterval(old)
    assert got == want * 12
