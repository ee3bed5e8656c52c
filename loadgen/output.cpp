// JSON and table output of a benchmark (see output.h).
#include "loadgen/output.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

namespace prima::loadgen {
namespace {

using OJson = nlohmann::ordered_json;

OJson summary_json(const metrics::Summary& s) {
  return OJson{{"mean", s.mean}, {"p50", s.p50}, {"p90", s.p90}, {"p99", s.p99}, {"max", s.max}};
}

std::string ms(double s) {
  return fmt::format("{:.2f}", s * 1e3);
}

}  // namespace

std::vector<std::pair<std::string, std::size_t>> first_errors(
    const std::vector<RequestResult>& results, std::size_t limit) {
  std::map<std::string, std::size_t> count;
  std::vector<std::string> order;
  for (const auto& r : results) {
    if (r.ok) continue;
    if (count[r.error]++ == 0) order.push_back(r.error);
  }
  std::vector<std::pair<std::string, std::size_t>> out;
  for (const auto& e : order) out.emplace_back(e, count[e]);
  std::stable_sort(out.begin(), out.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  if (out.size() > limit) out.resize(limit);
  return out;
}

OJson bench_json(const BenchInfo& info, const BenchStats& s,
                 const std::vector<RequestResult>& results) {
  OJson j;
  j["tool"] = "prima bench";
  j["url"] = info.url;
  j["endpoint"] = info.endpoint;
  j["model"] = info.model;
  j["stream"] = info.stream;
  j["seed"] = info.seed;
  j["workload"] = info.workload;
  j["requests"] =
      OJson{{"submitted", s.submitted}, {"completed", s.completed}, {"failed", s.failed}};
  OJson errs = OJson::array();
  for (const auto& [msg, n] : first_errors(results, 5))
    errs.push_back(OJson{{"message", msg}, {"count", n}});
  j["errors"] = errs;
  OJson lat;
  if (info.stream) {
    lat["ttft"] = summary_json(s.ttft);
    lat["tpot"] = summary_json(s.tpot);
    lat["itl"] = summary_json(s.itl);
  }
  lat["e2e"] = summary_json(s.e2e);
  if (s.completed > 0 && s.server_queue.count == s.completed)
    lat["queue"] = summary_json(s.server_queue);
  j["latency_s"] = lat;
  j["throughput"] = OJson{{"requests_per_s", s.requests_per_s},
                          {"output_tokens_per_s", s.output_tokens_per_s},
                          {"input_tokens_per_s", s.input_tokens_per_s}};
  j["tokens"] = OJson{{"input", s.input_tokens}, {"output", s.output_tokens}};
  OJson bounds = OJson::object();
  if (info.slo.ttft_s > 0) bounds["ttft_s"] = info.slo.ttft_s;
  if (info.slo.tpot_s > 0) bounds["tpot_s"] = info.slo.tpot_s;
  if (info.slo.e2e_s > 0) bounds["e2e_s"] = info.slo.e2e_s;
  OJson slo{{"attainment", s.slo_attainment},
            {"goodput_rps", s.goodput_rps},
            {"met", s.slo_met},
            {"bounds", bounds}};
  for (auto it = bounds.begin(); it != bounds.end(); ++it) slo[it.key()] = it.value();
  if (!s.slo_unchecked.empty()) slo["unchecked"] = s.slo_unchecked;
  j["slo"] = slo;
  if (s.server_ttft.count > 0 || s.server_e2e.count > 0) {
    OJson srv;
    srv["requests"] = std::max(s.server_ttft.count, s.server_e2e.count);
    if (s.server_ttft.count > 0) srv["ttft"] = summary_json(s.server_ttft);
    if (s.server_e2e.count > 0) srv["e2e"] = summary_json(s.server_e2e);
    if (s.server_queue.count > 0) srv["queue"] = summary_json(s.server_queue);
    if (s.ttft_client_minus_server.count > 0)
      srv["ttft_client_minus_server"] = summary_json(s.ttft_client_minus_server);
    j["server_latency_s"] = srv;
  }
  j["client"] = OJson{{"max_concurrency", info.max_workers},
                      {"send_lateness_s", summary_json(s.send_lateness)}};
  j["duration_s"] = s.duration_s;
  j["wall_s"] = info.wall_s;
  return j;
}

std::string bench_table(const BenchInfo& info, const BenchStats& s,
                        const std::vector<RequestResult>& results) {
  std::string o;
  auto line = [&](const std::string& k, const std::string& v) {
    o += fmt::format("{:<34}{}\n", k, v);
  };
  o += "============ prima bench result ============\n";
  line("Endpoint:", fmt::format("{} {} ({})", info.url, info.endpoint,
                                info.stream ? "streaming" : "not streaming"));
  line("Model:", info.model);
  if (info.workload.contains("description"))
    line("Workload:", info.workload["description"].get<std::string>());
  line("Requests submitted:", fmt::format("{}", s.submitted));
  line("Requests completed:", fmt::format("{}", s.completed));
  line("Requests failed:", fmt::format("{}", s.failed));
  line("Duration (s):", fmt::format("{:.2f}", s.duration_s));
  line("Total input tokens:", fmt::format("{}", s.input_tokens));
  line("Total output tokens:", fmt::format("{}", s.output_tokens));
  line("Request throughput (req/s):", fmt::format("{:.2f}", s.requests_per_s));
  line("Output token throughput (tok/s):", fmt::format("{:.2f}", s.output_tokens_per_s));
  line("Input token throughput (tok/s):", fmt::format("{:.2f}", s.input_tokens_per_s));
  if (info.slo.any() || s.slo_met != s.completed) {
    line("SLO attainment:", fmt::format("{:.4f}", s.slo_attainment));
    line("Goodput (req/s):", fmt::format("{:.2f}", s.goodput_rps));
  }
  o += fmt::format("{:<10}{:>10}{:>10}{:>10}{:>10}{:>10}   (ms)\n", "", "mean", "p50", "p90", "p99",
                   "max");
  auto row = [&](const char* name, const metrics::Summary& m) {
    o += fmt::format("{:<10}{:>10}{:>10}{:>10}{:>10}{:>10}\n", name, ms(m.mean), ms(m.p50),
                     ms(m.p90), ms(m.p99), ms(m.max));
  };
  if (info.stream) {
    row("TTFT", s.ttft);
    row("TPOT", s.tpot);
    row("ITL", s.itl);
  }
  row("E2E", s.e2e);
  if (s.server_ttft.count > 0) row("srv TTFT", s.server_ttft);
  if (s.server_e2e.count > 0) row("srv E2E", s.server_e2e);
  if (s.server_queue.count > 0) row("srv queue", s.server_queue);
  const auto errs = first_errors(results, 5);
  if (!errs.empty()) {
    o += "errors (first distinct ones):\n";
    for (const auto& [m, n] : errs) o += fmt::format("  {} x {}\n", n, m);
  }
  o += "============================================\n";
  return o;
}

}  // namespace prima::loadgen
