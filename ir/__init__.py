"""The npujit IR: types, ops, builder, printer/parser, verifier and passes."""
from . import types
from .builder import Builder
from .core import Block, Function, Loc, Op, Value
from .ops import INFO, Kind, TypeRuleError, infer_types

__all__ = ["types", "Builder", "Block", "Function", "Loc", "Op", "Value", "INFO", "Kind",
           "TypeRuleError", "infer_types"]
