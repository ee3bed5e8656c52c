// The options of `prima plan` (cli/cmd_plan.cpp, cli/plan_runner.cpp): its flags as one struct
// with their defaults, filled from the parsed command line by plan_options() and checked by
// validate() (a Status whose message names the flag and its bad value). Plain values;
// thread-compatible.
#pragma once

#include <boost/program_options.hpp>
#include <cstdint>
#include <string>

#include "engine/core/status.h"

namespace prima::cli {

struct PlanOptions {
  std::string plan_path;  // PLAN.json (positional)
  std::string out_dir;    // --out; "" = out/plan-<name>
  int jobs = 1;           // --jobs; plan_options() defaults it to the number of cores
  // --shard i/n: search only shard i (0-based) of n; 1: no sharding. `shard` keeps the text
  // given ("" when none) for messages, shard_index = -1 when it is not "i/n".
  std::string shard;
  int shard_index = 0, shard_count = 1;
  bool quiet = false;
  std::string helm_values_path;       // --emit-helm-values; "" = none
  bool target_given = false;          // --target-rate given
  double target_rps = 0;              // --target-rate (else the plan file's target, if any)
  std::int64_t max_simulations = -1;  // hidden: stop after this many new simulations

  Status validate() const;
};

// The flags shown by --help, and the hidden ones (the positional plan, --max-simulations).
boost::program_options::options_description plan_flags();
boost::program_options::options_description plan_hidden_flags();
// The options the parsed flags give (not validated).
PlanOptions plan_options(const boost::program_options::variables_map& vm);

}  // namespace prima::cli
