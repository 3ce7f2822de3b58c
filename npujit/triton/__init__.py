"""Triton's host-side names on npujit, so a Triton kernel file runs after changing its two
import lines (docs/coming-from-triton.md)::

    import npujit.triton as triton
    import npujit.triton.language as tl

    @triton.jit
    def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) +
                 tl.load(y_ptr + offs, mask=mask), mask=mask)

    add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024, num_warps=4)

``triton.jit`` makes kernels and the device functions they call (one decorator for both,
as in Triton); the GPU launch options ``num_warps``, ``num_ctas``, ``num_stages`` and
``maxnreg`` are accepted and ignored (a program runs on one AI core; pipelining depth is
per loop, ``tl.range(..., num_stages=)``).  ``triton.jit(repr=fn)`` names the compiled
kernel ``fn(specialization)`` (npujit/triton/specialization.py).
"""
from __future__ import annotations

from npujit.errors import CompilationError, NPUJitError, OutOfResources
from npujit.host import cdiv, next_power_of_2
from npujit.jit.binder import reinterpret
from npujit.jit.kernel import NPUKernel
from npujit.language.inline import inline
from npujit.language.tracing import active

from . import language, testing
from .specialization import Specialization

TritonError = NPUJitError

# Launch options that mean something on a GPU and nothing on the NPU (docs/coming-from-triton.md)
IGNORED_LAUNCH_OPTIONS = frozenset({"num_warps", "num_ctas", "num_stages", "maxnreg"})
# Decorator options of triton.jit that only steer Triton's GPU compiler
_IGNORED_JIT_OPTIONS = frozenset({"do_not_specialize", "do_not_specialize_on_alignment",
                                  "noinline", "launch_metadata"})


class JITFunction(NPUKernel):
    """A ``@triton.jit`` function: launched with a grid it is a kernel; called from inside a
    kernel it is a device function, inlined like ``@nl.inline`` helpers.  ``repr``, when
    given, names the compiled kernel a launch or ``warmup`` returns:
    ``repr(Specialization)`` (a launch then binds its arguments once more, to name it)."""

    def __init__(self, fn, repr=None, **options):
        super().__init__(fn, **options)
        self._device_fn = inline(fn)
        self.repr = repr

    def __call__(self, *args, **kwargs):
        if active() is None:
            return super().__call__(*args, **kwargs)
        return self._device_fn(*args, **kwargs)

    def with_options(self, **options) -> "JITFunction":
        k = super().with_options(**options)
        k.repr = self.repr
        return k

    def run(self, grid, args, kwargs):
        kwargs = self._launch_kwargs(kwargs)
        return self._named(super().run(grid, args, kwargs), args, kwargs)

    def warmup(self, *args, grid, **kwargs):
        """``kernel.warmup`` (compile, do not run) with Triton's GPU launch options dropped;
        the ``CompiledKernel`` is named by ``repr`` when the decorator gave one."""
        kwargs = self._launch_kwargs(kwargs)
        return self._named(super().warmup(*args, grid=grid, **kwargs), args, kwargs)

    def _named(self, compiled, args, kwargs):
        """``compiled`` under the name ``repr`` gives this launch's specialisation."""
        if self.repr is None or compiled is None:
            return compiled
        bound = self.signature.bind(args, kwargs)
        name = self.repr(Specialization.of(self, compiled.sigs, bound))
        return compiled if name == compiled.name else compiled.renamed(str(name))

    def simulate(self, *args, grid, **kwargs):
        """``kernel.simulate`` (NPU cycles) with Triton's GPU launch options dropped."""
        return super().simulate(*args, grid=grid, **self._launch_kwargs(kwargs))

    def _launch_kwargs(self, kwargs: dict) -> dict:
        """``kwargs`` without the GPU launch options the NPU ignores, but for those the
        kernel has a parameter of that name (Triton's softmax tutorial takes
        ``num_stages: tl.constexpr``): they bind the parameter.  ``num_warps`` is checked
        as Triton checks it (a power of 2), so a launch that Triton refuses is refused here."""
        warps = kwargs.get("num_warps")
        if warps is not None and "num_warps" not in self.params:
            assert isinstance(warps, int) and warps > 0 and not warps & (warps - 1), \
                f"num_warps must be a power of 2, got {warps!r}"
        if kwargs and not IGNORED_LAUNCH_OPTIONS.isdisjoint(kwargs):
            return {k: v for k, v in kwargs.items()
                    if k not in IGNORED_LAUNCH_OPTIONS or k in self.params}
        return kwargs


def jit(fn=None, **options):
    """Triton's decorator: a kernel (``k[grid](...)``) that is also a device function.

    Triton's GPU-only options (``do_not_specialize``, ``noinline``...) are accepted and
    ignored; ``debug=True`` is npujit's debug mode (``device_assert`` runs, as Triton's
    ``debug=True`` makes it; every lane's offset is checked too), ``debug=False`` or None
    leaves the default (``NPUJIT_DEBUG``); ``repr=fn`` names the compiled kernels (``fn``
    gets a ``Specialization``); npujit's own (``backend=``, ``spec=``...) pass through.

    Example::

        @triton.jit
        def twice(x):
            return x * 2
    """
    ours = {k: v for k, v in options.items() if k not in _IGNORED_JIT_OPTIONS}
    if not ours.get("debug"):
        ours.pop("debug", None)
    if fn is None:
        return lambda f: JITFunction(f, **ours)
    return JITFunction(fn, **ours)


from .tuning import Config, autotune, heuristics  # noqa: E402

__all__ = ["jit", "JITFunction", "cdiv", "next_power_of_2", "reinterpret", "Config", "autotune",
           "heuristics", "TritonError", "CompilationError", "OutOfResources", "language",
           "testing", "IGNORED_LAUNCH_OPTIONS", "Specialization"]
