"""Mixture-of-Experts operators: the fused router, dispatch, the grouped-GEMM expert FFN,
combine, the fused layer and the unfused baseline, with numpy references
(``reference``).  The public face is ``npujit.moe``.
"""
