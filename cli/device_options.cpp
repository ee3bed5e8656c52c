// --device's flag, its checks and the run-time refusal of devices that cannot run the forward
// pass yet (see device_options.h).
#include "cli/device_options.h"

#include <cstdio>

#include "cli/commands.h"
#include "cli/flags.h"

namespace po = boost::program_options;

namespace prima::cli {

Status DeviceOptions::validate() const {
  return real::parse_device(text).status();
}

real::DeviceSpec DeviceOptions::spec() const {
  auto d = real::parse_device(text);
  return d.ok() ? *d : real::DeviceSpec{};
}

void add_device_flag(po::options_description& opts) {
  opts.add_options()(
      "device", po::value<std::string>()->default_value("cpu"),
      "cpu (the default) or cuda[:N]: where the forward pass runs. The CUDA forward pass is not "
      "built yet: cuda fails at once with the reason (no CUDA build, no CUDA device, index out "
      "of range, or not built yet), exit 2");
}

DeviceOptions device_options(const po::variables_map& vm) {
  DeviceOptions d;
  get_flag(vm, {"device"}, &d.text);
  return d;
}

std::optional<int> device_unavailable(const char* command, const DeviceOptions& d) {
  const Status st = real::check_device(d.spec());
  if (st.ok()) return std::nullopt;
  std::fprintf(stderr, "%s: --device %s: %s\n", command, d.text.c_str(), st.message().c_str());
  return kExitBadInput;
}

}  // namespace prima::cli
