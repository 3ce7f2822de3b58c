"""Rewrite a kernel's ``if``, ``while``, ``and``/``or``/``not``, ``a if c else b`` and early
``return`` so that conditions on run-time scalars can be traced into ``scf.if`` /
``scf.while`` (``jit/control.py``), while conditions on Python values still run as Python.

Tracing runs the kernel's Python once, so each branch becomes a function the tracer can
run into a region, and the variables a branch assigns flow in and out explicitly::

    if COND:                                  def __npujit_then_N(__npujit_carry):
        x = x + 1                                 (x, y) = __npujit_carry
        y = 2                                     x = x + 1; y = 2
    else:                               ->        return (x, y)
        y = 3                                 def __npujit_else_N(__npujit_carry): ...
                                              (x, y) = __npujit_rt.ir_if(COND, then, else,
                                                  ('x', 'y'), __npujit_rt.carry_in(locals(), ...))

An early ``return`` first moves the statements after its ``if`` into the branch that does
not return, so every ``if`` holding a ``return`` ends its function on both paths
(``return __npujit_rt.ir_if_return(...)``).  ``while COND: BODY`` becomes ``ir_while``
over a condition function and a body function; ``a and b`` becomes
``and_(a, lambda: b)`` (the short circuit stays Python's on Python values), ``not a``
``not_(a)`` and ``a if c else b`` ``ifexp(c, lambda: a, lambda: b)``.  A body with
``break``/``continue`` (or a ``return`` inside a loop) stays plain Python behind
``check_python_cond``, which refuses a run-time condition with a clear error.
Line numbers are kept, so errors and op locations point at the user's source.

Example::

    >>> fdef = ControlRewriter().rewrite(fdef)      # doctest: +SKIP
"""
from __future__ import annotations

import ast
import copy

from .ast_rewrite import PREFIX, RT
from .ast_rewrite import _escaping_jump as escaping_jump
from .ast_rewrite import _assigned_names as assigned_names
from .ast_rewrite import _rt as rt
from .ast_rewrite import _stamp as stamp
from .ast_rewrite import _strs as strs
from .ast_rewrite import _tuple as tuple_of

_CARRY = f"{PREFIX}carry"


def _has_return(stmts) -> bool:
    """Whether a ``return`` is reachable in ``stmts`` through ``if`` statements only."""
    for s in stmts:
        if isinstance(s, ast.Return):
            return True
        if isinstance(s, ast.If) and (_has_return(s.body) or _has_return(s.orelse)):
            return True
    return False


def _terminal(stmts) -> bool:
    """Whether every path through ``stmts`` ends in a ``return``."""
    if not stmts:
        return False
    last = stmts[-1]
    if isinstance(last, ast.Return):
        return True
    return isinstance(last, ast.If) and _terminal(last.body) and _terminal(last.orelse)


def normalize_returns(stmts: list) -> list:
    """``stmts`` where the statements after an ``if`` that may return have moved into its
    branches (so a ``return`` only ever ends a path); code after a ``return`` is dropped."""
    out = []
    for i, s in enumerate(stmts):
        if isinstance(s, ast.Return):
            return out + [s]
        if isinstance(s, ast.If) and _has_return([s]):
            tail = stmts[i + 1:]
            s.body = normalize_returns(s.body + copy.deepcopy(tail))
            s.orelse = normalize_returns(s.orelse + tail)
            return out + [s]
        out.append(s)
    return out


def _thunk(expr: ast.expr) -> ast.Lambda:
    args = ast.arguments(posonlyargs=[], args=[], kwonlyargs=[], kw_defaults=[], defaults=[])
    return ast.Lambda(args, expr)


def _branch_fn(name: str, names: list, body: list, returns: bool) -> ast.FunctionDef:
    """``def name(carry): (names) = carry; BODY; return (names)`` (no final return when the
    body ends in its own)."""
    fn_body = []
    if names:
        fn_body.append(ast.Assign([tuple_of(names, ast.Store)], ast.Name(_CARRY, ast.Load())))
    fn_body += body or [ast.Pass()]
    if not returns:
        fn_body.append(ast.Return(tuple_of(names, ast.Load)))
    args = ast.arguments(posonlyargs=[], args=[ast.arg(_CARRY)], kwonlyargs=[],
                         kw_defaults=[], defaults=[])
    return ast.FunctionDef(name, args, fn_body, [], None)


def _carry_in(names) -> ast.Call:
    return ast.Call(rt("carry_in"), [ast.Call(ast.Name("locals", ast.Load()), [], []),
                                     strs(names)], [])


class ControlRewriter(ast.NodeTransformer):
    """Turns ``if``/``while``/boolean operators/conditional expressions into the calls the
    module doc describes."""

    def __init__(self):
        self.n = 0

    def rewrite(self, fdef: ast.FunctionDef) -> ast.FunctionDef:
        if _has_return(fdef.body) and not _terminal(fdef.body):
            fdef.body = fdef.body + [ast.copy_location(ast.Return(None), fdef.body[-1])]
        if _has_return(fdef.body):
            fdef.body = normalize_returns(fdef.body)
        fdef.body = [self.visit(s) for s in fdef.body]
        fdef.body = [x for s in fdef.body for x in (s if isinstance(s, list) else [s])]
        return fdef

    # nested user functions and lambdas keep plain Python semantics
    def visit_FunctionDef(self, node):
        return node

    visit_AsyncFunctionDef = visit_ClassDef = visit_FunctionDef

    def visit_BoolOp(self, node: ast.BoolOp):
        self.generic_visit(node)
        fn = "and_" if isinstance(node.op, ast.And) else "or_"
        call = ast.Call(rt(fn), [node.values[0]] + [_thunk(v) for v in node.values[1:]], [])
        return ast.copy_location(call, node)

    def visit_UnaryOp(self, node: ast.UnaryOp):
        self.generic_visit(node)
        if not isinstance(node.op, ast.Not):
            return node
        return ast.copy_location(ast.Call(rt("not_"), [node.operand], []), node)

    def visit_IfExp(self, node: ast.IfExp):
        self.generic_visit(node)
        call = ast.Call(rt("ifexp"), [node.test, _thunk(node.body), _thunk(node.orelse)], [])
        return ast.copy_location(call, node)

    def _python_form(self, node, reason: str):
        call = ast.Call(rt("check_python_cond"), [node.test, ast.Constant(reason)], [])
        node.test = ast.copy_location(call, node.test)
        for n in ast.walk(call):
            if "lineno" in n._attributes and not hasattr(n, "lineno"):
                ast.copy_location(n, node.test)
        return node

    def visit_If(self, node: ast.If):
        self.generic_visit(node)
        terminal = _terminal(node.body) and _terminal(node.orelse)
        reason = escaping_jump(node.body + node.orelse)
        if reason == "return" and terminal:
            reason = None           # every path returns: the branch functions return it
        if reason is not None:
            return self._python_form(node, reason)
        self.n += 1
        names = assigned_names(node.body + node.orelse)
        then_fn, else_fn = f"{PREFIX}then_{self.n}", f"{PREFIX}else_{self.n}"
        out = [_branch_fn(then_fn, names, node.body, terminal),
               _branch_fn(else_fn, names, node.orelse, terminal)]
        call = ast.Call(rt("ir_if_return" if terminal else "ir_if"),
                        [node.test, ast.Name(then_fn, ast.Load()), ast.Name(else_fn, ast.Load()),
                         strs(names), _carry_in(names)], [])
        if terminal:
            out.append(ast.Return(call))
        elif names:
            out.append(ast.Assign([tuple_of(names, ast.Store)], call))
        else:
            out.append(ast.Expr(call))
        stamp(out, node, [node.test] + node.body + node.orelse)
        return out

    def visit_While(self, node: ast.While):
        self.generic_visit(node)
        reason = escaping_jump(node.body) or ("else" if node.orelse else None)
        if reason is not None:
            return self._python_form(node, reason)
        self.n += 1
        names = assigned_names(node.body)
        cond_fn, body_fn = f"{PREFIX}cond_{self.n}", f"{PREFIX}loop_{self.n}"
        cond_def = _branch_fn(cond_fn, names, [ast.Return(node.test)], True)
        out = [cond_def, _branch_fn(body_fn, names, node.body, False)]
        call = ast.Call(rt("ir_while"), [ast.Name(cond_fn, ast.Load()),
                                         ast.Name(body_fn, ast.Load()), strs(names),
                                         _carry_in(names)], [])
        out.append(ast.Assign([tuple_of(names, ast.Store)], call) if names else ast.Expr(call))
        stamp(out, node, [node.test] + node.body)
        return out


__all__ = ["ControlRewriter", "normalize_returns", "RT"]
