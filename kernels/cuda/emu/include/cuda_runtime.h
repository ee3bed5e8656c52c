// <cuda_runtime.h> of the CPU execution layer: a kernel source (.cu) compiled by the host C++
// compiler includes this header instead of the toolkit's, because this directory comes first
// on the include path of the emulated flavour (kernels/cuda/emu/CMakeLists.txt). The runtime
// API's types and declarations are the toolkit's own (cuda_runtime_api.h, vector_types.h);
// kernels/cuda/emu defines the functions and device.h the device-side built-ins.
#pragma once

#include <cuda_runtime_api.h>

#include "kernels/cuda/emu/device.h"
