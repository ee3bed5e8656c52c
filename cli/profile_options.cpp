// `prima profile`'s flags and their checks (see profile_options.h).
#include "cli/profile_options.h"

#include <sstream>

#include "cli/flags.h"
#include "cli/synthetic_option.h"

namespace po = boost::program_options;

namespace prima::cli {
namespace {

// Positive integers separated by commas ("1,8,64"); empty when `s` is not that.
std::vector<int> parse_int_list(const std::string& s) {
  std::vector<int> out;
  std::stringstream in(s);
  std::string item;
  while (std::getline(in, item, ',')) {
    try {
      std::size_t used = 0;
      const int v = std::stoi(item, &used);
      if (used != item.size() || v <= 0) return {};
      out.push_back(v);
    } catch (...) {
      return {};
    }
  }
  return out;
}

}  // namespace

Status ProfileOptions::validate() const {
  if ((profile.model_path.empty() && synthetic.empty()) || out.empty())
    return invalid_argument("--model (or --synthetic) and --out are required (see --help)");
  PRIMA_RETURN_IF_ERROR(check_model_source(profile.model_path, synthetic));
  if (repack && no_repack) return invalid_argument("--repack and --no-repack exclude each other");
  if (profile.threads < 0 || profile.repeats < 1)
    return invalid_argument("--threads must be >= 0 and --repeats >= 1");
  if (profile.batches.empty() || profile.contexts.empty())
    return invalid_argument(
        "--batches and --contexts take positive integers separated by commas, e.g. 1,8,64");
  return device.validate();
}

po::options_description profile_flags() {
  po::options_description opts("prima profile --model PATH --out FILE [options]");
  // clang-format off
  opts.add_options()
      ("help,h", "show this help")
      ("model", po::value<std::string>(), "GGUF model file (llama architecture)")
      ("out", po::value<std::string>(), "hardware profile to write (JSON)")
      ("topology-out", po::value<std::string>()->default_value(""),
       "also write a one-device topology of this machine (JSON)")
      ("scenario-out", po::value<std::string>()->default_value(""),
       "also write a scenario of prima serve --backend real on it, calibrated by the profile")
      ("threads", po::value<int>()->default_value(0), "kernel threads (0: all cores)")
      ("batches", po::value<std::string>()->default_value("1,2,4,8,16,32,64,128"),
       "token counts for the operator timings")
      ("contexts", po::value<std::string>()->default_value("128,512,1024,2048"),
       "context lengths for the attention timings")
      ("repeats", po::value<int>()->default_value(5), "timed runs per measurement (median)")
      ("name", po::value<std::string>()->default_value(""),
       "hardware name of the profile (default cpu:<CPU model>)")
      ("manifest", po::value<std::string>()->default_value(""), "sha256 manifest of the model")
      ("repack",
       "measure the packed-weight kernels (the default where the CPU has them, as prima generate "
       "runs them)")
      ("no-repack", "measure the GGUF-layout kernels (prima generate --no-repack)");
  // clang-format on
  add_device_flag(opts);
  add_synthetic_flag(opts);
  return opts;
}

ProfileOptions profile_options(const po::variables_map& vm) {
  ProfileOptions o;
  real::ProfileOptions& p = o.profile;
  get_flag(vm, {"model"}, &p.model_path);
  get_flag(vm, {"manifest"}, &p.manifest);
  get_flag(vm, {"threads"}, &p.threads);
  get_flag(vm, {"repeats"}, &p.repeats);
  get_flag(vm, {"name"}, &p.name);
  p.batches = parse_int_list(vm["batches"].as<std::string>());
  p.contexts = parse_int_list(vm["contexts"].as<std::string>());
  get_flag(vm, {"out"}, &o.out);
  get_flag(vm, {"topology-out"}, &o.topology_out);
  get_flag(vm, {"scenario-out"}, &o.scenario_out);
  o.repack = vm.count("repack") > 0;
  o.no_repack = vm.count("no-repack") > 0;
  p.repack = !o.no_repack;
  o.device = device_options(vm);
  o.synthetic = synthetic_flag(vm);
  return o;
}

}  // namespace prima::cli
