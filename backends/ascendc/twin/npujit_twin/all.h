// Everything a twin build includes, in one header so the runner can precompile it
// (no include guard: g++ refuses one in a header compiled on its own; it is included once).

#include "../kernel_operator.h"
#include "launch.h"
