// `prima plan PLAN.json [--out DIR] [--jobs N] [--shard i/n]`: capacity search under an SLO.
// Option parsing and help; the options are cli/plan_options.h, the search cli/plan_runner.cpp.
#include <boost/program_options.hpp>

#include "cli/commands.h"
#include "cli/flags.h"
#include "cli/plan_options.h"
#include "cli/plan_runner.h"

namespace po = boost::program_options;

namespace prima::cli {
namespace {

constexpr const char* kHelp = R"(
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
  prima plan my_plan.json --out out/plan --emit-helm-values out/plan/values.yaml
      # then: helm install llm deploy/helm/prima -f out/plan/values.yaml --set model.url=...

Exit codes: 0 ok (also when no configuration meets the SLO: plan.json lists the closest),
1 the run failed or was stopped, 2 bad input (the message names the file and JSON path).
)";

}  // namespace

int cmd_plan(const Args& args) {
  CommandLine cl{"prima plan", plan_flags(), plan_hidden_flags(), {}, kHelp};
  cl.positional.add("plan", 1);
  po::variables_map vm;
  if (auto done = parse_command_line(cl, args, &vm)) return *done;
  const PlanOptions o = plan_options(vm);
  if (Status st = o.validate(); !st.ok()) return fail_with("prima plan", st);
  return run_plan(o);
}

}  // namespace prima::cli
