// What the CPU execution layer says about itself (the emulated flavour of kernels/cuda): the
// device it presents and the last kernel fault. Thread-safe.
#pragma once

#include <string>

namespace prima::cudaemu {

// The report of the last kernel that could not complete (a deadlock, a barrier in divergent
// code, a shuffle outside its mask), "" when none. The fault is also printed to stderr and
// makes every later runtime call return cudaErrorLaunchFailure until cudaDeviceReset(), as a
// device fault does. PRIMA_CUDA_EMU_ABORT=1 aborts the process on a fault instead.
std::string last_fault();

// "prima CUDA emulator (CPU, N workers)": the device name cudaGetDeviceProperties reports.
std::string device_description();

}  // namespace prima::cudaemu
