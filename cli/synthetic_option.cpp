// --synthetic's flag, check and resolution (see synthetic_option.h).
#include "cli/synthetic_option.h"

#include <cstdio>

#include "backends/real/synthetic_model.h"
#include "cli/commands.h"
#include "cli/flags.h"

namespace po = boost::program_options;

namespace prima::cli {

void add_synthetic_flag(po::options_description& opts) {
  std::string names;
  for (const auto& s : real::synthetic_shapes()) names += (names.empty() ? "" : ", ") + s.name;
  opts.add_options()(
      "synthetic", po::value<std::string>(),
      ("NAME[:TYPE] instead of --model: a model of a real shape with seeded random weights ("
       "NAME one of " +
       names +
       "; TYPE bf16 (default), f16, q8_0, q4_0 or q4_1), made once in $PRIMA_SYNTHETIC_DIR "
       "(default ~/.cache/prima/synthetic) and reused; a byte-level vocabulary, so prompts "
       "tokenize and outputs are <|synthetic_N|> tokens. With --device cuda the weights are "
       "made on the device (the same values; the file holds only the metadata and norms)")
          .c_str());
}

std::string synthetic_flag(const po::variables_map& vm) {
  std::string s;
  get_flag(vm, {"synthetic"}, &s);
  return s;
}

Status check_model_source(const std::string& model_path, const std::string& synthetic) {
  if (!model_path.empty() && !synthetic.empty())
    return invalid_argument("--model and --synthetic exclude each other");
  if (synthetic.empty()) return ok_status();
  return real::parse_synthetic(synthetic).status();
}

std::string synthetic_model_name(const std::string& synthetic) {
  Result<real::SyntheticSpec> spec = real::parse_synthetic(synthetic);
  if (!spec.ok()) return "";
  const std::string file = real::synthetic_file_name(*spec);  // written: no "-device"
  return file.substr(0, file.size() - std::string(".gguf").size());
}

std::optional<int> resolve_synthetic(const char* command, const std::string& synthetic,
                                     bool on_device, std::string* model_path) {
  if (synthetic.empty()) return std::nullopt;
  Result<real::SyntheticSpec> spec = real::parse_synthetic(synthetic);
  if (!spec.ok()) {
    std::fprintf(stderr, "%s: %s\n", command, spec.status().message().c_str());
    return kExitBadInput;
  }
  spec->device_weights = on_device;
  Result<std::string> path = real::ensure_synthetic(
      *spec, real::synthetic_cache_dir(),
      [&](const std::string& m) { std::fprintf(stderr, "%s: %s\n", command, m.c_str()); });
  if (!path.ok()) {
    std::fprintf(stderr, "%s: %s\n", command, path.status().message().c_str());
    return kExitFailure;
  }
  *model_path = *path;
  return std::nullopt;
}

}  // namespace prima::cli
