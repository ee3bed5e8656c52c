// `--device cpu|cuda[:N]|cuda-emu` of `prima generate`, `prima profile` and `prima serve
// --backend real`: the flag's text in a small struct whose validate() checks its form
// (backends/real/device.h parses it); device_unavailable(), the run-time check each command
// makes after validate(): when the device cannot run here it prints the one-line reason (no
// CUDA build, no CUDA device, index out of range, no CPU execution layer) and gives exit code
// 2; and device_forward(), the maker of the GPU forward pass the backend runs for cuda and
// cuda-emu. --device cpu, the default, changes nothing. Plain values; thread-compatible.
#pragma once

#include <boost/program_options.hpp>
#include <optional>
#include <string>

#include "backends/real/cuda/weight_quant.h"
#include "backends/real/device.h"
#include "backends/real/real_backend.h"
#include "engine/core/status.h"

namespace prima::cli {

struct DeviceOptions {
  std::string text = "cpu";  // --device as given
  std::string quantization;  // --quantization: "" (the file's types), "fp8", "int8" or "w4a16"
  bool fp8() const { return quantization == "fp8"; }
  real::WeightQuant quant() const {
    return quantization == "fp8"     ? real::WeightQuant::kFp8
           : quantization == "int8"  ? real::WeightQuant::kInt8
           : quantization == "w4a16" ? real::WeightQuant::kW4A16
                                     : real::WeightQuant::kNone;
  }

  // invalid_argument naming --device and the valid forms when the text does not parse.
  Status validate() const;
  // The parsed device (cpu when the text does not parse: validate() first).
  real::DeviceSpec spec() const;
  // invalid_argument when the device names one GPU (cuda:N) and the job has several ranks
  // (each rank takes its own GPU: plain cuda).
  Status check_parallelism(int tp, int pp) const;
};

// Adds --device and --quantization to `opts`.
void add_device_flag(boost::program_options::options_description& opts);
// --device's value from the parsed flags.
DeviceOptions device_options(const boost::program_options::variables_map& vm);

// nullopt when the device can run the forward pass (the CPU), with FP8 tensor cores where
// --quantization fp8 asks for them; otherwise prints "COMMAND: reason" on stderr and returns
// kExitBadInput. Each command calls it before it loads or makes a model.
std::optional<int> device_unavailable(const char* command, const DeviceOptions& d);

// RealBackendOptions::device_forward for the device: empty for the CPU (cli/device_forward.cpp).
using DeviceForwardMaker = decltype(real::RealBackendOptions::device_forward);
// quant: --quantization (the layers' F16/BF16 matrices as FP8 E4M3 or INT8 W8A8 on the device).
DeviceForwardMaker device_forward(const real::DeviceSpec& d,
                                  real::WeightQuant quant = real::WeightQuant::kNone);
// ok on the CPU and on a device with FP8 tensor cores (sm_89 and later); else
// invalid_argument naming the device and its sm (cli/device_forward.cpp).
Status fp8_device_support(const real::DeviceSpec& d);

}  // namespace prima::cli
