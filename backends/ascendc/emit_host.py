"""The host side of an emitted kernel: the tiling header (a POD struct of the run-time
scalars and the grid), a host launcher for CANN (ACL allocation and copies, the
``<<<blockDim, nullptr, stream>>>`` launch), a CMakeLists.txt for CANN's ascendc
toolchain, and the small C entry the CPU twin runner loads through ctypes.

Example::

    >>> files = host_files(info)             # doctest: +SKIP
    >>> sorted(files)
    ['CMakeLists.txt', 'add_kernel_tiling.h', 'launch_add_kernel.cpp']
"""
from __future__ import annotations

from .emit_kernel import KernelInfo


def tiling_header(info: KernelInfo) -> str:
    fields = [f"    {t} {name};" for name, t, _ in info.tiling]
    return "\n".join([
        f"// Tiling of {info.entry}: its run-time scalars and the grid of programs, copied to",
        "// GM by the host and read once by every core.",
        "#pragma once",
        "#include <cstdint>",
        "",
        f"struct {info.class_name}Tiling {{",
        *fields,
        "    uint32_t grid0;   // programs along axis 0",
        "    uint32_t grid1;",
        "    uint32_t grid2;",
        "};",
        ""])


def host_launcher(info: KernelInfo) -> str:
    gm = [n for n, _ in info.gm_args]
    tiling = f"{info.class_name}Tiling"
    params = "".join(f", void* {n}, size_t {n}_bytes" for n in gm)
    lines = [
        f"// Host launcher of {info.entry} for CANN: copies the arrays to the device, launches the",
        "// kernel on blockDim cores and copies the arrays back (they may all be written).",
        '#include "acl/acl.h"',
        '#include "kernel_operator.h"',
        f'#include "{info.entry}_tiling.h"',
        "",
        f'extern "C" __global__ __aicore__ void {info.entry}('
        + "".join(f"GM_ADDR {n}, " for n in gm) + "GM_ADDR workspace, GM_ADDR tiling);",
        "",
        "#define NPUJIT_ACL_CHECK(call)                               \\",
        "    do {                                                     \\",
        "        if ((call) != ACL_SUCCESS) return -1;                \\",
        "    } while (0)",
        "",
        "// Returns 0 on success, -1 when an ACL call fails, -2 when a stride the kernel assumes",
        "// to be 1 is not.",
        f'extern "C" int Launch{info.class_name}(const {tiling}* tiling, uint32_t blockDim{params})',
        "{",
    ]
    for name in info.unit_stride_args:
        lines.append(f"    if (tiling->{name} != 1) return -2;   // the Cube path copies contiguous rows")
    lines += [
        "    NPUJIT_ACL_CHECK(aclInit(nullptr));",
        "    NPUJIT_ACL_CHECK(aclrtSetDevice(0));",
        "    aclrtStream stream = nullptr;",
        "    NPUJIT_ACL_CHECK(aclrtCreateStream(&stream));",
    ]
    for n in gm:
        lines += [f"    uint8_t* {n}Device = nullptr;",
                  f"    NPUJIT_ACL_CHECK(aclrtMalloc(reinterpret_cast<void**>(&{n}Device), {n}_bytes, ACL_MEM_MALLOC_HUGE_FIRST));",
                  f"    NPUJIT_ACL_CHECK(aclrtMemcpy({n}Device, {n}_bytes, {n}, {n}_bytes, ACL_MEMCPY_HOST_TO_DEVICE));"]
    lines += [
        "    uint8_t* tilingDevice = nullptr;",
        f"    NPUJIT_ACL_CHECK(aclrtMalloc(reinterpret_cast<void**>(&tilingDevice), sizeof({tiling}), ACL_MEM_MALLOC_HUGE_FIRST));",
        f"    NPUJIT_ACL_CHECK(aclrtMemcpy(tilingDevice, sizeof({tiling}), tiling, sizeof({tiling}), ACL_MEMCPY_HOST_TO_DEVICE));",
    ]
    workspace = "nullptr"
    if info.workspace_bytes:
        workspace = "workspaceDevice"
        lines += [
            f"    // the hand-offs between the AIC and the AIV: {info.workspace_bytes} bytes per program",
            "    const uint64_t workspaceBytes = static_cast<uint64_t>(tiling->grid0) * tiling->grid1 * tiling->grid2"
            f" * {info.workspace_bytes};",
            "    uint8_t* workspaceDevice = nullptr;",
            "    NPUJIT_ACL_CHECK(aclrtMalloc(reinterpret_cast<void**>(&workspaceDevice), workspaceBytes, ACL_MEM_MALLOC_HUGE_FIRST));"]
    lines += [
        f"    {info.entry}<<<blockDim, nullptr, stream>>>({''.join(n + 'Device, ' for n in gm)}{workspace}, tilingDevice);",
        "    NPUJIT_ACL_CHECK(aclrtSynchronizeStream(stream));",
    ]
    if info.workspace_bytes:
        lines.append("    NPUJIT_ACL_CHECK(aclrtFree(workspaceDevice));")
    for n in gm:
        lines += [f"    NPUJIT_ACL_CHECK(aclrtMemcpy({n}, {n}_bytes, {n}Device, {n}_bytes, ACL_MEMCPY_DEVICE_TO_HOST));",
                  f"    NPUJIT_ACL_CHECK(aclrtFree({n}Device));"]
    lines += [
        "    NPUJIT_ACL_CHECK(aclrtFree(tilingDevice));",
        "    NPUJIT_ACL_CHECK(aclrtDestroyStream(stream));",
        "    NPUJIT_ACL_CHECK(aclrtResetDevice(0));",
        "    NPUJIT_ACL_CHECK(aclFinalize());",
        "    return 0;",
        "}",
        ""]
    return "\n".join(lines)


def cmake_lists(info: KernelInfo) -> str:
    e = info.entry
    return "\n".join([
        f"# Builds {e} with CANN's ascendc toolchain (CANN 8.x kernel direct call):",
        "#   cmake -B build -DSOC_VERSION=Ascend910B3 -DASCEND_CANN_PACKAGE_PATH=$ASCEND_HOME_PATH",
        "#   cmake --build build",
        "cmake_minimum_required(VERSION 3.16)",
        f"project({e} LANGUAGES CXX)",
        "",
        'set(SOC_VERSION "Ascend910B3" CACHE STRING "the Ascend SoC to build for")',
        'set(RUN_MODE "npu" CACHE STRING "npu, sim or cpu")',
        'set(ASCEND_CANN_PACKAGE_PATH "$ENV{ASCEND_HOME_PATH}" CACHE PATH "the CANN install")',
        "if(EXISTS ${ASCEND_CANN_PACKAGE_PATH}/compiler/tikcpp/ascendc_kernel_cmake)",
        "    set(ASCENDC_CMAKE_DIR ${ASCEND_CANN_PACKAGE_PATH}/compiler/tikcpp/ascendc_kernel_cmake)",
        "else()",
        "    set(ASCENDC_CMAKE_DIR ${ASCEND_CANN_PACKAGE_PATH}/tools/tikcpp/ascendc_kernel_cmake)",
        "endif()",
        "include(${ASCENDC_CMAKE_DIR}/ascendc.cmake)",
        "",
        f"ascendc_library({e} SHARED {e}.cpp launch_{e}.cpp)",
        f"ascendc_include_directories({e} PRIVATE ${{CMAKE_CURRENT_SOURCE_DIR}})",
        ""])


def twin_entry(info: KernelInfo) -> str:
    """The C entry the twin runner calls: register the arrays, run every block."""
    gm = [n for n, _ in info.gm_args]
    tiling = f"{info.class_name}Tiling"
    ws = "workspace.data()" if info.workspace_bytes else "nullptr"
    call = ", ".join([f"gm[{i}]" for i in range(len(gm))] + [ws, "reinterpret_cast<GM_ADDR>(tiling_copy)"])
    workspace = []
    if info.workspace_bytes:
        workspace = [
            "    // the AIC -> AIV hand-offs: one workspace slot per program",
            "    std::vector<uint8_t> workspace(static_cast<size_t>(tiling_copy_value.grid0) * tiling_copy_value.grid1 *",
            f"                                   tiling_copy_value.grid2 * {info.workspace_bytes});",
            '    npujit_twin::gm_ranges().push_back({workspace.data(), workspace.size(), "workspace"});']
    return "\n".join([
        "// CPU twin entry (generated by npujit's runner; not part of the emitted kernel).",
        '#include "npujit_twin/all.h"   // first: the runner may have precompiled it',
        f'#include "{info.entry}.cpp"',
        "",
        'extern "C" int npujit_twin_launch(uint8_t** gm, const uint64_t* gm_bytes, const char* const* gm_names,',
        "                                  const void* tiling, int64_t block_dim, const uint32_t* capacity,",
        "                                  char* error, size_t error_len)",
        "{",
        "    npujit_twin::target() = npujit_twin::Target{capacity[0], capacity[1], capacity[2], capacity[3], capacity[4]};",
        "    npujit_twin::gm_ranges().clear();",
        f"    for (int i = 0; i < {len(gm)}; ++i) npujit_twin::gm_ranges().push_back({{gm[i], gm_bytes[i], gm_names[i]}});",
        f"    {tiling} tiling_copy_value = *static_cast<const {tiling}*>(tiling);",
        f"    {tiling}* tiling_copy = &tiling_copy_value;",
        *workspace,
        f"    return npujit_twin::run_blocks(block_dim, [&] {{ {info.entry}({call}); }}, error, error_len"
        + (", true);" if info.mixed else ");"),
        "}",
        ""])


def host_files(info: KernelInfo) -> dict:
    """The emitted host-side files, by name."""
    return {f"{info.entry}_tiling.h": tiling_header(info),
            f"launch_{info.entry}.cpp": host_launcher(info),
            "CMakeLists.txt": cmake_lists(info)}
