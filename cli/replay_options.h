// The options of `prima replay` (cli/cmd_replay.cpp, run by cli/replay_runner.h): its flags as
// one struct with their defaults, filled from the parsed command line by replay_options() and
// checked by validate() (a Status whose message names the flag). Checks that need the files
// (the measured runs, the scenario) are the runner's. Plain values; thread-compatible.
#pragma once

#include <boost/program_options.hpp>
#include <optional>
#include <string>
#include <vector>

#include "engine/core/status.h"

namespace prima::cli {

struct ReplayOptions {
  std::vector<std::string> measured;  // the measured files: one, or several with --fit
  std::string scenario;               // a scenario file or built-in name
  std::vector<std::string> sets;
  std::string out_dir;  // "" = out/replay-<scenario name>
  bool fit = false;
  std::string fit_params;             // "" = the default set (replay::kDefaultFitParams)
  std::optional<int> fit_iterations;  // unset = 60
  bool json = false;                  // comparison.json on stdout, the table on stderr
  bool quiet = false;                 // no progress on stderr

  int iterations() const { return fit_iterations.value_or(60); }
  // The flags' own consistency: both inputs given, --fit-params/--fit-iterations only with
  // --fit, iterations >= 1, several runs only with --fit and none twice, the parameter names.
  Status validate() const;
};

// The flags shown by --help, and the text printed after them.
boost::program_options::options_description replay_flags();
std::string replay_help();
// The options the parsed flags give (not validated).
ReplayOptions replay_options(const boost::program_options::variables_map& vm);

}  // namespace prima::cli
