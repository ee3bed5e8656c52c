#include "engine/capacity/plan_spec.h"

#include <fmt/format.h>

#include <cmath>
#include <filesystem>

#include "engine/model/model_spec.h"
#include "engine/plan/topology.h"
#include "engine/scenario/speculative.h"

namespace prima::capacity {
namespace fs = std::filesystem;
using config::Json;
using config::JsonReader;

namespace {

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

// A required-if-present, non-empty array at `key`; each element checked by `each`.
template <typename T, typename Fn>
std::vector<T> list(const JsonReader& r, const std::string& key, const char* expected, Fn each) {
  const Json& v = r.value(key);
  if (!v.is_array()) r.fail(key, std::string("expected an array of ") + expected);
  if (v.empty()) r.fail(key, std::string("empty list: the search space has no ") + key + " to try");
  std::vector<T> out;
  for (std::size_t i = 0; i < v.size(); ++i) {
    std::optional<T> x = each(v[i]);
    if (!x)
      r.fail(key + "/" + std::to_string(i),
             std::string("expected ") + expected + ", got " + config::describe(v[i]));
    out.push_back(*x);
  }
  return out;
}

std::vector<int> positive_ints(const JsonReader& r, const std::string& key) {
  return list<int>(r, key, "positive integers", [](const Json& e) -> std::optional<int> {
    if (!e.is_number_integer() || e.get<long long>() <= 0 || e.get<long long>() > 1 << 20)
      return std::nullopt;
    return e.get<int>();
  });
}

std::vector<bool> bools(const JsonReader& r, const std::string& key) {
  return list<bool>(r, key, "booleans", [](const Json& e) -> std::optional<bool> {
    if (!e.is_boolean()) return std::nullopt;
    return e.get<bool>();
  });
}

void parse_search(const JsonReader& r, SearchSpace* s) {
  s->topologies = list<Json>(r, "topologies", "topology names or objects",
                             [](const Json& e) -> std::optional<Json> {
                               if (!e.is_string() && !e.is_object()) return std::nullopt;
                               return e;
                             });
  // Resolve each topology now, so an unknown name or GPU type is a message about the plan.
  for (std::size_t i = 0; i < s->topologies.size(); ++i) {
    Json holder = {{"topology", s->topologies[i]}};
    JsonReader h(holder, r.file(), r.path_of("topologies/" + std::to_string(i)));
    plan::resolve_topology(h, "topology");
  }
  // GPU names from gpus.json: the topology's type (gpu_types) or a pool's (prefill_gpu,
  // decode_gpu).
  auto gpu_list = [&](const char* key, std::vector<std::string>* out) {
    if (!r.has(key)) return;
    *out = list<std::string>(r, key, "GPU names", [](const Json& e) -> std::optional<std::string> {
      if (!e.is_string()) return std::nullopt;
      return e.get<std::string>();
    });
    for (std::size_t i = 0; i < out->size(); ++i)
      if (!plan::gpu_by_name((*out)[i]).ok())
        r.fail(std::string(key) + "/" + std::to_string(i),
               "unknown GPU type \"" + (*out)[i] + "\" (known: " + join(plan::gpu_names()) + ")");
  };
  gpu_list("gpu_types", &s->gpu_types);
  if (r.has("gpus")) s->gpus = positive_ints(r, "gpus");
  if (r.has("tensor_parallel")) s->tensor_parallel = positive_ints(r, "tensor_parallel");
  if (r.has("pipeline_parallel")) s->pipeline_parallel = positive_ints(r, "pipeline_parallel");
  if (r.has("replicas")) {
    const Json& v = r.value("replicas");
    if (v.is_string()) {
      if (v.get<std::string>() != "fill")
        r.fail("replicas",
               "expected \"fill\" or a list of positive integers, got " + config::describe(v));
      s->replicas_fill = true;
    } else {
      s->replicas = positive_ints(r, "replicas");
    }
  } else {
    s->replicas = {1};
  }
  if (r.has("quantization")) {
    const auto names = model::quantization_names();
    s->quantization =
        list<std::string>(r, "quantization", ("quantization names (" + join(names) + ")").c_str(),
                          [&](const Json& e) -> std::optional<std::string> {
                            if (!e.is_string()) return std::nullopt;
                            for (const auto& n : names)
                              if (n == e.get<std::string>()) return n;
                            return std::nullopt;
                          });
  }
  if (r.has("max_num_seqs")) s->max_num_seqs = positive_ints(r, "max_num_seqs");
  if (r.has("max_num_batched_tokens"))
    s->max_num_batched_tokens = positive_ints(r, "max_num_batched_tokens");
  if (r.has("priority_scheduling")) s->priority_scheduling = bools(r, "priority_scheduling");
  if (r.has("disaggregation")) s->disaggregation = bools(r, "disaggregation");
  if (r.has("data_parallel")) s->data_parallel = positive_ints(r, "data_parallel");
  if (r.has("expert_parallel")) s->expert_parallel = bools(r, "expert_parallel");
  if (r.has("context_parallel")) s->context_parallel = positive_ints(r, "context_parallel");
  if (r.has("expert_tensor_parallel"))
    s->expert_tensor_parallel = positive_ints(r, "expert_tensor_parallel");
  if (r.has("prefill_tensor_parallel"))
    s->prefill_tensor_parallel = positive_ints(r, "prefill_tensor_parallel");
  if (r.has("decode_tensor_parallel"))
    s->decode_tensor_parallel = positive_ints(r, "decode_tensor_parallel");
  gpu_list("prefill_gpu", &s->prefill_gpu);
  gpu_list("decode_gpu", &s->decode_gpu);
  if (r.has("prefill_share")) {
    s->prefill_share = r.numbers("prefill_share");
    for (std::size_t i = 0; i < s->prefill_share.size(); ++i)
      if (!(s->prefill_share[i] > 0 && s->prefill_share[i] < 1))
        r.fail(
            "prefill_share/" + std::to_string(i),
            "expected a share of the GPUs in (0, 1), got " + std::to_string(s->prefill_share[i]));
  }
  if (r.has("speculative")) {
    const Json& v = r.value("speculative");
    if (!v.is_array() || v.empty())
      r.fail("speculative",
             "expected a non-empty list of null (off) or speculative objects "
             "(docs/scenario-format.md), got " +
                 config::describe(v));
    for (std::size_t i = 0; i < v.size(); ++i) {
      if (!v[i].is_null() && !v[i].is_object())
        r.fail("speculative", i, "expected null or an object, got " + config::describe(v[i]));
      s->speculative.push_back(v[i]);
    }
  }
  r.finish();
}

// Each speculative entry of the search parses against the base scenario's model, so a bad
// one names the plan file and its path rather than pruning every configuration.
void check_speculative(const PlanSpec& p) {
  if (p.search.speculative.empty()) return;
  JsonReader scenario(p.scenario, p.scenario_file);
  const model::ModelSpec target = model::parse_model(scenario, "model");
  for (std::size_t i = 0; i < p.search.speculative.size(); ++i) {
    const Json& e = p.search.speculative[i];
    if (e.is_object())
      scenario::parse_speculative(JsonReader(e, p.file, fmt::format("/search/speculative/{}", i)),
                                  target);
  }
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
  PlanSpec p;
  p.file = file;
  p.base_dir = base_dir;
  std::string price_table;
  Status st = config::to_status([&] {
    JsonReader r(j, file);
    p.name = r.string("name", fs::path(file).stem().string());
    r.string("description", "");
    parse_scenario_ref(r, &p);
    parse_slo(r.object("slo"), &p.slo);
    parse_search(r.object("search"), &p.search);
    check_speculative(p);
    if (auto rate = r.optional_object("rate")) parse_rate(*rate, &p.rate);
    if (auto target = r.optional_object("target")) {
      p.target_rps = target->positive_number("rate_rps");
      target->finish();
    }
    price_table = r.string("price_table", "");
    if (auto prices = r.optional_object("prices")) {
      for (const auto& [gpu, price] : prices->json().items()) {
        if (!plan::gpu_by_name(gpu).ok())
          prices->fail(gpu,
                       "unknown GPU type \"" + gpu + "\" (known: " + join(plan::gpu_names()) + ")");
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
