#include "tests/support/run_prima.h"

#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace prima::testing {

std::string source_path(const std::string& rel) {
  return std::string(PRIMA_SOURCE_DIR) + "/" + rel;
}

std::string temp_dir(const std::string& name) {
  const char* base = std::getenv("TEST_TMPDIR");
  std::filesystem::path p = std::filesystem::path(base ? base : "/tmp") /
                            ("prima_test_" + std::to_string(::getpid()) + "_" + name);
  std::filesystem::remove_all(p);
  std::filesystem::create_directories(p);
  return p.string();
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

nlohmann::json read_json(const std::string& path) {
  return nlohmann::json::parse(read_file(path));
}

nlohmann::json without_run(nlohmann::json report) {
  report.erase("run");
  return report;
}

nlohmann::json simulate_report(const std::string& args, std::string* failure) {
  const RunResult r = run_prima("simulate " + args + " --no-files -q --json");
  if (r.exit_code != 0) {
    *failure = "exit code " + std::to_string(r.exit_code) + ": " + r.err;
    return nullptr;
  }
  nlohmann::json j = nlohmann::json::parse(r.out, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("run")) {
    *failure = "no report with a \"run\" key: " + r.out.substr(0, 500);
    return nullptr;
  }
  return without_run(std::move(j));
}

RunResult run_shell(const std::string& cmd) {
  RunResult r;
  const std::string dir = temp_dir("run");
  const std::string out = dir + "/stdout", err = dir + "/stderr";
  const int status = std::system((cmd + " >" + out + " 2>" + err + " </dev/null").c_str());
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = read_file(out);
  r.err = read_file(err);
  std::filesystem::remove_all(dir);
  return r;
}

RunResult run_prima(const std::string& args) {
  return run_shell(std::string(PRIMA_BINARY) + " " + args);
}

bool have_mpirun() {
  return std::system("command -v mpirun > /dev/null 2>&1") == 0;
}

std::string mpirun_prima(int np) {
  return "mpirun --allow-run-as-root --oversubscribe -np " + std::to_string(np) + " " +
         std::string(PRIMA_BINARY) + " ";
}

}  // namespace prima::testing
