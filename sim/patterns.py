"""Reference instruction streams: how a correctly synchronised multi-buffered kernel looks.

These are what the scheduler should emit for the two canonical pipelines, and what the
tests and benchmarks use.  The flag protocol is Ascend C's queue protocol written out
(docs/npu-facts.md §A7): ``EnQue`` = ``set_flag(producer, consumer, slot)``, ``DeQue`` =
``wait_flag`` on the consumer, and ``FreeTensor`` = a ``set_flag`` back to the producer
that the producer waits on before it overwrites the slot (slot reuse).  Each slot uses
its own event id, so a 1-bit hardware flag never holds two sets.

Example::

    >>> from npujit.sim.patterns import vector_pipeline
    >>> p = vector_pipeline(n_tiles=4, tile_bytes=4096, stages=2)
    >>> p.core, len(p.instrs)
    ('AIV', 36)
"""
from __future__ import annotations

from .isa import CoreProgram, copy, mmad, set_flag, vec, wait_flag


def vector_pipeline(n_tiles: int, tile_bytes: int, *, op: str = "add", dtype: str = "f16",
                    vec_ops: int = 1, out_bytes: int | None = None, stages: int = 2,
                    inplace: bool = False, name: str = "") -> CoreProgram:
    """GM -> UB (MTE2) -> Vector -> UB -> GM (MTE3) over ``n_tiles`` tiles, ``stages`` slots.

    * ``inplace=False`` (Ascend's usual inQueue/outQueue): an input buffer ``x`` and an
      output buffer ``y``, ``stages`` slots each.  MTE2 reuses ``x[s]`` after Vector freed it;
      Vector reuses ``y[s]`` after MTE3 freed it.  With 2 slots the three pipes overlap and
      a tile costs max(a, b, c) in steady state.
    * ``inplace=True``: one buffer ``x`` that Vector updates in place; MTE2 reuses ``x[s]``
      only after MTE3 stored it.  With 1 slot every tile runs load -> compute -> store
      strictly in turn, N (a + b + c) in total.

    Example::

        >>> sb = vector_pipeline(3, 2048, stages=1, inplace=True)
        >>> [i.kind for i in sb.instrs[:4]]
        ['copy', 'set_flag', 'wait_flag', 'vec']
    """
    if stages < 1:
        raise ValueError(f"stages must be >= 1, got {stages}")
    out_bytes = tile_bytes if out_bytes is None else out_bytes
    elems = tile_bytes // {"f16": 2, "bf16": 2, "f32": 4}.get(dtype, 1)
    out = []
    emit = out.append
    for j in range(n_tiles):
        s = j % stages
        xs = ("x", s)
        ys = xs if inplace else ("y", s)
        reuse = j >= stages                  # slot s held an earlier tile
        again = j + stages < n_tiles         # slot s will hold a later tile
        # MTE2: load tile j into x[s] once its previous user released it.
        if reuse:
            emit(wait_flag("MTE3" if inplace else "VECTOR", "MTE2", s))
        emit(copy("GM_to_UB", tile_bytes, writes=[xs]))
        emit(set_flag("MTE2", "VECTOR", s))
        # VECTOR: compute x[s] -> y[s].
        emit(wait_flag("MTE2", "VECTOR", s))
        if reuse and not inplace:
            emit(wait_flag("MTE3", "VECTOR", s))
        for _ in range(vec_ops):
            emit(vec(op, elems, dtype, reads=[xs], writes=[ys]))
        if again and not inplace:
            emit(set_flag("VECTOR", "MTE2", s))
        emit(set_flag("VECTOR", "MTE3", s))
        # MTE3: store y[s], then release it.
        emit(wait_flag("VECTOR", "MTE3", s))
        emit(copy("UB_to_GM", out_bytes, reads=[ys]))
        if again:
            emit(set_flag("MTE3", "MTE2" if inplace else "VECTOR", s))
    return CoreProgram("AIV", out, name=name)


def cube_pipeline(n_k: int, m: int, n: int, k: int, *, dtype: str = "f16", stages: int = 2,
                  name: str = "") -> CoreProgram:
    """One output tile of a matmul on an AIC: for each of ``n_k`` K-steps load A and B
    (GM -> L1 on MTE2), move them to L0A/L0B (MTE1), Mmad into L0C (CUBE); then FixPipe
    writes L0C to GM.  L1 and L0A/L0B are ``stages``-buffered.

    Example::

        >>> p = cube_pipeline(4, 128, 128, 64)
        >>> sum(i.kind == "mmad" for i in p.instrs)
        4
    """
    size = {"f16": 2, "bf16": 2, "f32": 4, "i8": 1}[dtype]
    a_bytes, b_bytes = m * k * size, k * n * size
    out = []
    emit = out.append
    for j in range(n_k):
        s = j % stages
        reuse = j >= stages
        again = j + stages < n_k
        # MTE2: GM -> L1 (a[s], b[s]) after MTE1 has consumed the previous tile in the slot.
        if reuse:
            emit(wait_flag("MTE1", "MTE2", s))
        emit(copy("GM_to_L1", a_bytes, writes=[("a_l1", s)]))
        emit(copy("GM_to_L1", b_bytes, writes=[("b_l1", s)]))
        emit(set_flag("MTE2", "MTE1", s))
        # MTE1: L1 -> L0A/L0B after the Cube released the L0 slot.
        emit(wait_flag("MTE2", "MTE1", s))
        if reuse:
            emit(wait_flag("CUBE", "MTE1", s))
        emit(copy("L1_to_L0A", a_bytes, reads=[("a_l1", s)], writes=[("a_l0", s)]))
        emit(copy("L1_to_L0B", b_bytes, reads=[("b_l1", s)], writes=[("b_l0", s)]))
        if again:
            emit(set_flag("MTE1", "MTE2", s))
        emit(set_flag("MTE1", "CUBE", s))
        # CUBE: the first step initialises L0C, the later ones accumulate into it.
        emit(wait_flag("MTE1", "CUBE", s))
        acc = [("c_l0c", 0)] if j else []
        emit(mmad(m, n, k, dtype, reads=[("a_l0", s), ("b_l0", s)] + acc, writes=["c_l0c"]))
        if again:
            emit(set_flag("CUBE", "MTE1", s))
    emit(set_flag("CUBE", "FIXP", 0))
    emit(wait_flag("CUBE", "FIXP", 0))
    emit(copy("L0C_to_GM", m * n * 2, reads=["c_l0c"]))
    return CoreProgram("AIC", out, name=name)
