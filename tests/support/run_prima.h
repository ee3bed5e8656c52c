// Runs the prima binary (or any command) for end-to-end tests and captures its exit code,
// stdout and stderr. Each call is its own process, so SimGrid's one-engine-per-process rule
// holds. Thread-compatible.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace prima::testing {

struct RunResult {
  int exit_code = -1;
  std::string out, err;
};

// Runs `PRIMA_BINARY args` through /bin/sh (args are passed verbatim: quote them).
RunResult run_prima(const std::string& args);
// Runs a shell command line (stdin from /dev/null), capturing its exit code and output.
RunResult run_shell(const std::string& cmd);
// Whether mpirun is on PATH, and the start of a command line that runs PRIMA_BINARY as np
// ranks under it: "mpirun --allow-run-as-root --oversubscribe -np NP PRIMA_BINARY ".
bool have_mpirun();
std::string mpirun_prima(int np);
// A fresh empty directory under the test temp dir.
std::string temp_dir(const std::string& name);
std::string read_file(const std::string& path);
nlohmann::json read_json(const std::string& path);
// The report without its wall-clock-dependent "run" key.
nlohmann::json without_run(nlohmann::json report);
// `prima simulate ARGS --no-files -q --json`: the report without "run", or null (with the
// exit code and stderr in *failure) when it did not exit 0 or has no "run" key.
nlohmann::json simulate_report(const std::string& args, std::string* failure);
std::string source_path(const std::string& rel);  // PRIMA_SOURCE_DIR/rel

}  // namespace prima::testing
