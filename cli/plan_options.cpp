// `prima plan`'s flags and their checks (see plan_options.h).
#include "cli/plan_options.h"

#include <fmt/format.h>

#include <cstdio>
#include <thread>

#include "cli/flags.h"

namespace po = boost::program_options;

namespace prima::cli {

Status PlanOptions::validate() const {
  if (plan_path.empty()) return invalid_argument("missing PLAN.json (see prima plan --help)");
  if (jobs < 1) return invalid_argument(fmt::format("--jobs {}: expected at least 1", jobs));
  if (shard_count < 1 || shard_index < 0 || shard_index >= shard_count)
    return invalid_argument(
        fmt::format("--shard {}: expected i/n with 0 <= i < n, e.g. 3/16",
                    shard.empty() ? fmt::format("{}/{}", shard_index, shard_count) : shard));
  if (target_given && !(target_rps > 0))
    return invalid_argument(
        fmt::format("--target-rate {:g}: expected a rate > 0 (req/s)", target_rps));
  if (!helm_values_path.empty() && shard_count > 1)
    return invalid_argument(
        "--emit-helm-values needs the whole ranking: give it to the merging run (without "
        "--shard)");
  return ok_status();
}

po::options_description plan_flags() {
  po::options_description opts("prima plan PLAN.json [options]");
  // clang-format off
  opts.add_options()
      ("help,h", "show this help")
      ("out,o", po::value<std::string>(), "output directory (default: out/plan-<plan name>)")
      ("jobs,j", po::value<int>(), "simulations run in parallel (default: the number of cores)")
      ("shard", po::value<std::string>(),
       "i/n: search only shard i (0-based) of n of the configurations")
      ("target-rate", po::value<double>(),
       "R: the smallest and the cheapest configuration meeting the SLO at R req/s (each one "
       "simulated at R; overrides the plan's \"target\")")
      ("emit-helm-values", po::value<std::string>(),
       "FILE: write the best aggregated configuration as values of the Helm chart "
       "deploy/helm/prima, and its scenario as FILE.sim.yaml for the sim backend "
       "(docs/deploy.md)")
      ("quiet,q", "no progress bar on stderr");
  // clang-format on
  return opts;
}

po::options_description plan_hidden_flags() {
  po::options_description hidden;
  hidden.add_options()("plan", po::value<std::string>(), "plan file")(
      "max-simulations", po::value<long long>(), "stop after N new simulations (tests)");
  return hidden;
}

PlanOptions plan_options(const po::variables_map& vm) {
  PlanOptions o;
  get_flag(vm, {"plan"}, &o.plan_path);
  get_flag(vm, {"out"}, &o.out_dir);
  get_flag(vm, {"emit-helm-values"}, &o.helm_values_path);
  if (vm.count("target-rate")) {
    o.target_given = true;
    o.target_rps = vm["target-rate"].as<double>();
  }
  const unsigned cores = std::thread::hardware_concurrency();
  o.jobs = vm.count("jobs") ? vm["jobs"].as<int>() : static_cast<int>(cores ? cores : 1);
  if (vm.count("shard")) {
    o.shard = vm["shard"].as<std::string>();
    char extra = 0;
    if (std::sscanf(o.shard.c_str(), "%d/%d%c", &o.shard_index, &o.shard_count, &extra) != 2)
      o.shard_index = -1;  // not i/n: validate() says so
  }
  o.quiet = vm.count("quiet") > 0;
  if (vm.count("max-simulations")) o.max_simulations = vm["max-simulations"].as<long long>();
  return o;
}

}  // namespace prima::cli
