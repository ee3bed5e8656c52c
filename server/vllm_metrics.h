// VllmMetrics: the families of `prima serve`'s /metrics that carry vLLM's names, labels and
// histogram buckets, so that dashboards, alerts and autoscalers written for vLLM read prima
// unchanged. Names and buckets follow vLLM's v1 engine (vllm/v1/metrics/loggers.py); every
// series is labelled {model_name, engine="0"} as vLLM's are (prima's server is one engine
// front end, whatever the replicas behind it). docs/serving.md maps them to prima's own.
//   gauges      vllm:num_requests_running, vllm:num_requests_waiting,
//               vllm:gpu_cache_usage_perc and vllm:kv_cache_usage_perc (0..1)
//   counters    vllm:prompt_tokens_total, vllm:generation_tokens_total,
//               vllm:num_preemptions_total,
//               vllm:request_success_total{finished_reason=stop|length|abort}
//   histograms  vllm:time_to_first_token_seconds, vllm:time_per_output_token_seconds and
//               vllm:inter_token_latency_seconds (both per output token after the first),
//               vllm:e2e_request_latency_seconds, vllm:request_queue_time_seconds,
//               vllm:request_inference_time_seconds, vllm:request_prefill_time_seconds,
//               vllm:request_decode_time_seconds, vllm:request_prompt_tokens,
//               vllm:request_generation_tokens, vllm:request_params_max_tokens,
//               vllm:request_max_num_generation_tokens (the most output tokens of a
//               request's sequences: its own, one sequence per request),
//               vllm:iteration_tokens_total (tokens per engine step)
//   counters    vllm:prefix_cache_queries_total, vllm:prefix_cache_hits_total (prompt tokens
//               looked up in the prefix cache, and found there)
//   info        vllm:cache_config_info{block_size, num_gpu_blocks, enable_prefix_caching,
//               cache_dtype} = 1
// Times are engine time (simulated seconds with the sim backend), as for prima's families.
// Thread-safety: the recording calls run on the engine's loop (ServerMetrics forwards them);
// the families live in the registry given to the constructor (thread-safe to collect).
// Ownership: the registry owns the families; the registry must outlive this object.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/core/request.h"

namespace prometheus {
class Registry;
class Histogram;
class Counter;
class Gauge;
}  // namespace prometheus

namespace prima::server {

// vLLM's bucket boundaries (public: the tests hold the exposition to them).
extern const std::vector<double> kVllmTtftBuckets;     // time_to_first_token_seconds
extern const std::vector<double> kVllmTpotBuckets;     // time_per_output_token_seconds, ITL
extern const std::vector<double> kVllmLatencyBuckets;  // e2e, queue, inference, prefill, decode
// vLLM's token-count buckets: 1, 2, 5, 10, 20, 50, ... up to max_value (at least {1}).
std::vector<double> vllm_1_2_5_buckets(int max_value);

// vLLM's finished_reason of a sequence that ended: "stop" or "length" when completed (its
// own finish_reason, else "length" when it reached max_output_tokens), "abort" otherwise
// (cancelled or failed: vLLM counts aborted requests under the same counter).
std::string vllm_finished_reason(const Sequence& s);

class VllmMetrics {
 public:
  // max_model_len bounds the token-count buckets (the served model's context).
  VllmMetrics(prometheus::Registry& reg, const std::string& model_name, int max_model_len);

  void on_token(const Sequence& s, double itl_s);  // itl_s < 0: the first token
  // A request the engine rejected is not counted (vLLM refuses those before its engine).
  void on_end(const Sequence& s);
  // new_preemptions: preemptions since the previous call.
  void on_state(int running, int waiting, double kv_usage, std::int64_t new_preemptions);
  // Tokens one engine step computed.
  void on_step_tokens(std::int64_t tokens);
  // Prefix-cache lookups as running totals (tokens looked up, tokens found).
  void on_prefix_cache(std::int64_t query_tokens_total, std::int64_t hit_tokens_total);
  // The KV cache's configuration (once: later calls are ignored).
  void set_cache_config(prometheus::Registry& reg, int block_size, std::int64_t blocks,
                        bool prefix_caching);

 private:
  prometheus::Gauge *running_ = nullptr, *waiting_ = nullptr, *gpu_cache_ = nullptr,
                    *kv_cache_ = nullptr;
  prometheus::Counter *prompt_tokens_ = nullptr, *generation_tokens_ = nullptr,
                      *preemptions_ = nullptr;
  prometheus::Counter *success_stop_ = nullptr, *success_length_ = nullptr,
                      *success_abort_ = nullptr;
  prometheus::Histogram *ttft_ = nullptr, *tpot_ = nullptr, *itl_ = nullptr, *e2e_ = nullptr,
                        *queue_ = nullptr, *inference_ = nullptr, *prefill_ = nullptr,
                        *decode_ = nullptr, *prompt_len_ = nullptr, *gen_len_ = nullptr,
                        *max_tokens_ = nullptr, *max_gen_ = nullptr, *iteration_ = nullptr;
  prometheus::Counter *prefix_queries_ = nullptr, *prefix_hits_ = nullptr;
  std::int64_t prefix_queries_seen_ = 0, prefix_hits_seen_ = 0;
  std::string model_name_;
  bool cache_config_set_ = false;
};

}  // namespace prima::server
