// PriceTable: what each GPU type costs to rent (dollars per GPU-hour) and draws (idle and
// peak watts), for `prima plan`'s cost and energy figures: topologies/prices.json (embedded)
// unless a plan names another file. A power model turns a simulated busy fraction into
// watts. Schema: docs/plan.md ("Prices and power"). Plain values; thread-compatible.
#pragma once

#include <map>
#include <string>

#include "engine/core/status.h"

namespace prima::capacity {

struct GpuEconomics {
  double price_per_gpu_hour = 0;  // dollars
  double idle_watts = 0, peak_watts = 0;
  std::string price_source, power_source;
};

struct PriceTable {
  std::string file;  // where the table came from, for messages
  std::map<std::string, GpuEconomics> gpus;
};

inline constexpr char kDefaultPriceTable[] = "topologies/prices.json";

// Reads a price table: `path` relative to the working directory, or kDefaultPriceTable's
// embedded copy when path is "". GPU names are free (gpus.json's, or a GPU type a topology
// defines inline); every entry needs all five fields, prices > 0 and 0 <= idle_watts <=
// peak_watts. Errors name the file and the JSON path.
Result<PriceTable> load_price_table(const std::string& path = "");

// Watts one GPU draws at a busy fraction u (clamped to [0, 1]): idle + (peak - idle) x u.
double gpu_power_watts(const GpuEconomics& e, double utilization);
// kWh per million output tokens drawing `watts` while producing output_tokens_per_s (0 when
// nothing is produced).
double energy_kwh_per_million_tokens(double watts, double output_tokens_per_s);

}  // namespace prima::capacity
