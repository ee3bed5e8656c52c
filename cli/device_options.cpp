// --device's flag, its checks and the run-time refusal of devices that cannot run the forward
// pass yet (see device_options.h).
#include "cli/device_options.h"

#include <cstdio>

#include "cli/commands.h"
#include "cli/flags.h"

namespace po = boost::program_options;

namespace prima::cli {

Status DeviceOptions::validate() const {
  PRIMA_ASSIGN_OR_RETURN(const real::DeviceSpec d, real::parse_device(text));
  if (!quantization.empty() && quantization != "fp8" && quantization != "int8" &&
      quantization != "w4a16")
    return invalid_argument("--quantization " + quantization +
                            ": the quantizations applied at load are fp8, int8 and w4a16");
  if (!quantization.empty() && d.kind == real::DeviceKind::kCpu)
    return invalid_argument("--quantization " + quantization +
                            " runs on a device (--device cuda[:N] or cuda-emu): the CPU path has "
                            "no " +
                            (fp8()                    ? "FP8"
                             : quantization == "int8" ? "INT8 W8A8"
                                                      : "W4A16") +
                            " kernels");
  return ok_status();
}

real::DeviceSpec DeviceOptions::spec() const {
  auto d = real::parse_device(text);
  return d.ok() ? *d : real::DeviceSpec{};
}

Status DeviceOptions::check_parallelism(int tp, int pp) const {
  const real::DeviceSpec d = spec();
  if (d.kind != real::DeviceKind::kCuda || !d.indexed || (tp == 1 && pp == 1)) return ok_status();
  return invalid_argument("--device " + text + " names one GPU, and --tp " + std::to_string(tp) +
                          " --pp " + std::to_string(pp) +
                          " runs one rank per GPU: use --device cuda (each rank takes the GPU "
                          "of its local rank)");
}

void add_device_flag(po::options_description& opts) {
  opts.add_options()(
      "device", po::value<std::string>()->default_value("cpu"),
      "cpu (the default), cuda[:N] or cuda-emu: where the forward pass runs. cuda:N runs it on "
      "GPU N; cuda, under mpirun with --tp/--pp, one rank per GPU (each its local rank's) with "
      "NCCL between them; where that cannot be (no CUDA build, no CUDA device, index out of "
      "range) it fails at once with the reason, exit 2. cuda-emu runs the same GPU kernels on "
      "the CPU execution layer (every CUDA thread a fiber): for checks where no GPU is, far "
      "slower than cpu");
  opts.add_options()(
      "quantization", po::value<std::string>(),
      "fp8: run the layers' F16/BF16 weight matrices as FP8 E4M3 with a per-tensor scale, "
      "quantized on the device at load, their activations per tensor each step (cuBLASLt's "
      "FP8 GEMM; sm_89 and later: Ada, Hopper). int8: INT8 W8A8, the matrices as INT8 with a "
      "scale per output channel, their activations per token each step (cuBLASLt's INT8 GEMM "
      "into INT32, then scaled back). w4a16: 4-bit codes with an f16 scale and minimum per "
      "group of 128 elements of a row (64 or 32 where 128 does not divide it), activations in "
      "the weights' 16-bit type (prima's dequantizing GEMM). The embedding and LM head stay as "
      "they are. --device cuda[:N] or cuda-emu only");
}

DeviceOptions device_options(const po::variables_map& vm) {
  DeviceOptions d;
  get_flag(vm, {"device"}, &d.text);
  get_flag(vm, {"quantization"}, &d.quantization);
  return d;
}

std::optional<int> device_unavailable(const char* command, const DeviceOptions& d) {
  if (const Status st = real::check_device(d.spec()); !st.ok()) {
    std::fprintf(stderr, "%s: --device %s: %s\n", command, d.text.c_str(), st.message().c_str());
    return kExitBadInput;
  }
  if (!d.fp8()) return std::nullopt;
  // The message names --quantization fp8 and the device.
  if (const Status st = fp8_device_support(d.spec()); !st.ok()) {
    std::fprintf(stderr, "%s: %s\n", command, st.message().c_str());
    return kExitBadInput;
  }
  return std::nullopt;
}

}  // namespace prima::cli
