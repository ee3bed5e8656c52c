// The `prima plan` command around the planner (engine/capacity/planner.h): loads the plan,
// runs the planner on a sim::ProbePool of --jobs child processes with a progress bar on
// stderr, then prints the ranking, renders DIR/report.html and writes the Helm values.
// Not thread-safe (forks).
#pragma once

#include <string>

#include "cli/plan_options.h"
#include "engine/config/json_reader.h"

namespace prima::cli {

// Returns the process exit code (0 ok, 1 failure or stopped early, 2 bad input).
int run_plan(const PlanOptions& opts);

// Prints the ranking (or the closest candidates) of a plan.json to stdout (plan_output.cpp).
void print_plan_summary(const config::Json& plan, const std::string& out_dir);

}  // namespace prima::cli
