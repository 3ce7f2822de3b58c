"""Kernels written the way Triton users write them, run through ``npujit.triton``.

Each module is a Triton kernel file whose only change is its two import lines
(``import npujit.triton as triton``, ``import npujit.triton.language as tl``), with the
host function a Triton user would write next to it (numpy arrays instead of torch tensors):

- ``vector_add``: ``add(x, y)``, one masked block per program, the grid from ``meta``;
- ``softmax``: ``softmax(x)``, Triton's fused row softmax, programs striding over rows;
- ``matmul``: ``matmul(a, b, activation="")``, pointer tiles advanced along K, grouped
  program ordering for L2 reuse, an optional ``@triton.jit`` activation;
- ``layernorm``: ``layer_norm(x, weight, bias, eps)``, the forward pass with the mean and
  1/std of each row stored;
- ``moe_router``: ``route(x, w_gate, top_k)``, a Mixture-of-Experts router (the gate
  matmul, top-k by repeated argmax, softmax over the chosen logits) in one kernel.

tests/triton/test_gallery.py runs each on the reference and numba tiers against numpy and
through ``kernel.simulate`` on the 910B-like part; docs/coming-from-triton.md lists what
the simulator says of them.
"""
