// `prima replay`'s flags, help and checks (see replay_options.h).
#include "cli/replay_options.h"

#include <filesystem>

#include "cli/flags.h"
#include "engine/replay/fit_params.h"

namespace po = boost::program_options;
namespace fs = std::filesystem;

namespace prima::cli {
namespace {

// The parameter names, wrapped to lines of at most `width` characters after `indent`.
std::string wrapped_param_names(std::size_t indent, std::size_t width) {
  const std::string names = replay::fit_param_names();
  std::string out(indent, ' '), line;
  std::size_t start = 0;
  for (;;) {
    const std::size_t end = names.find(", ", start);
    const std::string word =
        names.substr(start, end == std::string::npos ? end : end + 1 - start);  // with its comma
    if (!line.empty() && indent + line.size() + 1 + word.size() > width) {
      out += line + "\n" + std::string(indent, ' ');
      line.clear();
    }
    line += (line.empty() ? "" : " ") + word;
    if (end == std::string::npos) break;
    start = end + 2;
  }
  return out + line;
}

}  // namespace

Status ReplayOptions::validate() const {
  if (measured.empty() || scenario.empty())
    return invalid_argument(
        "--measured FILE and --scenario SCENARIO are required (see prima replay --help)");
  if (!fit && (!fit_params.empty() || fit_iterations))
    return invalid_argument("--fit-params and --fit-iterations need --fit");
  if (fit_iterations && *fit_iterations < 1)
    return invalid_argument("--fit-iterations must be >= 1");
  if (measured.size() > 1 && !fit)
    return invalid_argument(
        "several --measured runs need --fit (they are fitted together); replay runs one at a "
        "time without it");
  for (std::size_t i = 0; i < measured.size(); ++i)
    for (std::size_t k = 0; k < i; ++k)
      if (fs::path(measured[i]).lexically_normal() == fs::path(measured[k]).lexically_normal())
        return invalid_argument("--measured " + measured[i] + " is given twice");
  if (fit) {
    auto p = replay::parse_fit_params(fit_params.empty() ? replay::kDefaultFitParams : fit_params);
    if (!p.ok()) return p.status();
  }
  return ok_status();
}

po::options_description replay_flags() {
  static const std::string fit_params_help =
      std::string("the parameters --fit moves, comma-separated (default ") +
      replay::kDefaultFitParams + ")";
  po::options_description opts("prima replay --measured FILE --scenario SCENARIO [options]");
  // clang-format off
  opts.add_options()
      ("help,h", "show this help")
      ("measured,m", po::value<std::vector<std::string>>()->composing(),
       "the measured run: prima bench --save-requests JSONL, prima simulate's requests.csv, or "
       "a CSV with arrival_s, prompt_tokens, output_tokens, ttft_s, e2e_s; with --fit it may be "
       "given more than once, to fit to all the runs together")
      ("scenario,s", po::value<std::string>(),
       "the scenario that describes the measured server (a file or a built-in name); its "
       "workload is replaced by the measured requests")
      ("set", po::value<std::vector<std::string>>()->composing(),
       "override a scenario field: PATH=VALUE (repeatable), e.g. --set calibration=cal.json")
      ("out,o", po::value<std::string>(), "output directory (default out/replay-<scenario name>)")
      ("fit", "fit calibration parameters to the measurement(s); writes DIR/profile.json")
      ("fit-params", po::value<std::string>(), fit_params_help.c_str())
      ("fit-iterations", po::value<int>(), "Nelder-Mead iterations at most (default 60)")
      ("json", "print comparison.json on stdout (the table goes to stderr)")
      ("quiet,q", "no progress on stderr");
  // clang-format on
  return opts;
}

std::string replay_help() {
  return R"(
Replays EXACTLY the measured requests (arrival times, prompt and output lengths) on the
scenario's simulated cluster, one simulation per child process, and compares TTFT, TPOT, ITL,
E2E and queue time at mean, p50, p90 and p99: measured, simulated and the signed relative
error (simulated - measured) / measured. Writes DIR/comparison.json, DIR/comparison.html (CDFs
of measured vs simulated, self-contained), DIR/per_request.csv and DIR/trace.jsonl (the
replayed workload) and prints the table.

--fit moves calibration parameters (perf::Efficiency, docs/cost-model.md) of the scenario's GPU
with Nelder-Mead, one simulation per evaluation, minimising the mean over TTFT, TPOT and E2E
(mean and p90) of ln(simulated / measured)^2; progress per iteration on stderr.
Default parameters: )" +
         std::string(replay::kDefaultFitParams) + R"(.
It writes DIR/profile.json, a hardware profile with its own error as fidelity, which a
scenario reads as "calibration": "DIR/profile.json". With --measured given more than once, the
fit is to all the runs together, each replayed with its own arrivals and lengths (objective:
the mean of the runs' objectives; one simulation per run per evaluation): each run's files go
to DIR/run1/, DIR/run2/, ... in the order given, and DIR/fit.json (the joint fit; --json prints
it) and DIR/profile.json hold the fit. Parameters --fit-params takes:
)" + wrapped_param_names(2, 92) +
         R"(

Time columns and keys carry their unit: FIELD_s, FIELD_ms or FIELD_us (FIELD: arrival, ttft,
tpot, itl, e2e, queue). Requests must be in send order (prima simulate's requests.csv, written
as requests ended, is sorted by arrival).

examples:
  prima bench --url http://127.0.0.1:8000 --request-rate 5 --num-prompts 300 --save-requests run.jsonl
  prima replay --measured run.jsonl --scenario my_server.json --out out/replay
  prima replay -m run.jsonl -s my_server.json --fit --out out/fit     # + out/fit/profile.json
  prima replay -m run.jsonl -s my_server.json --fit --fit-params step_overhead_s,gemm_memory
  prima replay -m low.jsonl -m high.jsonl -s my_server.json --fit --out out/fit2  # both runs
  prima replay -m out/default/requests.csv -s default               # the simulator against itself
  prima replay -m run.jsonl -s my_server.json --set calibration=out/fit/profile.json --json

Exit codes: 0 ok, 1 a simulation failed, 2 bad input (one line naming the file, line and field,
or the flag).
)";
}

ReplayOptions replay_options(const po::variables_map& vm) {
  ReplayOptions o;
  get_flag(vm, {"measured"}, &o.measured);
  get_flag(vm, {"scenario"}, &o.scenario);
  get_flag(vm, {"set"}, &o.sets);
  get_flag(vm, {"out"}, &o.out_dir);
  o.fit = vm.count("fit") > 0;
  get_flag(vm, {"fit-params"}, &o.fit_params);
  if (vm.count("fit-iterations")) o.fit_iterations = vm["fit-iterations"].as<int>();
  o.json = vm.count("json") > 0;
  o.quiet = vm.count("quiet") > 0;
  return o;
}

}  // namespace prima::cli
