"""Random well-typed kernels in the user language, drawn by hypothesis.

A *sub-kernel* is one independent piece of work: its own input arrays, runtime sizes and
output arrays, and a body of random ops over one tile frame (a 1-D block of ``B`` lanes or
a 2-D ``R x C`` tile; the grid is ``(2,)`` and each program does one block, masked by the
runtime sizes, so sizes smaller than the block and ``n = 0`` come up).  ``render`` puts a
list of sub-kernels into one ``@npu_kernel`` source (one compile covers them all);
hypothesis shrinks a failing list to the one sub-kernel that fails.

The generator tracks each value's dtype and how exactly the tiers must agree on it:

* ``exact``: bit-for-bit (add, mul, div, sqrt, casts, compares, integer reductions ...);
* ``approx``: a transcendental (exp, log, tanh, erf, gelu ...) may differ by a few ulp, so
  such a value only flows into ops that cannot amplify the error (casts between floats,
  neg/abs, maximum/minimum, where, max/min reductions, sort) and never into a compare, a
  float->int cast or an index (a 1-ulp difference there would flip a bit, not an ulp);
* ``summed``: a float sum/cumsum/dot, whose order is unspecified (docs/semantics.md); its
  input is a loaded array (so the host knows a bound on the terms), and its tolerance is
  scaled by that bound; it flows only into casts, neg/abs and stores.

Example::

    >>> from hypothesis import given
    >>> @given(subkernel_lists())
    ... def test(subs): print(render(subs, "k"))      # doctest: +SKIP
"""
from __future__ import annotations

from dataclasses import dataclass, field

from hypothesis import strategies as st

from npujit.ir import types as T

NL = {T.float32: "nl.float32", T.float16: "nl.float16", T.bfloat16: "nl.bfloat16",
      T.int8: "nl.int8", T.int32: "nl.int32", T.int64: "nl.int64", T.bool_: "nl.bool_"}
FLOATS = (T.float32, T.float16, T.bfloat16)
INTS = (T.int8, T.int32, T.int64)
INPUT_DTYPES = FLOATS + INTS
TRANSCENDENTAL = ("nl.exp({})", "nl.log({})", "nl.rsqrt({})", "nl.sigmoid({})", "nl.tanh({})",
                  "nl.erf({})", "nl.gelu({})", "nl.gelu({}, approximate='tanh')", "nl.silu({})")
EXACT_RANK = {"exact": 0, "approx": 1, "summed": 2}


@dataclass
class Val:
    """A value in the body: its name, dtype, agreement class, and for a plain load of
    input ``origin`` (or a float cast of one) that input's index."""

    name: str
    dtype: T.DType
    status: str = "exact"
    origin: int | None = None
    scale: tuple | None = None       # for "summed": how the host bounds the terms


@dataclass
class Output:
    """An output array: dtype, elements per program, and how the tiers must agree."""

    dtype: T.DType
    per_program: int
    status: str
    scale: tuple | None = None


@dataclass
class SubKernel:
    """One independent generated piece of a batch kernel.  ``lines`` use ``@`` as the
    name prefix that ``render`` fills in."""

    frame: tuple                     # ("1d", B) or ("2d", R, C)
    inputs: list                     # (dtype, other literal or None) per input array
    sizes: dict                      # runtime ints: n (and m for 2-D, t for loops)
    seed: int
    lines: list = field(default_factory=list)
    outputs: list = field(default_factory=list)
    has_bf16_dot: bool = False

    @property
    def tile_numel(self) -> int:
        return self.frame[1] if self.frame[0] == "1d" else self.frame[1] * self.frame[2]

    def params(self) -> list:
        return ([f"@x{i}" for i in range(len(self.inputs))] +
                [f"@o{i}" for i in range(len(self.outputs))] + [f"@{k}" for k in self.sizes])


def _worst(*vals) -> str:
    return max((v.status for v in vals), key=EXACT_RANK.__getitem__)


class _Body:
    """Draws the body of one sub-kernel: a pool of tile-shaped values and the lines."""

    def __init__(self, draw, sub: SubKernel):
        self.draw, self.sub = draw, sub
        self.pool: list[Val] = []
        self.count = 0
        f = sub.frame
        self.shape = (f[1],) if f[0] == "1d" else (f[1], f[2])

    def emit(self, line: str) -> None:
        self.sub.lines.append(line)

    def new(self, expr: str, dtype, status="exact", origin=None, scale=None) -> Val:
        v = Val(f"@v{self.count}", dtype, status, origin, scale)
        self.count += 1
        self.emit(f"{v.name} = {expr}")
        self.pool.append(v)
        return v

    def pick(self, pred=lambda v: True) -> Val | None:
        cands = [v for v in self.pool if pred(v)]
        if not cands:
            return None
        return self.draw(st.sampled_from(cands[::-1]))   # shrinks toward the newest

    # --- frame, loads, stores ------------------------------------------------------------
    def frame(self) -> None:
        f = self.sub.frame
        if f[0] == "1d":
            self.emit(f"@offs = nl.program_id(0) * {f[1]} + nl.arange(0, {f[1]})")
            self.emit("@mask = @offs < @n")
        else:
            self.emit(f"@rows = nl.program_id(0) * {f[1]} + nl.arange(0, {f[1]})")
            self.emit(f"@cols = nl.arange(0, {f[2]})")
            self.emit(f"@offs = @rows[:, None] * {f[2]} + @cols[None, :]")
            self.emit("@mask = (@rows[:, None] < @n) & (nl.expand_dims(@cols, 0) < @m)")
        for i, (dtype, other) in enumerate(self.sub.inputs):
            extra = "" if other is None else f", other={other}"
            self.new(f"nl.load(@x{i} + @offs, mask=@mask{extra})", dtype, origin=i)

    def store(self, v: Val) -> None:
        """A masked store of a tile-shaped value into its own output."""
        k = len(self.sub.outputs)
        self.sub.outputs.append(Output(v.dtype, self.sub.tile_numel, v.status, v.scale))
        self.emit(f"nl.store(@o{k} + @offs, {v.name}, mask=@mask)")

    def store_flat(self, expr: str, shape: tuple, dtype, status="exact", scale=None) -> None:
        """An unmasked store of any-shaped ``expr`` into program pid's slice of an output."""
        numel = 1
        for s in shape:
            numel *= s
        k = len(self.sub.outputs)
        self.sub.outputs.append(Output(dtype, numel, status, scale))
        flat = f"nl.reshape({expr}, ({numel},))" if len(shape) != 1 else expr
        self.emit(f"nl.store(@o{k} + nl.program_id(0) * {numel} + nl.arange(0, {numel}), {flat})")

    # --- helpers -------------------------------------------------------------------------
    def as_dtype(self, v: Val, dtype) -> str:
        """``v`` converted to ``dtype`` by a well-defined cast (callers never ask for a
        float -> int cast; see ``cast``)."""
        return v.name if v.dtype == dtype else f"{v.name}.to({NL[dtype]})"

    def literal(self, dtype) -> str:
        if dtype.is_float:
            return self.draw(st.sampled_from(["2.0", "0.5", "-1.5", "3.0", "1e-3", "-0.0"]))
        return self.draw(st.sampled_from(["1", "3", "-2", "7", "0"]))

    # --- steps ---------------------------------------------------------------------------
    def step(self) -> None:
        kinds = ["unary", "binary", "cmp_where", "cast"] * 3 + ["literal", "minmax"]
        kinds += ["reduce", "reduce", "scan", "sort", "permute", "topk", "loop"]
        if self.sub.frame[0] == "2d":
            kinds += ["dot"]
        getattr(self, "step_" + self.draw(st.sampled_from(kinds)))()

    def step_binary(self) -> None:
        a = self.pick(lambda v: v.status == "exact")
        if a.dtype == T.bool_:
            b = self.pick(lambda v: v.status == "exact" and v.dtype == T.bool_)
            op = self.draw(st.sampled_from(["&", "|", "^"]))
            self.new(f"{a.name} {op} {b.name}", T.bool_)
            return
        if self.draw(st.booleans()):
            # the language's own promotion (f16 with bf16 -> f32, int with float -> float)
            b = self.pick(lambda v: v.status == "exact" and v.dtype != T.bool_)
            d = T.promote(a.dtype, b.dtype)
            ops = ["+", "-", "*", "/"] + (["//"] if d.is_float else ["//", "%", "&", "|", "^"])
            op = self.draw(st.sampled_from(ops))
            self.new(f"{a.name} {op} {b.name}", T.float32 if op == "/" and not d.is_float else d)
            return
        ok = (lambda v: v.status == "exact" and (a.dtype.is_float or not v.dtype.is_float))
        b = self.pick(ok)
        if a.dtype.is_float:
            # no float %: np.mod's floor-modulo is checked with a tolerance, not bit for
            # bit (tests/conformance/table.py, mod_float), and it is discontinuous
            op = self.draw(st.sampled_from(["+", "-", "*", "/", "//"]))
        else:
            op = self.draw(st.sampled_from(["+", "-", "*", "//", "%", "&", "|", "^", "<<", ">>"]))
        self.new(f"{a.name} {op} {self.as_dtype(b, a.dtype)}", a.dtype)

    def step_unary(self) -> None:
        a = self.pick(lambda v: v.status == "exact" and v.dtype != T.bool_)
        what = self.draw(st.sampled_from(["transcendental"] * 3 + ["neg", "abs", "sqrt"]))
        if what == "neg":
            self.new(f"-{a.name}", a.dtype, a.status)
        elif what == "abs":
            self.new(f"nl.abs({a.name})", a.dtype, a.status)
        else:
            dt = a.dtype if a.dtype.is_float else T.float32
            if what == "sqrt":
                self.new(f"nl.sqrt({a.name})", dt)
            else:
                fn = self.draw(st.sampled_from(TRANSCENDENTAL))
                self.new(fn.format(a.name), dt, "approx")

    def step_cmp_where(self) -> None:
        a = self.pick(lambda v: v.status == "exact" and v.dtype != T.bool_)
        b = self.pick(lambda v: v.status == "exact" and v.dtype != T.bool_ and
                      (a.dtype.is_float or not v.dtype.is_float))
        op = self.draw(st.sampled_from(["<", "<=", ">", ">=", "==", "!="]))
        c = self.new(f"{a.name} {op} {self.as_dtype(b, a.dtype)}", T.bool_)
        if self.draw(st.booleans()):
            x = self.pick(lambda v: v.dtype != T.bool_ and v.status != "summed")
            y = self.pick(lambda v: v.status != "summed" and (x.dtype.is_float or
                                                              not v.dtype.is_float))
            self.new(f"nl.where({c.name}, {x.name}, {self.as_dtype(y, x.dtype)})", x.dtype,
                     _worst(x, y))

    def step_cast(self) -> None:
        a = self.pick()
        dst = self.draw(st.sampled_from(FLOATS + INTS + (T.bool_,)))
        if a.dtype.is_float and not dst.is_float:
            if a.status != "exact":
                dst = self.draw(st.sampled_from(FLOATS))
            elif dst != T.bool_:
                # float -> int is unspecified for NaN / out of range (docs/semantics.md)
                self.new(f"nl.where(nl.abs({a.name}) < 100.0, {a.name}, 0.0).to({NL[dst]})",
                         dst)
                return
        origin = a.origin if (a.dtype.is_float and dst.is_float) else None
        self.new(f"{a.name}.to({NL[dst]})", dst, a.status if dst.is_float else "exact", origin,
                 a.scale)

    def step_literal(self) -> None:
        a = self.pick(lambda v: v.status == "exact" and v.dtype != T.bool_)
        op = self.draw(st.sampled_from(["+", "-", "*"]))
        lit = self.literal(a.dtype)
        if self.draw(st.booleans()):
            self.new(f"{a.name} {op} {lit}", a.dtype)
        else:
            self.new(f"{lit} {op} {a.name}", a.dtype)

    def step_minmax(self) -> None:
        a = self.pick(lambda v: v.dtype != T.bool_ and v.status != "summed")
        b = self.pick(lambda v: v.dtype != T.bool_ and v.status != "summed" and
                      (a.dtype.is_float or not v.dtype.is_float))
        fn = self.draw(st.sampled_from(["nl.maximum", "nl.minimum"]))
        self.new(f"{fn}({a.name}, {self.as_dtype(b, a.dtype)})", a.dtype, _worst(a, b))

    def _axis(self) -> int:
        return self.draw(st.integers(0, len(self.shape) - 1))

    def _back(self, expr: str, axis: int) -> str:
        """A reduced tile broadcast back to the frame shape (by broadcast_to, by
        expand_dims, or by keep_dims and a binary op's broadcasting)."""
        how = self.draw(st.sampled_from(["broadcast_to", "keep_dims"]))
        if how == "keep_dims" and expr.endswith(")"):
            zeros = f"nl.zeros({self.shape}, nl.int8)"
            return f"{expr[:-1]}, keep_dims=True) + {zeros}"
        return self._spread(expr, axis)

    def _spread(self, expr: str, axis: int) -> str:
        """A tile reduced along ``axis`` broadcast back by expand_dims + broadcast_to."""
        if len(self.shape) == 1:
            return f"nl.broadcast_to({expr}, {self.shape})"
        return f"nl.broadcast_to(nl.expand_dims({expr}, {axis}), {self.shape})"

    def step_reduce(self) -> None:
        kind = self.draw(st.sampled_from(["sum", "max", "min", "argmax", "argmin", "prod",
                                          "max_with_index"]))
        axis = self._axis()
        if kind == "sum":
            a = self.pick(lambda v: v.status == "exact" and (v.origin is not None
                                                              or not v.dtype.is_float))
            if a.dtype.is_float:
                scale = ("sum", a.origin, self.shape[axis])
                self.new(self._back(f"nl.sum({a.name}, axis={axis})", axis), a.dtype, "summed",
                         scale=scale)
            else:
                dt = T.int64 if a.dtype == T.int64 else T.int32
                self.new(self._back(f"nl.sum({a.name}, axis={axis})", axis), dt)
            return
        if kind == "prod":     # ints only: wraps, so any order gives the same bits
            a = self.pick(lambda v: v.status == "exact" and v.dtype in INTS)
            if a is not None:
                dt = T.int64 if a.dtype == T.int64 else T.int32
                self.new(self._back(f"nl.prod({a.name}, axis={axis})", axis), dt)
            return
        if kind == "max_with_index":
            a = self.pick(lambda v: v.status == "exact" and v.dtype != T.bool_)
            self.emit(f"@m{self.count}, @i{self.count} = nl.max({a.name}, axis={axis}, "
                      "return_indices=True)")
            m, i = f"@m{self.count}", f"@i{self.count}"
            self.count += 1
            self.new(self._spread(m, axis), a.dtype)
            self.new(self._spread(i, axis), T.int32)
            return
        if kind in ("max", "min"):
            a = self.pick(lambda v: v.status != "summed")
            if len(self.shape) == 1 and self.draw(st.booleans()):   # a scalar result
                k = len(self.sub.outputs)
                self.sub.outputs.append(Output(T.int32 if a.dtype == T.bool_ else a.dtype, 1,
                                               a.status))
                self.emit(f"nl.store(@o{k} + nl.program_id(0), nl.{kind}({a.name}, axis=0))")
                return
            self.new(self._back(f"nl.{kind}({a.name}, axis={axis})", axis),
                     T.int32 if a.dtype == T.bool_ else a.dtype, a.status)
            return
        a = self.pick(lambda v: v.status == "exact" and v.dtype != T.bool_)
        self.new(self._back(f"nl.{kind}({a.name}, axis={axis})", axis), T.int32)

    def step_scan(self) -> None:
        axis = self._axis()
        a = self.pick(lambda v: v.status == "exact" and v.dtype != T.bool_ and
                      (v.origin is not None or not v.dtype.is_float))
        if a.dtype.is_float:
            self.new(f"nl.cumsum({a.name}, axis={axis})", a.dtype, "summed",
                     scale=("sum", a.origin, self.shape[axis]))
        else:
            self.new(f"nl.cumsum({a.name}, axis={axis})",
                     T.int64 if a.dtype == T.int64 else T.int32)

    def step_sort(self) -> None:
        a = self.pick(lambda v: v.status != "summed" and v.dtype != T.bool_)
        desc = self.draw(st.booleans())
        self.new(f"nl.sort({a.name}, axis={self._axis()}, descending={desc})", a.dtype,
                 a.status)

    def step_permute(self) -> None:
        a = self.pick()
        if len(self.shape) == 2:
            r, c = self.shape
            expr = f"nl.reshape(nl.trans({a.name}), ({r}, {c}))"
        else:
            b = self.shape[0]
            expr = f"nl.reshape(nl.trans(nl.reshape({a.name}, (2, {b // 2}))), ({b},))"
        self.new(expr, a.dtype, a.status, a.origin, a.scale)

    def step_topk(self) -> None:
        a = self.pick(lambda v: v.status == "exact" and v.dtype != T.bool_)
        size = self.shape[-1]
        k = self.draw(st.integers(1, min(size, 4)))
        kshape = self.shape[:-1] + (k,)
        self.emit(f"@tv{self.count}, @ti{self.count} = nl.topk({a.name}, {k}, axis=-1)")
        self.store_flat(f"@tv{self.count}", kshape, a.dtype)
        self.store_flat(f"@ti{self.count}", kshape, T.int32)
        self.count += 1

    def step_dot(self) -> None:
        src = self.pick(lambda v: v.origin is not None and v.dtype in FLOATS + (T.int8,)
                        and v.status == "exact")
        if src is None:
            return
        other = self.pick(lambda v: v.origin is not None and v.status == "exact" and
                          (v.dtype in FLOATS if src.dtype.is_float else v.dtype == T.int8))
        r = self.shape[0]
        b = self.as_dtype(other, src.dtype)
        self.sub.has_bf16_dot |= src.dtype == T.bfloat16
        expr = f"nl.dot({src.name}, nl.trans({b}))"
        if src.dtype.is_float:
            if self.draw(st.booleans()):
                expr = f"nl.dot({src.name}, nl.trans({b}), nl.full(({r}, {r}), 1.5, nl.float32))"
            scale = ("dot", src.origin, other.origin, self.shape[1])
            out = T.float32
            if self.draw(st.booleans()):      # rounded once from the f32 accumulator
                expr, out = f"{expr[:-1]}, out_dtype=nl.float16)", T.float16
            self.store_flat(expr, (r, r), out, "summed", scale)
        else:
            self.store_flat(expr, (r, r), T.int32)

    def step_loop(self) -> None:
        """An ``nl.range`` loop over a runtime trip count carrying one or two tiles."""
        if "t" in self.sub.sizes:
            return
        self.sub.sizes["t"] = self.draw(st.integers(0, 3))
        carried = [self.pick(lambda v: v.status == "exact" and v.dtype != T.bool_)]
        if self.draw(st.booleans()):
            carried.append(self.pick(lambda v: v.status == "exact" and v.dtype != T.bool_))
        names = []
        for c in carried:
            acc = Val(f"@c{self.count}", c.dtype)
            self.count += 1
            self.emit(f"{acc.name} = {c.name}")
            names.append(acc)
        loop = self.draw(st.sampled_from(["nl.range(0, @t)", "nl.range(@t, 0, -1)",
                                          "nl.range(1, @t + 2, 2)"]))
        self.emit(f"for @it in {loop}:")
        if self.draw(st.booleans()):   # a load inside the loop body
            i = self.draw(st.integers(0, len(self.sub.inputs) - 1))
            self.emit(f"    @w = nl.load(@x{i} + @offs, mask=@mask)")
            inner = Val("@w", self.sub.inputs[i][0])
        else:
            inner = self.pick(lambda v: v.status == "exact" and v.dtype != T.bool_)
        for acc in names:
            ok = inner.dtype.is_float <= acc.dtype.is_float
            u = inner if ok else self.pick(lambda v: v.status == "exact" and v.dtype != T.bool_
                                           and not v.dtype.is_float)
            op = self.draw(st.sampled_from(["+", "*", "-", "max", "iv"]))
            rhs = self.as_dtype(u, acc.dtype) if u is not None else self.literal(acc.dtype)
            if op == "iv":      # the induction variable, a scalar, broadcast
                self.emit(f"    {acc.name} = {acc.name} - @it.to({NL[acc.dtype]})")
            elif op == "max":
                self.emit(f"    {acc.name} = nl.maximum({acc.name}, {rhs})")
            else:
                self.emit(f"    {acc.name} = {acc.name} {op} {rhs}")
        for acc in names:
            self.pool.append(acc)


def _float_other(draw):
    return draw(st.sampled_from([None, "0.0", "1.5", "float('-inf')", "float('nan')"]))


@st.composite
def subkernels(draw) -> SubKernel:
    """One random sub-kernel (frame, inputs, sizes, body, outputs)."""
    if draw(st.booleans()):
        b = draw(st.sampled_from([8, 16, 32, 12]))
        frame, sizes = ("1d", b), {"n": draw(st.integers(0, 2 * b))}
    else:
        r, c = draw(st.sampled_from([2, 4, 3])), draw(st.sampled_from([4, 8, 16, 6]))
        frame = ("2d", r, c)
        sizes = {"n": draw(st.integers(0, 2 * r)), "m": draw(st.integers(0, c))}
    inputs = []
    for _ in range(draw(st.integers(1, 3))):
        dt = draw(st.sampled_from(INPUT_DTYPES))
        other = _float_other(draw) if dt.is_float else draw(st.sampled_from([None, "3", "-1"]))
        inputs.append((dt, other))
    sub = SubKernel(frame, inputs, sizes, draw(st.integers(0, 2**31 - 1)))
    body = _Body(draw, sub)
    body.frame()
    for _ in range(draw(st.integers(1, 8))):
        body.step()
    stored = {body.pool[-1].name}
    body.store(body.pool[-1])
    if draw(st.booleans()):
        v = body.pick()
        if v.name not in stored:
            body.store(v)
    return sub


def subkernel_lists(max_size: int = 6):
    """A batch: a list of sub-kernels that ``render`` compiles as one kernel."""
    return st.lists(subkernels(), min_size=1, max_size=max_size)


def render(subs: list, name: str) -> str:
    """The Python source of one ``@npu_kernel`` named ``name`` doing every sub-kernel."""
    params, body = [], []
    for i, sub in enumerate(subs):
        p = f"s{i}_"
        params += [q.replace("@", p) for q in sub.params()]
        body.append(f"    # sub-kernel {i}: frame {sub.frame}, sizes {sub.sizes}")
        body += ["    " + line.replace("@", p) for line in sub.lines]
    return "\n".join(["import npujit.language as nl", "from npujit import npu_kernel", "", "",
                      "@npu_kernel", f"def {name}({', '.join(params)}):"] + body) + "\n"
