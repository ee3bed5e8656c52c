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

// Runs `python script args...` with stdout to /dev/null and stderr captured.
SpawnResult run_script(const std::string& python, const std::string& script,
                       const std::vector<std::string>& args) {
  SpawnResult r;
  TempFile err_file("prima_render_err", ".txt");
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  if (!err_file.path().empty())
    posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, err_file.path().c_str(),
                                     O_WRONLY | O_TRUNC, 0);
  std::vector<std::string> argv_s = {python, script};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
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

// The renderer's files (reports/*.py and reports/style.css) written from the binary into a
// temporary directory, removed when this goes out of scope.
class RendererDir {
 public:
  RendererDir() {
    const char* base = std::getenv("TMPDIR");
    std::string tmpl = std::string(base && *base ? base : "/tmp") + "/prima_render_XXXXXX";
    std::vector<char> buf(tmpl.begin(), tmpl.end());
    buf.push_back('\0');
    if (::mkdtemp(buf.data()) != nullptr) dir_ = buf.data();
  }
  ~RendererDir() {
    std::error_code ec;
    if (!dir_.empty()) fs::remove_all(dir_, ec);
  }
  RendererDir(const RendererDir&) = delete;
  RendererDir& operator=(const RendererDir&) = delete;

  // Writes every embedded reports/ file; the path of render.py, or an error.
  Result<std::string> write() {
    if (dir_.empty()) return internal_error("cannot create a temporary directory for the renderer");
    bool found = false;
    for (const auto& f : config::embedded_files()) {
      const std::string path = f.path;
      if (path.rfind("reports/", 0) != 0) continue;
      const std::string out_path = dir_ + "/" + path.substr(8);
      std::ofstream out(out_path, std::ios::binary);
      out << f.content;
      out.close();
      if (!out) return internal_error(out_path + ": cannot write the renderer");
      found = found || path == kScript;
    }
    if (!found) return internal_error(std::string(kScript) + " is not embedded in this binary");
    return dir_ + "/render.py";
  }

 private:
  std::string dir_;
};

// Runs the renderer with `args` (its command line after the script), trying each interpreter.
Status run_renderer(const std::vector<std::string>& args) {
  // $PRIMA_REPORT_SCRIPT (a render.py in a source tree, its modules beside it: for working on
  // the renderer without rebuilding), else the copy embedded in the binary.
  std::string script;
  RendererDir tmp;
  if (const char* s = std::getenv("PRIMA_REPORT_SCRIPT"); s && *s) {
    script = s;
  } else {
    auto written = tmp.write();
    if (!written.ok()) return written.status();
    script = *written;
  }

  std::string tried, missing_dep;
  for (const auto& py : interpreters()) {
    SpawnResult r = run_script(py, script, args);
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

}  // namespace

Status render_html_report(const std::string& kind, const std::string& dir) {
  if (kind != "simulate" && kind != "plan")
    return invalid_argument("report kind '" + kind + "': expected simulate or plan");
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return invalid_argument(dir + ": no such directory");
  return run_renderer({kind, dir});
}

Status render_html_comparison(const std::string& before, const std::string& after,
                              const std::string& out_file) {
  std::error_code ec;
  for (const auto* d : {&before, &after})
    if (!fs::is_directory(*d, ec)) return invalid_argument(*d + ": no such directory");
  return run_renderer({"compare", before, after, out_file});
}

}  // namespace prima::cli
