"""Compile stages of a kernel specialisation, each with a named artifact:

``trace``  run the (loop-rewritten) Python function on proxies -> IR (``ir.Function``)
``pipeline`` the compile pipeline (ir/pipeline.py: verify, fold, CSE, DCE, fuse, then pipes,
           scopes, buffers, flags for the ``spec`` option) -> ``ir`` (optimised IR),
           ``schedule`` (the scheduled IR text) and ``buffers`` (a table); raises
           ``OutOfResources``
``backend`` the backend's compile -> ``run(grid, args)`` and ``backend`` (its source),
           built lazily by the ``CompiledKernel`` (jit/compiled.py) on first use

Example::

    >>> c = compile_specialization(kernel, sigs, constexprs, options)   # doctest: +SKIP
    >>> print(c.artifacts["ir"])                                        # doctest: +SKIP
"""
from __future__ import annotations

from npujit.errors import CompilationError
from npujit.ir import Function, Kind, Loc
from npujit.ir.core import prune_uses
from npujit.ir.pipeline import CompileContext, Schedule, run_pipeline
from npujit.ir.printer import print_function
from npujit.ir.verifier import VerifyError
from npujit.language.core import pointer, tensor
from npujit.language.tracing import TraceContext, traceback_loc, tracing
from npujit.target import SpecError, find_spec

from . import loops as loop_runtime
from .access import stored_arguments
from .ast_rewrite import rewrite_function
from .binder import ir_type
from .compiled import CompiledKernel


def trace(kernel, sigs: tuple, constexprs: dict, debug: bool = False,
          num_stages: int | None = None) -> Function:
    """The kernel's IR for argument signatures ``sigs`` and constexpr values (with the
    ``nl.device_assert`` checks when ``debug``; ``num_stages``: of the loops that do not
    give theirs)."""
    params = kernel.params
    arg_types, arg_names = [], []
    for p, s in zip(params, sigs):
        if p in kernel.constexpr_params or s is None:
            continue
        arg_types.append(ir_type(s))
        arg_names.append(p)
    fn = Function(kernel.name, arg_types, arg_names,
                  attrs={k: v for k, v in sorted(constexprs.items()) if _printable(v)})
    ctx = TraceContext(fn, kernel.name, debug,
                       rewrite=lambda f: rewrite_function(f, loop_runtime), num_stages=num_stages)
    proxies, i = [], 0
    for p, s in zip(params, sigs):
        if p in kernel.constexpr_params:
            proxies.append(constexprs[p])
        elif s is None:
            proxies.append(None)
        else:
            v = fn.args[i]
            i += 1
            proxies.append(pointer(v) if s[0] == "A" else tensor(v))
            if p in kernel.const_params:
                ctx.const_args.add(id(v))
    with tracing(ctx):
        try:
            result = kernel.traced_fn()(*proxies)
        except RecursionError as e:
            raise _recursion_error(e, kernel.name) from None
        except ValueError as e:
            # A value a language function rejects (an axis out of range, say) is a
            # ValueError, as in Triton; reported at the user's line, the ValueError its
            # cause (Triton's CompilationError carries the original error the same way).
            raise CompilationError(str(e), traceback_loc(e.__traceback__), kernel.name) from e
        if result is not None:
            raise CompilationError(f"kernel '{kernel.name}' returned {result!r}; kernels write "
                                   "their results with nl.store and return nothing",
                                   ctx.loc(), kernel.name)
        ctx.builder.create(Kind.RETURN, [], {})
    prune_uses(fn)          # reads by ops the trace made and did not keep
    return fn


def _recursion_error(e: RecursionError, kernel: str) -> CompilationError:
    """Name the user function that called itself without end while the kernel traced:
    the frame of the user's code that repeats most often in the traceback."""
    import collections
    import os
    import traceback

    import npujit.language

    ours = tuple(os.path.dirname(os.path.abspath(f)) + os.sep
                 for f in (__file__, npujit.language.__file__))   # jit/ and the language
    frames = [f for f in traceback.extract_tb(e.__traceback__)
              if not os.path.abspath(f.filename).startswith(ours)]
    if not frames:
        return CompilationError(f"kernel '{kernel}' recursed without end while tracing")
    (file, line, name), _ = collections.Counter(
        (f.filename, f.lineno, f.name) for f in frames).most_common(1)[0]
    return CompilationError(
        f"'{name}' calls itself without end: helpers are inlined when the kernel is traced, "
        "so a recursive call must stop on a Python value (a constexpr depth, say); for a "
        "loop over run-time values use nl.range", Loc(file, line), kernel)


def _printable(v) -> bool:
    return isinstance(v, (int, float, bool, str)) or v is None


def resolve_spec(spec):
    """The NPU spec of the ``spec=`` option: an ``NPUSpec``, a preset name, or None for
    the 910B-like default.

    Example::

        >>> resolve_spec("TINY").name
        'TINY'
    """
    try:
        return find_spec(spec)
    except SpecError as e:
        raise CompilationError(str(e)) from None


def compile_specialization(kernel, sigs: tuple, constexprs: dict,
                           options: dict, global_reads: list | None = None) -> CompiledKernel:
    """Trace, optimise and schedule one specialisation of ``kernel`` (an ``NPUKernel``)
    for ``options`` (with ``backend`` set): the compile pipeline (``ir/pipeline.py``);
    the backend stage is built lazily by the returned ``CompiledKernel``."""
    debug = bool(options.get("debug"))
    if global_reads is None:    # before tracing: an oversized array refuses
        global_reads = kernel.global_reads()
    fn = trace(kernel, sigs, constexprs, debug, options.get("num_stages"))
    artifacts = {"trace": print_function(fn, locs=True)}
    spec = resolve_spec(options.get("spec"))
    # Legality is the schedule's, whatever the backend: OutOfResources raises here.
    ctx = CompileContext(kernel=kernel.name, spec=spec, debug=debug,
                         strided_args=frozenset(p for p, s in zip(kernel.params, sigs)
                                                if s is not None and s[0] == "A" and not s[3]))
    try:
        artifacts.update(run_pipeline(fn, ctx))
    except VerifyError as e:
        # A value computed inside an nl.range body used after it (e.g. appended to a list).
        raise CompilationError(f"the traced kernel is malformed: {e}. A common cause is a "
                               "value computed inside an nl.range loop and used after it "
                               "without being a loop-carried variable", None, kernel.name) from None
    artifacts["buffers"] = Schedule.of(fn, spec).describe()
    stores = {name: (loc.file, loc.line) for name, loc in stored_arguments(fn).items()}
    return CompiledKernel(kernel.signature, sigs, constexprs, options,
                          print_function(fn, locs=True), artifacts, stores, global_reads,
                          fn=fn)
