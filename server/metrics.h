// ServerMetrics: the Prometheus metrics of `prima serve` (GET /metrics, /prima/metrics), on
// prometheus-cpp, named like vLLM's with the prefix "prima:":
//   histograms  prima:time_to_first_token_seconds, prima:inter_token_latency_seconds,
//               prima:e2e_request_latency_seconds, prima:request_queue_time_seconds
//   counters    prima:prompt_tokens_total, prima:generation_tokens_total,
//               prima:request_outcomes_total{outcome=completed|rejected|failed|cancelled},
//               prima:num_preemptions_total
//   gauges      prima:num_requests_running, prima:num_requests_waiting,
//               prima:kv_cache_usage_perc (0..1), prima:gpu_utilization_perc (0..1, busy GPU
//               time over the last second or more of engine time)
// Per-request series are labelled {model, priority}; gauges {model}. Times are engine time
// (simulated seconds with the sim backend).
// Thread-safety: the recording calls run on the engine's loop (through the EngineBridge);
// text() may be called from any thread (prometheus-cpp metrics are thread-safe).
#pragma once

#include <array>
#include <memory>
#include <string>

#include "engine/core/request.h"

namespace prometheus {
class Registry;
class Histogram;
class Counter;
class Gauge;
}  // namespace prometheus

namespace prima::server {

class ServerMetrics {
 public:
  explicit ServerMetrics(const std::string& model);
  ~ServerMetrics();

  // Loop thread.
  void on_token(Priority p, double itl_s);  // itl_s < 0: the first token
  void on_end(const Sequence& s);
  // Engine state; preemptions and busy GPU-seconds are running totals.
  void on_state(double now_s, int running, int waiting, double kv_usage,
                std::int64_t preemptions_total, double busy_gpu_s_total, int gpus);

  // Any thread: the Prometheus text exposition format (version 0.0.4).
  std::string text() const;

 private:
  static constexpr int kOutcomes = 4;  // completed, rejected, failed, cancelled
  struct PerPriority {
    prometheus::Histogram *ttft = nullptr, *itl = nullptr, *e2e = nullptr, *queue = nullptr;
    prometheus::Counter *prompt_tokens = nullptr, *generation_tokens = nullptr;
    std::array<prometheus::Counter*, kOutcomes> outcomes{};
  };
  std::shared_ptr<prometheus::Registry> reg_;
  std::array<PerPriority, kNumPriorities> by_prio_;
  prometheus::Gauge *running_ = nullptr, *waiting_ = nullptr, *kv_ = nullptr, *gpu_ = nullptr;
  prometheus::Counter* preemptions_ = nullptr;
  std::int64_t preemptions_seen_ = 0;
  double util_mark_s_ = -1, util_mark_busy_ = 0;
};

}  // namespace prima::server
