// PlanSpec: a capacity-planning request (`prima plan PLAN.json`), parsed strictly: the base
// scenario (a path relative to the plan file, or an inline object), the SLO to hold (p99
// bounds and an attainment target), the search space (the values of each dimension of the
// table, dimension.h), the rate search range and GPU-hour prices. Schema and semantics:
// docs/plan.md. Plain values; thread-compatible.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "engine/capacity/dimension.h"
#include "engine/capacity/price_table.h"
#include "engine/config/json_reader.h"
#include "engine/core/status.h"

namespace prima::capacity {

// A configuration meets the plan's SLO at a rate when every p99 bound that is set (> 0) holds
// and the share of requests meeting every bound is at least `attainment`.
struct PlanSlo {
  double ttft_p99_s = 0;
  double tpot_p99_s = 0;
  double e2e_p99_s = 0;
  double attainment = 0.99;
};

struct RateSearchSpec {
  double min_rps = 0.1;
  double max_rps = 0;       // 0: up to the roofline bound of each configuration
  double tolerance = 0.05;  // relative width at which the bisection stops
  double probe_duration_s = 60;
  double max_drain_s = 0;  // 0: 2 x probe_duration_s + 60 s
};

struct PlanSpec {
  std::string name;
  std::string file;      // the plan file (messages)
  std::string base_dir;  // the plan file's directory
  // The base scenario as JSON, where it came from (file for messages) and its directory
  // (relative paths inside it). scenario_path is "" when the scenario is inline.
  config::Json scenario;
  std::string scenario_file, scenario_dir, scenario_path;
  PlanSlo slo;
  // The dimensions searched (dimension.h; the built-in table unless a caller gives its own) and
  // the values the plan lists for each.
  std::shared_ptr<const DimensionTable> dimensions = builtin_dimensions();
  SearchSpace search;
  RateSearchSpec rate;
  // Dollars per GPU-hour by GPU name: the price table's, overridden by the plan's "prices".
  std::map<std::string, double> prices;
  // "price_table" (a path relative to the plan file; default: topologies/prices.json,
  // embedded): prices and the power model of each GPU type (price_table.h).
  PriceTable economics;
  // "target": {"rate_rps": R} (or `prima plan --target-rate R`): the question becomes "the
  // smallest and the cheapest configuration meeting the SLO at R"; every configuration is
  // simulated at R (rate.min_rps = rate.max_rps = R). 0: no target (the rate search).
  double target_rps = 0;
};

// Every GPU type in `gpus` (those of the search) has a price and a power entry: else an
// invalid_argument naming the price table and the JSON path of the missing entry.
Status check_economics(const PlanSpec& p, const std::vector<std::string>& gpus);

// Sets the target rate (> 0) and the rate range to it.
void set_target_rate(PlanSpec* p, double rps);

// Reads and parses a plan file. Errors name the file and the JSON path.
Result<PlanSpec> load_plan(const std::string& path);
Result<PlanSpec> parse_plan(const config::Json& j, const std::string& file,
                            const std::string& base_dir);
// The same over another table of dimensions (a search with dimensions of its own).
Result<PlanSpec> parse_plan(const config::Json& j, const std::string& file,
                            const std::string& base_dir,
                            std::shared_ptr<const DimensionTable> dimensions);

// The plan's SLO as JSON ({"ttft_p99_s", ..., "attainment"}).
config::Json slo_json(const PlanSlo& s);

}  // namespace prima::capacity
