// ParallelFor: how engine code runs independent work items (the predictions of a calibration
// fit): body(i) for every i in [0, n), in any order and possibly at once, returning when all
// are done. Engine code starts no threads of its own (DESIGN.md): whoever calls it (the CLI)
// passes one that does, or serial_for(), which runs them in order on the calling thread.
// `body` must be safe to run concurrently for distinct i.
#pragma once

#include <cstddef>
#include <functional>

namespace prima {

using ParallelFor =
    std::function<void(std::size_t n, const std::function<void(std::size_t)>& body)>;

inline ParallelFor serial_for() {
  return [](std::size_t n, const std::function<void(std::size_t)>& body) {
    for (std::size_t i = 0; i < n; ++i) body(i);
  };
}

}  // namespace prima
