// The options of `prima profile` (cli/cmd_profile.cpp): its flags as one struct with their
// defaults, filled from the parsed command line by profile_options() and checked by
// validate() (a Status whose message names the flag). What is measured is the profiler's
// options (backends/real/profiler.h); the rest is where the results go. Checks that need the
// model file or the file system are the command's. Plain values; thread-compatible.
#pragma once

#include <boost/program_options.hpp>
#include <string>

#include "backends/real/profiler.h"
#include "cli/device_options.h"
#include "engine/core/status.h"

namespace prima::cli {

struct ProfileOptions {
  // --model, --manifest, --threads, --batches, --contexts, --repeats, --name; repack unless
  // --no-repack. A list that is not positive integers separated by commas is left empty.
  real::ProfileOptions profile;
  std::string out;                         // --out: the hardware profile (required)
  std::string topology_out, scenario_out;  // "" = not written
  bool repack = false, no_repack = false;  // the flags as given
  DeviceOptions device;                    // --device cpu|cuda[:N]
  std::string synthetic;                   // --synthetic NAME[:TYPE] instead of --model

  Status validate() const;
};

// The flags, their defaults and help text.
boost::program_options::options_description profile_flags();
// The options the parsed flags give (not validated).
ProfileOptions profile_options(const boost::program_options::variables_map& vm);

}  // namespace prima::cli
