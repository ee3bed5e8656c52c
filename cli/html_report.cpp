#include "cli/html_report.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include "engine/config/embedded.h"

extern char** environ;

namespace prima::cli {
namespace {

namespace fs = std::filesystem;

constexpr const char* kScript = "reports/render.py";
constexpr const char* kInstallHint = "install python3-matplotlib (scripts/setup.sh does)";
// render.py's exit codes (see its docstring).
constexpr int kScriptBadInput = 2;
constexpr int kScriptMissingDep = 3;

// A file under $TMPDIR (or /tmp) holding `content`, removed when this goes out of scope.
class TempFile {
 public:
  TempFile(const std::string& stem, const std::string& suffix) {
    const char* base = std::getenv("TMPDIR");
    std::string tmpl = std::string(base && *base ? base : "/tmp") + "/" + stem + "_XXXXXX" + suffix;
    std::vector<char> buf(tmpl.begin(), tmpl.end());
    buf.push_back('\0');
    int fd = ::mkstemps(buf.data(), static_cast<int>(suffix.size()));
    if (fd < 0) return;
    ::close(fd);
    path_ = buf.data();
  }
  ~TempFile() {
    if (!path_.empty()) ::unlink(path_.c_str());
  }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  const std::string& path() const { return path_; }  // empty if it could not be created

 private:
  std::string path_;
};

std::string read_all(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The script's stderr as one message: "render.py: " prefixes and the last newline dropped.
std::string script_message(std::string err) {
  std::string out;
  std::istringstream in(err);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("render.py: ", 0) == 0) line = line.substr(11);
    if (line.empty()) continue;
    if (!out.empty()) out += "; ";
    out += line;
  }
  return out.empty() ? "no message" : out;
}

struct SpawnResult {
  bool started = false;  // false: the interpreter was not found or could not run
  int exit_code = -1;
  std::string err;
};

// Runs `python script kind dir` with stdout to /dev/null and stderr captured.
SpawnResult run_script(const std::string& python, const std::string& script,
                       const std::string& kind, const std::string& dir) {
  SpawnResult r;
  TempFile err_file("prima_render_err", ".txt");
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  if (!err_file.path().empty())
    posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, err_file.path().c_str(),
                                     O_WRONLY | O_TRUNC, 0);
  std::vector<std::string> argv_s = {python, script, kind, dir};
  std::vector<char*> argv;
  for (auto& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  int rc = ::posix_spawnp(&pid, python.c_str(), &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) {
    r.err = std::strerror(rc);
    return r;
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  r.started = true;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  if (!err_file.path().empty()) r.err = read_all(err_file.path());
  // A shell-style "command not found" (e.g. a wrapper script whose interpreter is missing).
  if (r.exit_code == 127) r.started = false;
  return r;
}

// Interpreters to try, in order: $PRIMA_PYTHON alone when set; else python3 on PATH, then
// the system one (a pyenv/venv python3 first on PATH often lacks the apt-installed matplotlib).
std::vector<std::string> interpreters() {
  if (const char* p = std::getenv("PRIMA_PYTHON"); p && *p) return {p};
  std::vector<std::string> out = {"python3"};
  std::error_code ec;
  if (fs::exists("/usr/bin/python3", ec)) out.push_back("/usr/bin/python3");
  return out;
}

}  // namespace

Status render_html_report(const std::string& kind, const std::string& dir) {
  if (kind != "simulate" && kind != "plan")
    return invalid_argument("report kind '" + kind + "': expected simulate or plan");
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return invalid_argument(dir + ": no such directory");

  // The renderer: $PRIMA_REPORT_SCRIPT (for working on it without rebuilding), else the copy
  // embedded in the binary, written to a temporary file.
  std::string script;
  TempFile tmp("prima_render", ".py");
  if (const char* s = std::getenv("PRIMA_REPORT_SCRIPT"); s && *s) {
    script = s;
  } else {
    auto text = config::embedded_file(kScript);
    if (!text) return internal_error(std::string(kScript) + " is not embedded in this binary");
    if (tmp.path().empty())
      return internal_error("cannot create a temporary file for the renderer");
    std::ofstream out(tmp.path(), std::ios::binary);
    out << *text;
    out.close();
    if (!out) return internal_error(tmp.path() + ": cannot write the renderer");
    script = tmp.path();
  }

  std::string tried, missing_dep;
  for (const auto& py : interpreters()) {
    SpawnResult r = run_script(py, script, kind, dir);
    tried += (tried.empty() ? "" : ", ") + py;
    if (!r.started) continue;
    if (r.exit_code == 0) return ok_status();
    if (r.exit_code == kScriptBadInput) return invalid_argument(script_message(r.err));
    if (r.exit_code == kScriptMissingDep) {
      missing_dep = script_message(r.err);
      continue;  // another interpreter may have matplotlib
    }
    return internal_error("HTML report renderer (" + py + ") failed with exit code " +
                          std::to_string(r.exit_code) + ": " + script_message(r.err));
  }
  if (!missing_dep.empty())
    return failed_precondition("HTML report: matplotlib is missing for " + tried + ": " +
                               kInstallHint);
  return failed_precondition("HTML report: python3 not found (tried " + tried +
                             "): install python3 and python3-matplotlib (scripts/setup.sh "
                             "does)");
}

}  // namespace prima::cli
