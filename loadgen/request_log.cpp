// The per-request JSONL log of a benchmark (request_log.h).
#include "loadgen/request_log.h"

#include <algorithm>

namespace prima::loadgen {

using OJson = nlohmann::ordered_json;

OJson request_log_header(const BenchInfo& info, std::size_t requests) {
  return OJson{{"format", kRequestLogFormat}, {"version", kRequestLogVersion},
               {"tool", "prima bench"},       {"url", info.url},
               {"endpoint", info.endpoint},   {"model", info.model},
               {"stream", info.stream},       {"seed", info.seed},
               {"workload", info.workload},   {"requests", requests}};
}

OJson request_log_record(const RequestResult& r) {
  OJson j;
  j["id"] = r.plan.index;
  j["arrival_s"] = r.send_s;
  j["due_s"] = r.plan.due_s;
  j["prompt_tokens"] = r.prompt_tokens > 0 ? r.prompt_tokens : r.plan.prompt_tokens;
  j["output_tokens"] = r.output_tokens;
  j["max_tokens"] = r.plan.output_tokens;
  j["ok"] = r.ok;
  j["http_status"] = r.http_status;
  j["ttft_s"] = r.ok && r.has_ttft() ? OJson(r.ttft_s()) : OJson(nullptr);
  j["tpot_s"] = r.ok && r.has_tpot() ? OJson(r.tpot_s()) : OJson(nullptr);
  j["e2e_s"] = r.ok ? OJson(r.e2e_s()) : OJson(nullptr);
  j["itl_s"] = r.ok ? r.itl_s : std::vector<double>{};
  if (r.server.has_queue) j["queue_s"] = r.server.queue_s;
  if (r.server.has_ttft) j["server_ttft_s"] = r.server.ttft_s;
  if (r.server.has_e2e) j["server_e2e_s"] = r.server.e2e_s;
  if (r.plan.send_qos) {
    j["priority"] = priority_name(r.plan.priority);
    if (r.plan.sla_s > 0) j["sla_s"] = r.plan.sla_s;
  }
  if (!r.ok) j["error"] = r.error;
  return j;
}

std::string request_log(const BenchInfo& info, const std::vector<RequestResult>& results) {
  std::vector<const RequestResult*> order;
  for (const auto& r : results) order.push_back(&r);
  std::stable_sort(order.begin(), order.end(), [](const RequestResult* a, const RequestResult* b) {
    return a->send_s < b->send_s;
  });
  // A server's error text need not be UTF-8: replace what is not rather than throw.
  auto line = [](const OJson& j) {
    return j.dump(-1, ' ', false, OJson::error_handler_t::replace) + "\n";
  };
  std::string out = line(request_log_header(info, results.size()));
  for (const RequestResult* r : order) out += line(request_log_record(*r));
  return out;
}

}  // namespace prima::loadgen
