"""Fractal geometry of Cube operands by dtype, and the L1 layout and L1 -> L0B load of a
4-byte B (docs/ascendc.md, "f32 operands").

A fractal is 512 B: 16 rows of C0 = 32 B / itemsize elements, 16 x 16 for f16/bf16 and
16 x 8 for f32.  A's and a transposed B's NZ fractals in L1 reach L0A/L0B with ``LoadData``
as they are, whatever C0.  A row-major B must be transposed on the way to L0B: for 2-byte
types ``LoadData``'s ``ifTranspose`` transposes each 16 x 16 fractal; for 4-byte types only
``LoadDataWithTranspose`` transposes, and it works on 16 x 16 squares made of two 16 x 8
fractals that follow each other in L1.  In the usual NZ layout the fractals that follow
each other run down K, so a 4-byte B is copied into L1 in blocks of 16 rows of K (each
block an NZ tile of 16 rows: its 16 x 8 fractals follow each other across N), and each
block's squares are transposed into the ZN layout of L0B, two fractal rows of K at a time.
"""
from __future__ import annotations

FRACTAL = 16       # rows of a fractal (M0 = N0 = 16); K0 is C0


def c0(dtype) -> int:
    """Elements of a fractal row: 16 for 2-byte types, 8 for 4-byte ones."""
    return 32 // dtype.itemsize


def fractal_elems(dtype) -> int:
    """Elements of one 512-byte fractal."""
    return 512 // dtype.itemsize


def in_k_blocks(dtype, side: str, transposed) -> bool:
    """Whether a Cube operand is held in L1 as blocks of 16 rows of K (a row-major 4-byte
    B, which ``LoadDataWithTranspose`` reads as 16 x 16 squares)."""
    return dtype.itemsize == 4 and side == "B1" and transposed is False


class F32CubeLowering:
    """Mixin of ``KernelWriter``: the 4-byte B's copies into L1 and loads into L0B."""

    def copy_k_blocks(self, tile: str, gm_at, n_rows: str, n_cols: str,
                      cols_padded: int, src_stride: str, hint: str) -> None:
        """One ND -> NZ copy per 16 rows of K, block ``kb`` at element ``kb * 16 *
        cols_padded`` of the L1 tile (``gm_at(first_row)``: the GM element of a row)."""
        params = self.fresh(hint + "_nd2nz")
        self.line(f"AscendC::Nd2NzParams {params};   // 16 ND rows of K in GM -> one block of NZ fractals in L1")
        self.line(f"{params}.dValue = {n_cols};")
        self.line(f"{params}.srcDValue = {src_stride};")
        self.line(f"{params}.dstNzC0Stride = {FRACTAL};")
        self.helpers.add("clamp")
        self.line(f"for (uint32_t kb = 0; kb * {FRACTAL} < {n_rows}; ++kb) {{   "
                  "// LoadDataWithTranspose reads 16 x 16 squares of a block")
        with self.indented():
            self.line(f"{params}.nValue = LanesInBounds({n_rows} - kb * {FRACTAL}, {FRACTAL});")
            self.line(f"AscendC::DataCopy({tile}[kb * {FRACTAL * cols_padded}], "
                      f"{gm_at(f'kb * {FRACTAL}')}, {params});")
        self.line("}")

    def load_squares(self, dst: str, src: str, k_blocks: int, block: str, n1: int) -> None:
        """``k_blocks`` LoadDataWithTranspose calls, L1 -> L0B: call ``i`` takes the ``n1``
        squares of L1 block ``block`` (a C++ expression in ``i``), each transposed into
        two 16 x 8 fractals: fractal row ``2 i`` of K in ZN (``dstGap`` 0) and row
        ``2 i + 1`` (``dstFracGap`` ``n1 - 1`` fractals further)."""
        self.line(f"for (uint16_t i = 0; i < {k_blocks}; ++i) {{")
        with self.indented():
            self.line("AscendC::LoadData2dTransposeParams load;")
            at = block if block.isidentifier() else f"({block})"
            self.line(f"load.startIndex = {at} * {n1};")
            self.line(f"load.repeatTimes = {n1};")
            self.line("load.srcStride = 1;")
            self.line("load.dstGap = 0;")
            self.line(f"load.dstFracGap = {n1 - 1};")
            self.line(f"AscendC::LoadDataWithTranspose({dst}[i * {2 * n1 * 128}], {src}, load);")
        self.line("}")
