// `prima replay --measured FILE --scenario SCENARIO [--out DIR] [--fit] ...`: replays a
// measured run's arrivals and lengths on the simulated cluster and compares the latencies;
// --fit with --measured given more than once fits to all the runs together
// (cli/replay_runner.h, docs/replay.md). This file is the flags.
#include "cli/commands.h"
#include "cli/flags.h"
#include "cli/replay_options.h"
#include "cli/replay_runner.h"

namespace po = boost::program_options;

namespace prima::cli {

int cmd_replay(const Args& args) {
  const std::string help = replay_help();
  const CommandLine cl{"prima replay", replay_flags(), {}, {}, help.c_str()};
  po::variables_map vm;
  if (auto done = parse_command_line(cl, args, &vm)) return *done;
  const ReplayOptions o = replay_options(vm);
  if (Status st = o.validate(); !st.ok()) return fail_with("prima replay", st);
  return run_replay(o);
}

}  // namespace prima::cli
