// The one way kernels/cuda launches a kernel and declares dynamic shared memory, so the same
// source runs on a device (nvcc) and on the CPU execution layer (kernels/cuda/emu: the host
// compiler):
//   PRIMA_LAUNCH(kernel, grid, block, shared_bytes, stream, args...)
//       kernel<<<grid, block, shared_bytes, stream>>>(args...) under nvcc; on the CPU layer a
//       call that runs (or, while the stream captures a graph, records) the grid. A kernel
//       that is a template with several arguments is named through an alias.
//   PRIMA_DYNAMIC_SHARED(type, name);
//       extern __shared__ type name[] under nvcc; on the CPU layer a pointer to this block's
//       dynamic shared memory (shared_bytes of the launch, 128-byte aligned).
// Errors show as on a device: cudaGetLastError() after the launch, and a fault in the kernel
// at the next synchronisation.
#pragma once

#if defined(__CUDACC__)
#define PRIMA_LAUNCH(kernel, grid, block, shared_bytes, stream, ...) \
  kernel<<<grid, block, shared_bytes, stream>>>(__VA_ARGS__)
#define PRIMA_DYNAMIC_SHARED(type, name) extern __shared__ type name[]
#else
#include "kernels/cuda/emu/launch.h"
#define PRIMA_LAUNCH(kernel, grid, block, shared_bytes, stream, ...)   \
  ::prima::cudaemu::launch(#kernel, kernel, grid, block, shared_bytes, \
                           stream __VA_OPT__(, ) __VA_ARGS__)
#define PRIMA_DYNAMIC_SHARED(type, name) \
  type* name = reinterpret_cast<type*>(::prima::cudaemu::t_thread->block->dynamic_shared)
#endif
