// Which device the real backend's forward pass runs on (`--device cpu|cuda[:N]|cuda-emu`),
// parsed, and whether this build and this machine can run it. For cuda, check_device() says
// why not, in one line: "no CUDA build" (prima built without the CUDA kernels), "no CUDA
// device" (none visible: cudaGetDeviceCount gives 0 or fails), "device index N out of range
// (M devices)". cuda-emu is the same GPU forward pass on the project's CUDA execution layer
// for the CPU (docs/cuda-emulation.md): every kernel executed, slowly, where no GPU is; it
// needs a build with that layer (PRIMA_CUDA_EMU). Plain values and functions; thread-safe.
#pragma once

#include <string>
#include <string_view>

#include "engine/core/status.h"

namespace prima::real {

enum class DeviceKind { kCpu, kCuda, kCudaEmu };

struct DeviceSpec {
  DeviceKind kind = DeviceKind::kCpu;
  int index = 0;         // cuda:N; 0 for cpu and plain "cuda"
  bool indexed = false;  // "cuda:N" (not plain "cuda")
};

// "cpu", "cuda" (device 0), "cuda:N" (N a decimal index from 0) or "cuda-emu";
// invalid_argument naming the text and the valid forms otherwise.
Result<DeviceSpec> parse_device(std::string_view text);
std::string to_string(const DeviceSpec& d);  // "cpu", "cuda:0", "cuda-emu"

// True where prima was built with the CUDA kernels (PRIMA_CUDA found nvcc).
bool cuda_built();
// True where prima was built with the CUDA execution layer for the CPU (PRIMA_CUDA_EMU).
bool cuda_emu_built();

// ok for the CPU. For CUDA, failed_precondition with the one-line reason (above).
Status check_device(const DeviceSpec& d);

// The device a rank of a job uses: cuda:N's N; for plain "cuda", the rank's local rank on its
// host (OMPI_COMM_WORLD_LOCAL_RANK, MPI_LOCALRANKID, SLURM_LOCALID; 0 without a launcher), one
// process per GPU. failed_precondition when that local rank has no device of its own.
Result<int> device_for_rank(const DeviceSpec& d);

}  // namespace prima::real
