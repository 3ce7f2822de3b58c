"""``FILE::KERNEL``: finding a kernel on the command line, and its example arguments.

``FILE`` is a path to a Python file (``kernels/softmax.py``) or a dotted module name
(``npujit.kernels.softmax``); ``KERNEL`` is the name of an ``@npu_kernel`` in it.

The example-arguments convention: the module defines ::

    def example_args(kernel, shape=None, dtype=None):
        ...
        return grid, args, kwargs              # or (grid, args, kwargs, reference)

``kernel`` is the kernel's name (one function can serve every kernel of the module);
``shape`` (a tuple of ints) and ``dtype`` (a numpy dtype; bfloat16 is ml_dtypes') come from the
``--shape 64x128`` / ``--dtype float16`` flags and are passed only when given, so a function
without those parameters rejects them with a clear error.  ``reference``, if returned, is a
numpy function of the same arguments returning the expected outputs, as
``npujit.testing.check_kernel`` takes it.

Example::

    >>> kernel, module = load_target("npujit.kernels.softmax::softmax_kernel")
    >>> kernel.name
    'softmax_kernel'
    >>> grid, args, kwargs, reference = example_launch(module, kernel, shape=(4, 100))
    >>> grid, kwargs
    ((4,), {'BLOCK': 128})
"""
from __future__ import annotations

import hashlib
import importlib
import importlib.util
import inspect
import os
import sys


class UsageError(Exception):
    """The command line is wrong (exit code 2); the message says what to change."""


def split_target(text: str) -> tuple[str, str]:
    """``"FILE::KERNEL"`` -> ``(FILE, KERNEL)``.

    Example::

        >>> split_target("kernels/matmul.py::matmul_kernel")
        ('kernels/matmul.py', 'matmul_kernel')
    """
    if "::" not in text:
        raise UsageError(f"expected FILE::KERNEL (e.g. kernels/softmax.py::softmax_kernel), "
                         f"got {text!r}")
    path, name = text.rsplit("::", 1)
    if not path or not name.isidentifier():
        raise UsageError(f"expected FILE::KERNEL with KERNEL a Python name, got {text!r}")
    return path, name


def load_module(ref: str):
    """Import a Python file by path, or a module by dotted name."""
    if ref.endswith(".py") or os.sep in ref or os.path.exists(ref):
        path = os.path.abspath(ref)
        if not os.path.isfile(path):
            raise UsageError(f"no such file: {ref}")
        # one module per file path, so two files of the same name do not collide
        stem = os.path.splitext(os.path.basename(path))[0]
        name = f"npujit_cli_{stem}_{hashlib.sha256(path.encode()).hexdigest()[:8]}"
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.path.insert(0, os.path.dirname(path))   # so the file can import its neighbours
        try:
            sys.modules[name] = module
            spec.loader.exec_module(module)
        finally:
            sys.path.remove(os.path.dirname(path))
        return module
    try:
        return importlib.import_module(ref)
    except ModuleNotFoundError as e:
        if e.name and ref.startswith(e.name):
            raise UsageError(f"no such file or module: {ref}") from None
        raise


def load_target(text: str):
    """The ``@npu_kernel`` named by ``FILE::KERNEL`` and its module."""
    from npujit.jit.kernel import NPUKernel
    ref, name = split_target(text)
    module = load_module(ref)
    obj = getattr(module, name, None)
    if obj is None:
        kernels = [k for k, v in vars(module).items() if isinstance(v, NPUKernel)]
        raise UsageError(f"{ref} has no '{name}'; its kernels: {', '.join(kernels) or 'none'}")
    if not isinstance(obj, NPUKernel):
        raise UsageError(f"'{name}' in {ref} is a {type(obj).__name__}, not an @npu_kernel")
    return obj, module


def parse_shape(text: str) -> tuple:
    """``"64x128"`` or ``"64,128"`` -> ``(64, 128)``.

    Example::

        >>> parse_shape("64x128")
        (64, 128)
    """
    try:
        shape = tuple(int(s) for s in text.replace(",", "x").split("x") if s.strip())
    except ValueError:
        shape = ()
    if not shape or any(s <= 0 for s in shape):
        raise UsageError(f"--shape takes positive ints like 1024 or 64x128, got {text!r}")
    return shape


def example_launch(module, kernel, shape=None, dtype=None):
    """``(grid, args, kwargs, reference or None)`` from the module's ``example_args``."""
    fn = getattr(module, "example_args", None)
    where = getattr(module, "__file__", module.__name__)
    if fn is None:
        raise UsageError(f"{where} defines no example_args(kernel, shape=None, dtype=None) "
                         f"returning (grid, args, kwargs) for '{kernel.name}'; add one "
                         "(docs/getting-started.md, 'Run it from the command line')")
    extra = {k: v for k, v in (("shape", shape), ("dtype", dtype)) if v is not None}
    params = inspect.signature(fn).parameters
    for k in extra:
        if k not in params:
            raise UsageError(f"example_args in {where} takes no '{k}', so --{k} cannot be "
                             "used with this kernel")
    try:
        got = fn(kernel.name, **extra)
    except (KeyError, ValueError) as e:
        raise UsageError(f"example_args in {where} for '{kernel.name}': {e}") from None
    if not isinstance(got, tuple) or len(got) not in (3, 4):
        raise UsageError(f"example_args in {where} must return (grid, args, kwargs) or "
                         f"(grid, args, kwargs, reference), got {type(got).__name__}")
    grid, args, kwargs = got[:3]
    return grid, list(args), dict(kwargs), (got[3] if len(got) == 4 else None)


def add_target_arguments(parser) -> None:
    """The arguments every kernel-taking subcommand shares."""
    parser.add_argument("target", metavar="FILE::KERNEL",
                        help="a Python file or module and the @npu_kernel in it")
    parser.add_argument("--shape", type=str, default=None,
                        help="passed to the module's example_args, e.g. 1024 or 64x128")
    parser.add_argument("--dtype", type=str, default=None,
                        help="passed to the module's example_args, e.g. float16")


def resolve(args):
    """``(kernel, module, grid, launch args, kwargs, reference)`` for parsed ``args``."""
    kernel, module = load_target(args.target)
    shape = parse_shape(args.shape) if args.shape else None
    dtype = None
    if args.dtype:
        from npujit.testing.inputs import as_dtype
        try:
            dtype = as_dtype(args.dtype)
        except TypeError:
            raise UsageError(f"--dtype takes a dtype name such as float32, float16, "
                             f"bfloat16 or int32, got {args.dtype!r}") from None
    grid, largs, kwargs, reference = example_launch(module, kernel, shape, dtype)
    return kernel, module, grid, largs, kwargs, reference
