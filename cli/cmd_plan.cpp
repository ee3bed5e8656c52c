// `prima plan PLAN.json [--out DIR] [--jobs N] [--shard i/n]`: capacity search under an SLO.
// Option parsing and help; the search itself is cli/plan_runner.cpp.
#include <boost/program_options.hpp>
#include <cstdio>
#include <iostream>
#include <thread>

#include "cli/commands.h"
#include "cli/plan_runner.h"

namespace po = boost::program_options;

namespace prima::cli {

int cmd_plan(const Args& args) {
  po::options_description opts("prima plan PLAN.json [options]");
  opts.add_options()("help,h", "show this help")(
      "out,o", po::value<std::string>(), "output directory (default: out/plan-<plan name>)")(
      "jobs,j", po::value<int>(), "simulations run in parallel (default: the number of cores)")(
      "shard", po::value<std::string>(),
      "i/n: search only shard i (0-based) of n of the configurations")("quiet,q",
                                                                       "no progress bar on stderr");
  po::options_description hidden;
  hidden.add_options()("plan", po::value<std::string>(), "plan file")(
      "max-simulations", po::value<long long>(), "stop after N new simulations (tests)");
  po::options_description all;
  all.add(opts).add(hidden);
  po::positional_options_description pos;
  pos.add("plan", 1);
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(args).options(all).positional(pos).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    std::fprintf(stderr, "prima plan: %s (see prima plan --help)\n", e.what());
    return kExitBadInput;
  }
  if (vm.count("help")) {
    std::cout << opts << R"(
Finds, for each configuration of the plan's search space (topology, GPU type, TP x PP,
replicas, quantization, batch limits, priority scheduling, disaggregation), the highest request
rate that meets the plan's SLO, by simulating it, and ranks them by goodput per GPU (and cost
per million output tokens where the plan gives GPU-hour prices). Configurations that cannot fit
in memory or cannot carry min_rps by a roofline bound are pruned first, with the reason.
Each simulation runs in its own process; results stream to DIR/results.jsonl, so rerunning the
same command after an interruption resumes where it stopped. Writes DIR/plan.json (ranked,
pruned, failed_slo) and DIR/report.html. Format and details: docs/plan.md.

examples:
  prima plan scenarios/plans/llama2_70b_bitbrick.json --out out/plan --jobs 2
  prima plan my_plan.json --shard 3/16 --out /results     # one shard (e.g. a Slurm array task)
  prima plan my_plan.json --out /results                   # merges the shards' results

Exit codes: 0 ok (also when no configuration meets the SLO: plan.json lists the closest),
1 the run failed or was stopped, 2 bad input (the message names the file and JSON path).
)";
    return kExitOk;
  }
  if (!vm.count("plan")) {
    std::fprintf(stderr, "prima plan: missing PLAN.json (see prima plan --help)\n");
    return kExitBadInput;
  }
  PlanRunOptions o;
  o.plan_path = vm["plan"].as<std::string>();
  if (vm.count("out")) o.out_dir = vm["out"].as<std::string>();
  const unsigned cores = std::thread::hardware_concurrency();
  o.jobs = vm.count("jobs") ? vm["jobs"].as<int>() : static_cast<int>(cores ? cores : 1);
  if (o.jobs < 1) {
    std::fprintf(stderr, "prima plan: --jobs %d: expected at least 1\n", o.jobs);
    return kExitBadInput;
  }
  if (vm.count("shard")) {
    const std::string s = vm["shard"].as<std::string>();
    int i = -1, n = 0;
    char extra = 0;
    if (std::sscanf(s.c_str(), "%d/%d%c", &i, &n, &extra) != 2 || n < 1 || i < 0 || i >= n) {
      std::fprintf(stderr, "prima plan: --shard %s: expected i/n with 0 <= i < n, e.g. 3/16\n",
                   s.c_str());
      return kExitBadInput;
    }
    o.shard_index = i;
    o.shard_count = n;
  }
  o.quiet = vm.count("quiet") > 0;
  if (vm.count("max-simulations")) o.max_simulations = vm["max-simulations"].as<long long>();
  return run_plan(o);
}

}  // namespace prima::cli
