// The table of prima's subcommands (like ninja's tools): each takes its arguments (without the
// subcommand name) and returns the process exit code: 0 ok, 1 run failure, 2 bad input.
#pragma once

#include <string>
#include <vector>

namespace prima::cli {

using Args = std::vector<std::string>;

int cmd_simulate(const Args& args);
int cmd_report(const Args& args);
int cmd_validate(const Args& args);
int cmd_plan(const Args& args);
int cmd_generate(const Args& args);
int cmd_profile(const Args& args);
int cmd_serve(const Args& args);
int cmd_bench(const Args& args);
int cmd_calibrate(const Args& args);
int cmd_replay(const Args& args);

struct Command {
  const char* name;
  const char* summary;
  int (*run)(const Args&);
};
const std::vector<Command>& commands();

// Exit codes.
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;
inline constexpr int kExitBadInput = 2;

}  // namespace prima::cli
