"""Rewrite a kernel's ``for`` loops so ``nl.range`` loops can be traced into ``scf.for``.

Tracing runs the kernel's Python once.  A Python ``for`` would run the body once per trip,
and rebinding ``acc = acc + ...`` would be invisible to the tracer.  So each loop

    for k in ITER:
        BODY

becomes

    __npujit_it_N = ITER                        # Python ``range(...)`` means ``nl.range``
    if __npujit_rt.is_ir_loop(__npujit_it_N):
        def __npujit_body_N(k, __npujit_carry):
            (a, acc) = __npujit_carry
            BODY
            return (a, acc)
        (a, acc) = __npujit_rt.ir_for(__npujit_it_N, __npujit_body_N, ('a', 'acc'),
                                      __npujit_rt.carry_in(locals(), ('a', 'acc')))
    else:
        for k in __npujit_it_N:                 # static_range, lists: plain Python
            BODY

where ``(a, acc)`` are the names the body assigns.  Bodies with ``break``, ``continue`` or
``return`` keep only the Python loop (an IR loop there is a clear error at run time).
Line numbers are kept, so errors and op locations point at the user's source.

Example::

    >>> fn2 = rewrite_function(my_kernel)      # doctest: +SKIP
"""
from __future__ import annotations

import ast
import inspect
import textwrap
import types

from npujit.errors import CompilationError
from npujit.pyast import AST_LOCK
from npujit.ir import Loc

RT = "__npujit_rt"
PREFIX = "__npujit_"


def _assigned_names(stmts) -> list[str]:
    """Names bound by ``stmts`` in their own scope, in first-seen order."""
    seen: dict[str, None] = {}

    class V(ast.NodeVisitor):
        def visit_Name(self, node):
            if isinstance(node.ctx, (ast.Store, ast.Del)):
                seen.setdefault(node.id, None)

        def visit_FunctionDef(self, node):
            seen.setdefault(node.name, None)   # the def binds its name; its body is its own

        visit_AsyncFunctionDef = visit_FunctionDef

        def visit_ClassDef(self, node):
            seen.setdefault(node.name, None)

        def visit_Lambda(self, node):
            pass

        def visit_ListComp(self, node):
            pass

        visit_SetComp = visit_DictComp = visit_GeneratorExp = visit_ListComp

        def visit_Import(self, node):
            for a in node.names:
                seen.setdefault((a.asname or a.name).split(".")[0], None)

        visit_ImportFrom = visit_Import

    for s in stmts:
        V().visit(s)
    return [n for n in seen if not n.startswith(PREFIX)]


def _escaping_jump(stmts) -> str | None:
    """The first break/continue/return/yield that would leave a loop body function."""

    class V(ast.NodeVisitor):
        found = None

        def generic_visit(self, node):
            if self.found is None:
                super().generic_visit(node)

        def visit_Break(self, node):
            self.found = self.found or "break"

        def visit_Continue(self, node):
            self.found = self.found or "continue"

        def visit_Return(self, node):
            self.found = self.found or "return"

        def visit_Yield(self, node):
            self.found = self.found or "yield"

        visit_YieldFrom = visit_Yield

        def visit_For(self, node):   # break/continue inside a nested loop stay there
            inner = _escaping_jump(node.body + node.orelse)
            if inner in ("return", "yield"):
                self.found = self.found or inner

        visit_While = visit_AsyncFor = visit_For

        def visit_FunctionDef(self, node):
            pass

        visit_AsyncFunctionDef = visit_Lambda = visit_ClassDef = visit_FunctionDef

    v = V()
    for s in stmts:
        v.visit(s)
    return v.found


def _stamp(stmts, node, user_parts=None) -> None:
    """Give every generated node the statement's line (one line, so tracebacks and op
    locations name the ``for``/``if``/``while`` header, not the end of the body); the
    user's own nodes (``user_parts``; a ``for``'s body, iterable and target by default)
    keep theirs."""
    if user_parts is None:
        user_parts = node.body + node.orelse + [node.iter, node.target]
    keep = {id(n) for part in user_parts for n in ast.walk(part)}
    for s in stmts:
        for n in ast.walk(s):
            if id(n) in keep or not hasattr(n, "_attributes") or "lineno" not in n._attributes:
                continue
            n.lineno = n.end_lineno = node.lineno
            n.col_offset = node.col_offset
            n.end_col_offset = node.col_offset + 3


def _rt(attr: str) -> ast.expr:
    return ast.Attribute(value=ast.Name(RT, ast.Load()), attr=attr, ctx=ast.Load())


def _tuple(names, ctx) -> ast.Tuple:
    return ast.Tuple([ast.Name(n, ctx()) for n in names], ctx())


def _strs(names) -> ast.Tuple:
    return ast.Tuple([ast.Constant(n) for n in names], ast.Load())


class LoopRewriter(ast.NodeTransformer):
    """Turns every ``for`` statement into the IR-loop-or-Python-loop form above."""

    def __init__(self):
        self.n = 0

    def visit_For(self, node: ast.For):
        self.generic_visit(node)       # inner loops first
        self.n += 1
        it = f"{PREFIX}it_{self.n}"
        iter_expr = node.iter
        if isinstance(iter_expr, ast.Call) and isinstance(iter_expr.func, ast.Name) \
                and iter_expr.func.id == "range":
            iter_expr = ast.Call(_rt("range"), iter_expr.args, iter_expr.keywords)
        out = [ast.Assign([ast.Name(it, ast.Store())], iter_expr)]
        py_loop = ast.For(node.target, ast.Name(it, ast.Load()), node.body, node.orelse,
                          getattr(node, "type_comment", None))
        jump = _escaping_jump(node.body)
        reason = jump or ("else" if node.orelse else None) \
            or (None if isinstance(node.target, ast.Name) else "target")
        if reason:
            check = ast.Expr(ast.Call(_rt("check_python_loop"),
                                      [ast.Name(it, ast.Load()), ast.Constant(reason)], []))
            out += [check, py_loop]
        else:
            out.append(self._ir_branch(node, it, py_loop))
        _stamp(out, node)
        return out

    def _ir_branch(self, node: ast.For, it: str, py_loop: ast.For) -> ast.If:
        names = [n for n in _assigned_names(node.body) if n != node.target.id]
        body_fn = f"{PREFIX}body_{self.n}"
        carry = f"{PREFIX}carry"
        fn_body = []
        if names:
            fn_body.append(ast.Assign([_tuple(names, ast.Store)], ast.Name(carry, ast.Load())))
        fn_body += node.body
        fn_body.append(ast.Return(_tuple(names, ast.Load)))
        args = ast.arguments(posonlyargs=[], args=[ast.arg(node.target.id), ast.arg(carry)],
                             kwonlyargs=[], kw_defaults=[], defaults=[])
        fdef = ast.FunctionDef(body_fn, args, fn_body, [], None)
        call = ast.Call(_rt("ir_for"), [
            ast.Name(it, ast.Load()), ast.Name(body_fn, ast.Load()), _strs(names),
            ast.Call(_rt("carry_in"), [ast.Call(ast.Name("locals", ast.Load()), [], []),
                                       _strs(names)], [])], [])
        assign = ast.Assign([_tuple(names, ast.Store)], call) if names else ast.Expr(call)
        test = ast.Call(_rt("is_ir_loop"), [ast.Name(it, ast.Load())], [])
        return ast.If(test, [fdef, assign], [py_loop])


# Python statements a kernel (or an @nl.inline helper) cannot use, and what to do instead.
_UNSUPPORTED = {
    ast.Try: "'try' is not supported in a kernel: nothing raises on the device at run time. "
             "Check shapes and constants with nl.static_assert, and guard accesses with a mask",
    ast.With: "'with' is not supported in a kernel: a context manager runs on the host. "
              "Move it around the launch, outside the kernel",
    ast.Yield: "a kernel cannot be a generator ('yield'): it writes its results with "
               "nl.store and returns nothing",
    ast.Global: "'global' is not supported in a kernel: a kernel cannot assign module "
                "globals. Pass the value as an argument (an nl.constexpr if it is a constant)",
    ast.AsyncFunctionDef: "async functions are not supported in a kernel",
}
_UNSUPPORTED[ast.TryStar] = _UNSUPPORTED[ast.Try]
_UNSUPPORTED[ast.YieldFrom] = _UNSUPPORTED[ast.Yield]
_UNSUPPORTED[ast.Nonlocal] = _UNSUPPORTED[ast.Global].replace("'global'", "'nonlocal'")
_UNSUPPORTED[ast.AsyncWith] = _UNSUPPORTED[ast.AsyncFor] = _UNSUPPORTED[ast.Await] = \
    _UNSUPPORTED[ast.AsyncFunctionDef]


class LiteralAttributes(ast.NodeTransformer):
    """``x.dtype`` and ``x.to`` read through ``__npujit_rt.literal_attr``, so a Python
    number has them as Triton's constexprs do (``value = 1; value.dtype``)."""

    def visit_Attribute(self, node: ast.Attribute):
        self.generic_visit(node)
        if node.attr in ("dtype", "to") and isinstance(node.ctx, ast.Load):
            return ast.copy_location(
                ast.Call(_rt("literal_attr"), [node.value, ast.Constant(node.attr)], []), node)
        return node


def _reject_unsupported(fdef: ast.FunctionDef, filename: str) -> None:
    """A CompilationError at the first statement of ``fdef``'s own body (nested plain
    ``def``s and lambdas are the user's business) that a kernel cannot run."""
    def visit(node):
        why = _UNSUPPORTED.get(type(node))
        if why is not None:
            raise CompilationError(why, Loc(filename, node.lineno), fdef.name)
        for child in ast.iter_child_nodes(node):
            if not isinstance(child, (ast.FunctionDef, ast.Lambda, ast.ClassDef)):
                visit(child)

    for stmt in fdef.body:
        visit(stmt)


def rewrite_function(fn: types.FunctionType, runtime) -> types.FunctionType:
    """``fn`` with its loops rewritten; ``runtime`` is bound to the name ``__npujit_rt``.

    Globals stay ``fn``'s own module globals (live); closure values are taken as they are now.
    """
    try:
        src = textwrap.dedent(inspect.getsource(fn))
    except (OSError, TypeError) as e:
        raise TypeError(f"npujit needs the source of '{fn.__name__}' to compile it "
                        f"(defined in a file, not typed at an interactive prompt): {e}") from None
    with AST_LOCK:
        tree = ast.parse(src)
    fdef = tree.body[0]
    if not isinstance(fdef, (ast.FunctionDef,)):
        raise TypeError(f"@npu_kernel must decorate a plain function, got {type(fdef).__name__}")
    fdef.decorator_list = []
    ast.increment_lineno(tree, fn.__code__.co_firstlineno - 1)
    _reject_unsupported(fdef, fn.__code__.co_filename)
    from .ast_control import ControlRewriter     # it builds on this module's helpers
    fdef = ControlRewriter().rewrite(fdef)
    fdef = LoopRewriter().visit(fdef)
    fdef = LiteralAttributes().visit(fdef)
    freevars = list(fn.__code__.co_freevars)
    # builtin min/max (unless the module defines its own) take traced values too: the
    # factory's parameters of those names become what the kernel's code reads
    builtins_ = [n for n in ("min", "max") if n not in fn.__globals__ and n not in freevars]
    factory = ast.FunctionDef(
        f"{PREFIX}factory",
        ast.arguments(posonlyargs=[], args=[ast.arg(a) for a in freevars + [RT] + builtins_],
                      kwonlyargs=[],
                      kw_defaults=[], defaults=[]),
        [fdef, ast.Return(ast.Name(fdef.name, ast.Load()))], [], None)
    ast.copy_location(factory, fdef)
    module = ast.Module([factory], type_ignores=[])
    ast.fix_missing_locations(module)
    with AST_LOCK:
        code = compile(module, fn.__code__.co_filename, "exec")
    factory_code = next(c for c in code.co_consts if isinstance(c, types.CodeType))
    make = types.FunctionType(factory_code, fn.__globals__)
    cells = []
    for name, cell in zip(freevars, fn.__closure__ or ()):
        try:
            cells.append(cell.cell_contents)
        except ValueError:
            raise TypeError(f"'{fn.__name__}' uses '{name}' from an enclosing function before "
                            "it is assigned there") from None
    new = make(*cells, runtime, *(getattr(runtime, f"builtin_{n}") for n in builtins_))
    new.__defaults__ = fn.__defaults__
    new.__kwdefaults__ = fn.__kwdefaults__
    return new
