// --device parsing and the run-time checks (see device.h). PRIMA_HAVE_CUDA and
// PRIMA_HAVE_CUDA_EMU are defined for this file alone where the build has prima_cuda and the
// CPU execution layer (CMakeLists.txt); the device count comes from kernels/cuda/device_info.h,
// a plain header.
#include "backends/real/device.h"

#include <fmt/format.h>

#include <charconv>
#include <cstdlib>

#if defined(PRIMA_HAVE_CUDA)
#include "kernels/cuda/device_info.h"
#endif

namespace prima::real {

Result<DeviceSpec> parse_device(std::string_view text) {
  const auto bad = [&] {
    return invalid_argument(fmt::format(
        "--device {}: must be cpu, cuda, cuda:N (N a device index from 0) or cuda-emu", text));
  };
  if (text == "cpu") return DeviceSpec{DeviceKind::kCpu, 0};
  if (text == "cuda-emu") return DeviceSpec{DeviceKind::kCudaEmu, 0};
  if (text == "cuda") return DeviceSpec{DeviceKind::kCuda, 0};
  if (text.substr(0, 5) != "cuda:" || text.size() == 5 || text.size() > 5 + 6) return bad();
  int index = -1;
  const char* first = text.data() + 5;
  const char* last = text.data() + text.size();
  const auto [end, ec] = std::from_chars(first, last, index);
  if (ec != std::errc() || end != last || index < 0) return bad();
  return DeviceSpec{DeviceKind::kCuda, index, true};
}

std::string to_string(const DeviceSpec& d) {
  if (d.kind == DeviceKind::kCudaEmu) return "cuda-emu";
  return d.kind == DeviceKind::kCpu ? "cpu" : fmt::format("cuda:{}", d.index);
}

bool cuda_built() {
#if defined(PRIMA_HAVE_CUDA)
  return true;
#else
  return false;
#endif
}

bool cuda_emu_built() {
#if defined(PRIMA_HAVE_CUDA_EMU)
  return true;
#else
  return false;
#endif
}

Status check_device(const DeviceSpec& d) {
  if (d.kind == DeviceKind::kCpu) return ok_status();
  if (d.kind == DeviceKind::kCudaEmu)
    return cuda_emu_built()
               ? ok_status()
               : failed_precondition(
                     "no CUDA execution layer for the CPU in this build (PRIMA_CUDA_EMU found "
                     "no CUDA toolkit headers or no Boost.Context); use --device cpu");
#if defined(PRIMA_HAVE_CUDA)
  const cuda::DeviceCount n = cuda::device_count();
  if (n.count == 0)
    return failed_precondition(n.error.empty() ? "no CUDA device"
                                               : fmt::format("no CUDA device ({})", n.error));
  if (d.index >= n.count)
    return failed_precondition(fmt::format("device index {} out of range ({} device{})", d.index,
                                           n.count, n.count == 1 ? "" : "s"));
  return ok_status();
#else
  return failed_precondition(
      "no CUDA build (prima was built without the CUDA kernels: "
      "PRIMA_CUDA found no nvcc); use --device cpu");
#endif
}

Result<int> device_for_rank(const DeviceSpec& d) {
  if (d.kind != DeviceKind::kCuda || d.indexed) return d.index;
  int local = 0;
  for (const char* var : {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID"})
    if (const char* v = std::getenv(var); v && *v) {
      local = std::atoi(v);
      break;
    }
#if defined(PRIMA_HAVE_CUDA)
  const cuda::DeviceCount n = cuda::device_count();
  if (local >= n.count)
    return failed_precondition(fmt::format(
        "--device cuda: this rank is local rank {} on its host, which has {} CUDA device{}: "
        "launch at most one rank per GPU",
        local, n.count, n.count == 1 ? "" : "s"));
#endif
  return local;
}

}  // namespace prima::real
