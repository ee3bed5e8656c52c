// The price and power table (see price_table.h).
#include "engine/capacity/price_table.h"

#include <algorithm>
#include <filesystem>

#include "engine/config/embedded.h"
#include "engine/config/json_reader.h"

namespace prima::capacity {
namespace {

using config::Json;
using config::JsonReader;

GpuEconomics parse_entry(const JsonReader& r) {
  GpuEconomics e;
  e.price_per_gpu_hour = r.positive_number("price_per_gpu_hour");
  e.price_source = r.string("price_source");
  if (!r.has("idle_watts")) r.fail("idle_watts", "missing required field (expected a number >= 0)");
  e.idle_watts = r.non_negative_number("idle_watts", 0);
  e.peak_watts = r.positive_number("peak_watts");
  e.power_source = r.string("power_source");
  if (e.idle_watts > e.peak_watts)
    r.fail("idle_watts", "idle_watts " + config::describe(r.value("idle_watts")) +
                             " exceeds peak_watts " + config::describe(r.value("peak_watts")));
  r.finish();
  return e;
}

}  // namespace

Result<PriceTable> load_price_table(const std::string& path) {
  PriceTable t;
  Json j;
  if (path.empty()) {
    t.file = kDefaultPriceTable;
    auto text = config::embedded_file(kDefaultPriceTable);
    if (!text) return internal_error(std::string(kDefaultPriceTable) + ": not embedded");
    PRIMA_ASSIGN_OR_RETURN(j, config::parse_json_text(std::string(*text), t.file));
  } else {
    t.file = path;
    if (!std::filesystem::exists(path)) return not_found(path + ": no such price table");
    PRIMA_ASSIGN_OR_RETURN(j, config::read_json_file(path));
  }
  Status st = config::to_status([&] {
    JsonReader root(j, t.file);
    root.string("description", "");
    JsonReader gpus = root.object("gpus");
    // Any GPU name: a topology may define its own GPU type inline.
    for (auto it = gpus.json().begin(); it != gpus.json().end(); ++it)
      t.gpus[it.key()] = parse_entry(gpus.object(it.key()));
    gpus.finish();
    root.finish();
  });
  if (!st.ok()) return st;
  return t;
}

double gpu_power_watts(const GpuEconomics& e, double utilization) {
  const double u = std::clamp(utilization, 0.0, 1.0);
  return e.idle_watts + (e.peak_watts - e.idle_watts) * u;
}

double energy_kwh_per_million_tokens(double watts, double output_tokens_per_s) {
  if (!(output_tokens_per_s > 0)) return 0;
  return watts / output_tokens_per_s * 1e6 / 3.6e6;  // joules per token x 1e6 tokens, in kWh
}

}  // namespace prima::capacity
