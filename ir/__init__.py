"""The npujit IR: types, ops, builder, printer/parser, verifier and passes.

The names below are imported on first use (npujit/lazy.py): tracing a kernel needs the
builder, not the parser or the scheduler the printer imports.
"""
from npujit.lazy import lazy_exports

__all__ = ["types", "Builder", "Block", "Function", "Loc", "Op", "Value", "INFO", "Kind",
           "TypeRuleError", "infer_types", "ParseError", "parse_function", "print_function",
           "print_op", "VerifyError", "verify"]

_HOME = {"types": "types", "Builder": "builder", "Block": "core", "Function": "core",
         "Loc": "core", "Op": "core", "Value": "core", "INFO": "ops", "Kind": "ops",
         "TypeRuleError": "ops", "infer_types": "ops", "ParseError": "parser",
         "parse_function": "parser", "print_function": "printer", "print_op": "printer",
         "VerifyError": "verifier", "verify": "verifier"}
__getattr__, __dir__ = lazy_exports(__name__, {
    name: f"{__name__}.{module}" + ("" if name == module else f":{name}")
    for name, module in _HOME.items()})
