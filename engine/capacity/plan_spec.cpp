#include "engine/capacity/plan_spec.h"

#include <fmt/format.h>

#include <cmath>
#include <filesystem>

#include "engine/plan/topology.h"

namespace prima::capacity {
namespace fs = std::filesystem;
using config::Json;
using config::JsonReader;

namespace {

// Each dimension of the table reads its listing (or takes its unlisted values); a key no
// dimension reads is an error naming it.
void parse_search(const JsonReader& r, PlanSpec* p) {
  SearchSpace& s = p->search;
  for (const Dimension& d : p->dimensions->dimensions) {
    const bool listed = d.listed_in ? d.listed_in(r) : r.has(d.name);
    s.given[d.name] = listed;
    if (listed) s.listed[d.name] = d.parse(r, *p);
  }
  for (const Dimension& d : p->dimensions->dimensions)
    if (!s.given[d.name]) s.listed[d.name] = d.unlisted ? d.unlisted(s) : std::vector<Json>{Json()};
  r.finish();
}

void parse_slo(const JsonReader& r, PlanSlo* s) {
  s->ttft_p99_s = r.duration_s("ttft_p99", 0);
  s->tpot_p99_s = r.duration_s("tpot_p99", 0);
  s->e2e_p99_s = r.duration_s("e2e_p99", 0);
  s->attainment = r.fraction("attainment", s->attainment);
  if (s->ttft_p99_s <= 0 && s->tpot_p99_s <= 0 && s->e2e_p99_s <= 0)
    r.fail_here("the SLO sets no bound: give at least one of ttft_p99, tpot_p99, e2e_p99");
  r.finish();
}

void parse_rate(const JsonReader& r, RateSearchSpec* s) {
  s->min_rps = r.positive_number("min_rps", s->min_rps);
  s->max_rps = r.non_negative_number("max_rps", 0);
  s->tolerance = r.positive_number("tolerance", s->tolerance);
  s->probe_duration_s = r.duration_s("duration", s->probe_duration_s);
  s->max_drain_s = r.duration_s("max_drain", 0);
  if (s->probe_duration_s <= 0) r.fail("duration", "expected a duration > 0");
  if (s->tolerance >= 1) r.fail("tolerance", "expected a relative tolerance in (0, 1)");
  if (s->max_rps > 0 && s->max_rps < s->min_rps)
    r.fail("max_rps", "max_rps (" + std::to_string(s->max_rps) + ") is below min_rps (" +
                          std::to_string(s->min_rps) + "): the rate range is empty");
  r.finish();
}

void parse_scenario_ref(const JsonReader& r, PlanSpec* p) {
  const Json& v = r.value("scenario");
  if (v.is_string()) {
    std::string path = v.get<std::string>();
    if (!fs::path(path).is_absolute()) path = (fs::path(p->base_dir) / path).string();
    auto j = config::read_json_file(path);
    if (!j.ok()) r.fail("scenario", j.status().message());
    p->scenario = *j;
    p->scenario_file = p->scenario_path = path;
    p->scenario_dir = fs::path(path).parent_path().string();
    if (p->scenario_dir.empty()) p->scenario_dir = ".";
  } else if (v.is_object()) {
    p->scenario = v;
    p->scenario_file = p->file + " (/scenario)";
    p->scenario_dir = p->base_dir;
  } else {
    r.fail("scenario", "expected a scenario file path or an inline scenario object, got " +
                           config::describe(v));
  }
}

}  // namespace

Result<PlanSpec> parse_plan(const Json& j, const std::string& file, const std::string& base_dir) {
  return parse_plan(j, file, base_dir, builtin_dimensions());
}

Result<PlanSpec> parse_plan(const Json& j, const std::string& file, const std::string& base_dir,
                            std::shared_ptr<const DimensionTable> dimensions) {
  PlanSpec p;
  p.dimensions = std::move(dimensions);
  p.file = file;
  p.base_dir = base_dir;
  std::string price_table;
  Status st = config::to_status([&] {
    JsonReader r(j, file);
    p.name = r.string("name", fs::path(file).stem().string());
    r.string("description", "");
    parse_scenario_ref(r, &p);
    parse_slo(r.object("slo"), &p.slo);
    parse_search(r.object("search"), &p);
    if (auto rate = r.optional_object("rate")) parse_rate(*rate, &p.rate);
    if (auto target = r.optional_object("target")) {
      p.target_rps = target->positive_number("rate_rps");
      target->finish();
    }
    price_table = r.string("price_table", "");
    if (auto prices = r.optional_object("prices")) {
      for (const auto& [gpu, price] : prices->json().items()) {
        if (!plan::gpu_by_name(gpu).ok())
          prices->fail(gpu, "unknown GPU type \"" + gpu +
                                "\" (known: " + join_names(plan::gpu_names()) + ")");
        p.prices[gpu] = prices->positive_number(gpu);
      }
      prices->finish();
    }
    r.finish();
  });
  if (!st.ok()) return st;
  if (!price_table.empty() && fs::path(price_table).is_relative())
    price_table = (fs::path(base_dir) / price_table).string();
  auto table = load_price_table(price_table);
  if (!table.ok())
    return Status(table.status().code(), file + ": /price_table: " + table.status().message());
  p.economics = std::move(*table);
  for (const auto& [gpu, e] : p.economics.gpus) p.prices.emplace(gpu, e.price_per_gpu_hour);
  if (p.target_rps > 0) set_target_rate(&p, p.target_rps);
  return p;
}

Status check_economics(const PlanSpec& p, const std::vector<std::string>& gpus) {
  for (const auto& gpu : gpus) {
    if (p.economics.gpus.count(gpu)) continue;
    return invalid_argument(p.economics.file + ": /gpus/" + gpu + ": missing: " + gpu +
                            " is in the search of " + p.file +
                            ", and every GPU searched needs a price and a power entry "
                            "(price_per_gpu_hour, idle_watts, peak_watts and their sources)");
  }
  return ok_status();
}

void set_target_rate(PlanSpec* p, double rps) {
  p->target_rps = rps;
  p->rate.min_rps = p->rate.max_rps = rps;
}

Result<PlanSpec> load_plan(const std::string& path) {
  if (!fs::exists(path)) return not_found(path + ": no such plan file");
  PRIMA_ASSIGN_OR_RETURN(Json j, config::read_json_file(path));
  std::string dir = fs::path(path).parent_path().string();
  return parse_plan(j, path, dir.empty() ? "." : dir);
}

Json slo_json(const PlanSlo& s) {
  Json j = Json::object();
  if (s.ttft_p99_s > 0) j["ttft_p99_s"] = s.ttft_p99_s;
  if (s.tpot_p99_s > 0) j["tpot_p99_s"] = s.tpot_p99_s;
  if (s.e2e_p99_s > 0) j["e2e_p99_s"] = s.e2e_p99_s;
  j["attainment"] = s.attainment;
  return j;
}

}  // namespace prima::capacity
