// The options of `prima simulate` (cli/cmd_simulate.cpp): its flags as one struct with their
// defaults, filled from the parsed command line by simulate_options() and checked by
// validate() (a Status whose message names the flag). Checks that need the scenario file are
// the command's. Plain values; thread-compatible.
#pragma once

#include <boost/program_options.hpp>
#include <string>
#include <vector>

#include "engine/core/status.h"

namespace prima::cli {

struct SimulateOptions {
  std::string scenario_path;      // SCENARIO (positional); "" = the built-in default
  std::string out_dir;            // --out; "" = out/<scenario name>
  std::vector<std::string> sets;  // --set PATH=VALUE..., then --seed N as "seed=N"
  bool no_files = false;          // print the summary only
  bool html = false;              // also DIR/report.html
  bool json = false;              // report.json on stdout instead of the summary
  bool quiet = false;             // no progress on stderr

  Status validate() const;
};

// The flags shown by --help, and the hidden one (the positional scenario).
boost::program_options::options_description simulate_flags();
boost::program_options::options_description simulate_hidden_flags();
// The options the parsed flags give (not validated).
SimulateOptions simulate_options(const boost::program_options::variables_map& vm);

}  // namespace prima::cli
