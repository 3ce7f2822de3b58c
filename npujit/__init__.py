"""npujit: a Triton-style JIT compiler for a simulated Ascend-like NPU."""
