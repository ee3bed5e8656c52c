#include "engine/capacity/rate_search.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace prima::capacity {
using config::Json;

namespace {

// j[key] when it is a number, else 0 (missing or null).
double number_or_zero(const Json& j, const char* key) {
  return j.contains(key) && j[key].is_number() ? j[key].get<double>() : 0.0;
}

}  // namespace

Json ProbeMetrics::to_json() const {
  if (!ok) return Json{{"ok", false}, {"error", error}};
  Json j{{"ok", true},
         {"ttft_p99_s", ttft_p99_s},
         {"tpot_p99_s", tpot_p99_s},
         {"e2e_p99_s", e2e_p99_s},
         {"attainment", attainment},
         {"goodput_rps", goodput_rps},
         {"throughput_rps", throughput_rps},
         {"output_tokens_per_s", output_tokens_per_s},
         {"tpot_mean_s", tpot_mean_s},
         {"gpu_utilization", gpu_utilization},
         {"submitted", submitted},
         {"completed", completed},
         {"wall_s", wall_s}};
  if (!pool_utilization.empty()) j["pool_utilization"] = pool_utilization;
  return j;
}

ProbeMetrics ProbeMetrics::from_json(const Json& j) {
  ProbeMetrics m;
  m.ok = j.at("ok").get<bool>();
  if (!m.ok) {
    m.error = j.value("error", std::string("unknown error"));
    return m;
  }
  m.ttft_p99_s = j.at("ttft_p99_s").get<double>();
  m.tpot_p99_s = j.at("tpot_p99_s").get<double>();
  m.e2e_p99_s = j.at("e2e_p99_s").get<double>();
  m.attainment = j.at("attainment").get<double>();
  m.goodput_rps = j.at("goodput_rps").get<double>();
  m.throughput_rps = j.at("throughput_rps").get<double>();
  m.output_tokens_per_s = j.at("output_tokens_per_s").get<double>();
  m.tpot_mean_s = number_or_zero(j, "tpot_mean_s");
  m.gpu_utilization = number_or_zero(j, "gpu_utilization");
  if (j.contains("pool_utilization"))
    m.pool_utilization = j.at("pool_utilization").get<std::vector<double>>();
  m.submitted = j.at("submitted").get<std::int64_t>();
  m.completed = j.at("completed").get<std::int64_t>();
  m.wall_s = j.value("wall_s", 0.0);
  return m;
}

ProbeMetrics ProbeMetrics::from_report(const Json& r) {
  ProbeMetrics m;
  m.ok = true;
  m.ttft_p99_s = r.at("latency_s").at("ttft").at("p99").get<double>();
  m.tpot_p99_s = r.at("latency_s").at("tpot").at("p99").get<double>();
  m.e2e_p99_s = r.at("latency_s").at("e2e").at("p99").get<double>();
  m.attainment = r.at("slo").at("attainment").get<double>();
  m.goodput_rps = r.at("slo").at("goodput_rps").get<double>();
  m.throughput_rps = r.at("throughput").at("requests_per_s").get<double>();
  m.output_tokens_per_s = r.at("throughput").at("output_tokens_per_s").get<double>();
  m.tpot_mean_s = number_or_zero(r.at("latency_s").at("tpot"), "mean");
  if (r.contains("gpus")) m.gpu_utilization = number_or_zero(r.at("gpus"), "utilization_mean");
  if (r.contains("deployment") && r.at("deployment").contains("pools"))
    for (const Json& p : r.at("deployment").at("pools"))
      if (p.contains("utilization_mean"))
        m.pool_utilization.push_back(number_or_zero(p, "utilization_mean"));
  m.submitted = r.at("requests").at("submitted").get<std::int64_t>();
  m.completed = r.at("requests").at("completed").get<std::int64_t>();
  return m;
}

bool meets_slo(const PlanSlo& slo, const ProbeMetrics& m, std::vector<std::string>* violations) {
  std::vector<std::string> v;
  if (!m.ok) {
    v.push_back("simulation failed: " + m.error);
  } else {
    auto bound = [&](const char* what, double p99, double b) {
      if (b > 0 && !(p99 <= b))
        v.push_back(fmt::format("{} p99 {:.0f} ms > {:.0f} ms", what, p99 * 1e3, b * 1e3));
    };
    bound("ttft", m.ttft_p99_s, slo.ttft_p99_s);
    bound("tpot", m.tpot_p99_s, slo.tpot_p99_s);
    bound("e2e", m.e2e_p99_s, slo.e2e_p99_s);
    if (m.completed == 0) v.push_back("no request completed");
    if (!(m.attainment >= slo.attainment))
      v.push_back(
          fmt::format("attainment {:.2f}% < {:.2f}%", 100 * m.attainment, 100 * slo.attainment));
  }
  if (violations) *violations = v;
  return v.empty();
}

double slo_distance(const PlanSlo& slo, const ProbeMetrics& m) {
  if (!m.ok) return std::numeric_limits<double>::infinity();
  double d = 0;
  if (slo.ttft_p99_s > 0) d = std::max(d, m.ttft_p99_s / slo.ttft_p99_s);
  if (slo.tpot_p99_s > 0) d = std::max(d, m.tpot_p99_s / slo.tpot_p99_s);
  if (slo.e2e_p99_s > 0) d = std::max(d, m.e2e_p99_s / slo.e2e_p99_s);
  d = std::max(d, slo.attainment / std::max(m.attainment, 1e-9));
  return d;
}

RateSearch::RateSearch(double min_rps, double max_rps, double tolerance)
    : min_(min_rps), max_(std::max(min_rps, max_rps)), tol_(tolerance) {}

std::optional<double> RateSearch::next() const {
  if (probes_ == 0) return min_;
  if (best_ == 0) return std::nullopt;  // min_rps fails: nothing to search
  if (fail_ == 0) {                     // still growing: double up to the upper end
    if (best_ >= max_) return std::nullopt;
    return std::min(best_ * kGrowth, max_);
  }
  if (fail_ <= best_ * (1 + tol_)) return std::nullopt;
  return std::sqrt(best_ * fail_);  // geometric bisection: rates span decades
}

void RateSearch::record(double rate_rps, bool meets) {
  ++probes_;
  if (meets)
    best_ = std::max(best_, rate_rps);
  else
    fail_ = fail_ == 0 ? rate_rps : std::min(fail_, rate_rps);
}

}  // namespace prima::capacity
