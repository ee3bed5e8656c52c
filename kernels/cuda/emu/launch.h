// Kernel launches on the CPU execution layer (PRIMA_LAUNCH of kernels/cuda/launch.h): the
// arguments are copied as CUDA copies them (by value, converted to the kernel's parameter
// types) and the grid is handed to the stream: run at once, or recorded while the stream
// captures a graph (runtime_api.cpp). Thread-compatible: one launch at a time per stream.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <functional>
#include <memory>
#include <tuple>
#include <type_traits>
#include <utility>

#include "kernels/cuda/emu/device.h"

namespace prima::cudaemu {

// One kernel launch: the body runs once per CUDA thread of every block.
struct Launch {
  const char* name = "";
  dim3 grid, block;
  std::size_t shared_bytes = 0;
  std::function<void()> body;
};

// Runs or records `l` on `stream`; a bad configuration sets the error cudaGetLastError reports.
void submit(Launch l, cudaStream_t stream);

template <typename... P, typename... A>
void launch(const char* name, void (*kernel)(P...), dim3 grid, dim3 block, std::size_t shared_bytes,
            cudaStream_t stream, A&&... args) {
  static_assert(sizeof...(P) == sizeof...(A), "PRIMA_LAUNCH: wrong number of kernel arguments");
  auto params = std::make_shared<const std::tuple<std::decay_t<P>...>>(
      static_cast<std::decay_t<P>>(std::forward<A>(args))...);
  submit({name, grid, block, shared_bytes, [kernel, params] { std::apply(kernel, *params); }},
         stream);
}

}  // namespace prima::cudaemu
