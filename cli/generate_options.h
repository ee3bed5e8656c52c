// The options of `prima generate` (cli/cmd_generate.cpp): its flags as one struct with their
// defaults, filled from the parsed command line by generate_options() and checked by
// validate() (a Status whose message names the flag and its bad value). Checks that need the
// model file (its context, its chat template) are the command's. Plain values;
// thread-compatible.
#pragma once

#include <boost/program_options.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "backends/real/real_backend.h"
#include "cli/device_options.h"
#include "engine/core/status.h"

namespace prima::cli {

struct GenerateOptions {
  // The model and its ranks: --model (model_path), --manifest, --threads, --tp, --pp. The
  // command sets max_num_seqs (--batch) and repack (--no-repack) when it opens the backend.
  real::RealBackendOptions backend;
  std::optional<std::string> prompt;  // --prompt (may be empty)
  std::string prompt_file;            // "" = none; its text replaces --prompt
  bool chat = false;                  // apply the model's chat template
  int max_tokens = 64;
  double temperature = 0;  // 0: greedy
  int top_k = 0;           // 0: no cut
  double top_p = 1.0;      // 1: no cut
  std::uint64_t seed = 0;
  bool print_ids = false;  // --ids
  bool ignore_eos = false;
  int batch = 1;                   // copies of the request run at once
  std::vector<std::string> stops;  // --stop (repeatable)
  bool repack = false, no_repack = false;
  DeviceOptions device;   // --device cpu|cuda[:N]
  std::string synthetic;  // --synthetic NAME[:TYPE] instead of --model

  Status validate() const;
};

// The flags, their defaults and help text.
boost::program_options::options_description generate_flags();
// The options the parsed flags give (not validated).
GenerateOptions generate_options(const boost::program_options::variables_map& vm);

}  // namespace prima::cli
