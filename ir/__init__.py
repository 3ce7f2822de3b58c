"""The npujit IR: types, ops, builder, printer/parser, verifier and passes."""
from . import types
from .builder import Builder
from .core import Block, Function, Loc, Op, Value
from .ops import INFO, Kind, TypeRuleError, infer_types
from .parser import ParseError, parse_function
from .printer import print_function, print_op
from .verifier import VerifyError, verify

__all__ = ["types", "Builder", "Block", "Function", "Loc", "Op", "Value", "INFO", "Kind",
           "TypeRuleError", "infer_types", "ParseError", "parse_function", "print_function",
           "print_op", "VerifyError", "verify"]
