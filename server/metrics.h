// ServerMetrics: the Prometheus metrics of `prima serve` (GET /metrics, /prima/metrics), on
// prometheus-cpp. prima's own families, named like vLLM's with the prefix "prima:":
//   histograms  prima:time_to_first_token_seconds, prima:inter_token_latency_seconds,
//               prima:e2e_request_latency_seconds, prima:request_queue_time_seconds
//   counters    prima:prompt_tokens_total, prima:generation_tokens_total,
//               prima:flops_total (useful FLOPs of the steps, all GPUs: rate() / 1e12 is the
//               TFLOP/s delivered),
//               prima:request_outcomes_total{outcome=completed|rejected|failed|cancelled},
//               prima:num_preemptions_total
//   gauges      prima:num_requests_running, prima:num_requests_waiting,
//               prima:kv_cache_usage_perc (0..1), prima:gpu_utilization_perc (0..1, busy GPU
//               time over the last second or more of engine time),
//               prima:replicas{state=active|unhealthy|loading|draining} (replicas by state:
//               unhealthy = taken out of routing after failed steps, see HealthOptions)
// Where the backend reports its links (set_link_source: the real backend's rank 0), read at
// each scrape:
//   counters    prima:link_bytes_total{link="0->1"} (bytes rank 0 sent to rank 1; "1->0":
//               received from it), prima:link_retransmissions_total{transport=rdma|tcp,
//               device, port} (retransmissions on the host's RDMA ports and TCP since start)
// Per-request series are labelled {model, priority}; gauges {model}. Requests refused or
// ended in error are also counted by reason, labelled {model_name, reason} as vLLM labels:
//   prima:requests_rejected_total{reason=capacity|draining|invalid|not_found|too_large|
//                                        unauthorized|engine}
//   prima:requests_errored_total{reason=failed|cancelled|internal}
// Beside them, vLLM's own names, labels and buckets (vllm_metrics.h). Times are engine time
// (simulated seconds with the sim backend).
// Thread-safety: on_token, on_end and on_state run on the engine's loop (through the
// EngineBridge); on_refused, on_http_error and text() may be called from any thread
// (prometheus-cpp metrics are thread-safe).
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/core/request.h"
#include "server/vllm_metrics.h"

namespace prometheus {
class Registry;
class Histogram;
class Counter;
class Gauge;
}  // namespace prometheus

namespace prima::server {

// Why a request was refused (prima:requests_rejected_total's reason label).
enum class Rejection {
  kCapacity,      // 429: --max-concurrent requests in progress
  kDraining,      // 503: the server is shutting down
  kInvalid,       // 400 and other 4xx: a body or field the API does not accept
  kNotFound,      // 404: unknown model or route
  kTooLarge,      // 413 / 431: body or headers over the limits
  kUnauthorized,  // 401: missing or wrong API key
  kEngine,        // the engine refused it (e.g. it can never fit the KV cache): 400
};
inline constexpr int kNumRejections = 7;
const char* rejection_name(Rejection r);

// The link counters a backend reports (running totals since the process started).
struct LinkCounters {
  struct Bytes {
    std::string link;  // "0->1": from rank 0 to rank 1
    std::uint64_t bytes = 0;
  };
  struct Retransmits {
    std::string transport, device, port;
    std::uint64_t count = 0;  // the source's running total (counted from the first sample)
  };
  std::vector<Bytes> bytes;
  std::vector<Retransmits> retransmits;
};

class ServerMetrics {
 public:
  // max_model_len: the served model's context (bounds vLLM's token-count buckets).
  ServerMetrics(const std::string& model, int max_model_len);
  ~ServerMetrics();

  // Loop thread.
  void on_token(const Sequence& s, double itl_s);  // itl_s < 0: the first token
  void on_end(const Sequence& s);
  // Engine state; preemptions and busy GPU-seconds are running totals.
  void on_state(double now_s, int running, int waiting, double kv_usage,
                std::int64_t preemptions_total, double busy_gpu_s_total, int gpus);
  // Replicas by state.
  void on_replicas(int active, int unhealthy, int loading, int draining);
  // The useful FLOPs of every step so far (a running total).
  void on_flops(double flops_total);
  // vLLM's engine families: tokens per step, prefix-cache totals, the KV cache's configuration.
  void on_step_tokens(std::int64_t tokens);
  void on_prefix_cache(std::int64_t query_tokens_total, std::int64_t hit_tokens_total);
  void set_cache_config(int block_size, std::int64_t blocks, bool prefix_caching);

  // Any thread. A request refused before it reached the engine. With its priority (a valid
  // request refused at admission), it also counts as prima:request_outcomes_total{outcome=
  // "rejected"}; requests that could not be read have no priority and count by reason only.
  void on_refused(Rejection why, std::optional<Priority> p = std::nullopt);
  // Any thread. An API request answered with `status` >= 400 that neither admission nor the
  // engine accounted for (see server_context.h): counted by the status's reason (5xx:
  // prima:requests_errored_total{reason="internal"}). Other statuses are ignored.
  void on_http_error(int status);

  // Before serving (not thread-safe with text()): read at each scrape from then on.
  void set_link_source(std::function<LinkCounters()> source);

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
  std::array<prometheus::Gauge*, 4> replicas_{};  // active, unhealthy, loading, draining
  prometheus::Counter* preemptions_ = nullptr;
  prometheus::Counter* flops_ = nullptr;
  double flops_seen_ = 0;
  std::array<prometheus::Counter*, kNumRejections> rejected_{};
  prometheus::Counter *errored_failed_ = nullptr, *errored_cancelled_ = nullptr,
                      *errored_internal_ = nullptr;
  std::unique_ptr<VllmMetrics> vllm_;
  std::int64_t preemptions_seen_ = 0;
  std::string model_;
  std::function<LinkCounters()> link_source_;
  struct LinkState;  // the link families and what each series has counted (metrics.cpp)
  std::unique_ptr<LinkState> links_;
  void sample_links() const;
  double util_mark_s_ = -1, util_mark_busy_ = 0;
};

}  // namespace prima::server
