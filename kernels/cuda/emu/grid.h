// The blocks of a launch on the CPU execution layer: spread over worker threads (each runs one
// block at a time to its end, so a block's __shared__ variables, thread_local per worker, are
// its own), or run on the caller when there is one block or one worker. Workers:
// PRIMA_CUDA_EMU_WORKERS, else the hardware threads up to 8. Thread-safe: concurrent launches
// take turns.
#pragma once

#include <string>

#include "kernels/cuda/emu/launch.h"

namespace prima::cudaemu {

// Runs every block of `l` (a valid configuration): "" when all finished, else the report of
// the lowest-numbered block that faulted (blocks after it are not started).
std::string run_grid(const Launch& l);

// The number of worker threads blocks are spread over.
int grid_workers();

}  // namespace prima::cudaemu
