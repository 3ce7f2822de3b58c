"""Small kernels the schedule tests need beyond the bundled ones (the pipelined streaming
add is kernels/elementwise.add_stream_kernel): one whose trip count is read from GM, and
one with more loads than a part has event ids."""
import npujit.language as nl
from npujit import npu_kernel


@npu_kernel
def counted_scale_kernel(x_ptr, out_ptr, counts_ptr, BLOCK: nl.constexpr):
    # Like an MoE expert: how many tiles this program works on is data in GM.
    pid = nl.program_id(0)
    count = nl.load(counts_ptr + pid)
    for t in nl.range(0, count, 1, num_stages=2):
        offs = (pid * 64 + t) * BLOCK + nl.arange(0, BLOCK)
        nl.store(out_ptr + offs, nl.load(x_ptr + offs) * 2.0)


@npu_kernel
def many_sums_kernel(x_ptr, out_ptr, BLOCK: nl.constexpr):
    # Nine loads each read by its own reduction: nine MTE2 -> V flags, more than the
    # 910-like part's four event ids.
    offs = nl.arange(0, BLOCK)
    total = nl.sum(nl.load(x_ptr + offs), axis=0)
    for i in nl.static_range(1, 9):
        total = total + nl.sum(nl.load(x_ptr + i * BLOCK + offs), axis=0)
    nl.store(out_ptr + nl.arange(0, 1), nl.reshape(total, (1,)))
