// `prima report DIR [--kind simulate|plan]`: renders DIR/report.html, a self-contained HTML
// report, from the files a `prima simulate` (report.json, requests.csv, timeline.csv) or a
// `prima plan` (plan.json, results.jsonl) run wrote in DIR. `prima report BEFORE AFTER`
// compares two simulate runs on one page. See cli/html_report.h.
#include <boost/program_options.hpp>
#include <cstdio>
#include <filesystem>

#include "cli/commands.h"
#include "cli/flags.h"
#include "cli/html_report.h"

namespace po = boost::program_options;
namespace fs = std::filesystem;

namespace prima::cli {

namespace {

constexpr const char* kHelp = R"(
DIR is the output directory of a run: `prima simulate --out DIR` (report.json, requests.csv,
timeline.csv) or a plan (plan.json, results.jsonl). Writes DIR/report.html: one file, charts
inline (no network needed to view it), the verdict first.

With two directories, BEFORE and AFTER (two simulate runs: an incident and its mitigation, a
baseline and a change, two plan candidates), writes one comparison page (default
AFTER/compare.html): the verdict of each, the differences stated, charts on shared axes.

Needs python3 with matplotlib (scripts/setup.sh installs python3-matplotlib); PRIMA_PYTHON
picks the interpreter.

examples:
  prima simulate scenarios/incidents/thermal_clock_drift.json --out out/th
  prima report out/th                 # writes out/th/report.html
  prima report out/plan --kind plan
  prima simulate scenarios/incidents/thermal_clock_drift_mitigated.json --out out/th_fix
  prima report out/th out/th_fix      # writes out/th_fix/compare.html

Exit codes: 0 ok, 1 the renderer failed (or python3/matplotlib missing), 2 bad input.
)";

// `prima report BEFORE AFTER`: both must be simulate runs (report.json).
int compare(const std::string& before, const std::string& after, const po::variables_map& vm) {
  if (vm.count("kind") && vm["kind"].as<std::string>() != "simulate") {
    std::fprintf(stderr, "prima report: a comparison takes two simulate runs (--kind %s)\n",
                 vm["kind"].as<std::string>().c_str());
    return kExitBadInput;
  }
  std::error_code ec;
  for (const auto& d : {before, after}) {
    if (!fs::is_directory(d, ec)) {
      std::fprintf(stderr, "prima report: %s: no such directory\n", d.c_str());
      return kExitBadInput;
    }
    if (!fs::exists(fs::path(d) / "report.json", ec)) {
      std::fprintf(stderr,
                   "prima report: %s: no report.json; a comparison takes two `prima simulate` "
                   "output directories\n",
                   d.c_str());
      return kExitBadInput;
    }
  }
  const std::string out =
      vm.count("out") ? vm["out"].as<std::string>() : (fs::path(after) / "compare.html").string();
  Status st = render_html_comparison(before, after, out);
  if (!st.ok()) return fail_with("prima report", st);
  std::printf("wrote %s\n", out.c_str());
  return kExitOk;
}

}  // namespace

int cmd_report(const Args& args) {
  po::options_description opts(
      "prima report DIR [options] | prima report BEFORE AFTER [--out FILE]");
  opts.add_options()("help,h", "show this help")(
      "kind", po::value<std::string>(),
      "simulate or plan (default: plan if DIR/plan.json exists, else simulate)")(
      "out,o", po::value<std::string>(),
      "with two directories: the comparison page to write (default AFTER/compare.html)");
  po::options_description hidden;
  hidden.add_options()("dir", po::value<std::vector<std::string>>(), "output directories");
  CommandLine cl{"prima report", opts, hidden, {}, kHelp};
  cl.positional.add("dir", 2);
  po::variables_map vm;
  if (auto done = parse_command_line(cl, args, &vm)) return *done;
  if (!vm.count("dir")) {
    std::fprintf(stderr, "prima report: missing DIR (see prima report --help)\n");
    return kExitBadInput;
  }
  const auto dirs = vm["dir"].as<std::vector<std::string>>();
  if (dirs.size() == 2) return compare(dirs[0], dirs[1], vm);
  if (vm.count("out")) {
    std::fprintf(stderr, "prima report: --out applies to a comparison of two directories\n");
    return kExitBadInput;
  }
  const std::string dir = dirs[0];
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    std::fprintf(stderr, "prima report: %s: no such directory\n", dir.c_str());
    return kExitBadInput;
  }
  std::string kind;
  if (vm.count("kind")) {
    kind = vm["kind"].as<std::string>();
    if (kind != "simulate" && kind != "plan") {
      std::fprintf(stderr, "prima report: --kind %s: expected simulate or plan\n", kind.c_str());
      return kExitBadInput;
    }
  } else if (fs::exists(fs::path(dir) / "plan.json", ec)) {
    kind = "plan";
  } else if (fs::exists(fs::path(dir) / "report.json", ec)) {
    kind = "simulate";
  } else {
    std::fprintf(stderr,
                 "prima report: %s: neither report.json (prima simulate) nor plan.json (prima "
                 "plan) found\n",
                 dir.c_str());
    return kExitBadInput;
  }
  Status st = render_html_report(kind, dir);
  if (!st.ok()) return fail_with("prima report", st);
  std::printf("wrote %s\n", (fs::path(dir) / "report.html").string().c_str());
  return kExitOk;
}

}  // namespace prima::cli
