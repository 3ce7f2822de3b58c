// npujit's CPU twin of the Ascend C API subset its emitter uses (our own code; see
// docs/ascendc.md).  An emitted kernel includes "kernel_operator.h" and builds unchanged
// against CANN's real header or against this one with g++ -std=c++17.
#pragma once

#include "npujit_twin/cube.h"
#include "npujit_twin/memory.h"
#include "npujit_twin/sync.h"
#include "npujit_twin/vector.h"
