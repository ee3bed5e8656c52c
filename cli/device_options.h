// `--device cpu|cuda[:N]` of `prima generate`, `prima profile` and `prima serve --backend
// real`: the flag's text in a small struct whose validate() checks its form
// (backends/real/device.h parses it), and device_unavailable(), the run-time check each
// command makes after validate(): for --device cuda it prints the one-line reason (no CUDA
// build, no CUDA device, index out of range, or the CUDA forward pass not built yet) and gives
// exit code 2. --device cpu, the default, changes nothing. Plain values; thread-compatible.
#pragma once

#include <boost/program_options.hpp>
#include <optional>
#include <string>

#include "backends/real/device.h"
#include "engine/core/status.h"

namespace prima::cli {

struct DeviceOptions {
  std::string text = "cpu";  // --device as given

  // invalid_argument naming --device and the valid forms when the text does not parse.
  Status validate() const;
  // The parsed device (cpu when the text does not parse: validate() first).
  real::DeviceSpec spec() const;
};

// Adds --device to `opts`.
void add_device_flag(boost::program_options::options_description& opts);
// --device's value from the parsed flags.
DeviceOptions device_options(const boost::program_options::variables_map& vm);

// nullopt when the device can run the forward pass (the CPU); otherwise prints
// "COMMAND: reason" on stderr and returns kExitBadInput.
std::optional<int> device_unavailable(const char* command, const DeviceOptions& d);

}  // namespace prima::cli
