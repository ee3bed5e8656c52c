// vLLM-named Prometheus families of the server (see vllm_metrics.h).
#include "server/vllm_metrics.h"

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <algorithm>

namespace prima::server {

// The boundaries of vLLM's v1 PrometheusStatLogger.
const std::vector<double> kVllmTtftBuckets = {0.001, 0.005, 0.01, 0.02,  0.04,  0.06,  0.08, 0.1,
                                              0.25,  0.5,   0.75, 1.0,   2.5,   5.0,   7.5,  10.0,
                                              20.0,  40.0,  80.0, 160.0, 640.0, 2560.0};
const std::vector<double> kVllmTpotBuckets = {0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2,
                                              0.3,  0.4,   0.5,  0.75,  1.0, 2.5,  5.0,
                                              7.5,  10.0,  20.0, 40.0,  80.0};
const std::vector<double> kVllmLatencyBuckets = {0.3,  0.5,  0.8,  1.0,  1.5,   2.0,   2.5,
                                                 5.0,  10.0, 15.0, 20.0, 30.0,  40.0,  50.0,
                                                 60.0, 120., 240., 480., 960.0, 1920., 7680.};

std::vector<double> vllm_1_2_5_buckets(int max_value) {
  std::vector<double> b;
  for (long long decade = 1;; decade *= 10)
    for (int m : {1, 2, 5}) {
      const long long v = m * decade;
      if (v > max_value) return b.empty() ? std::vector<double>{1} : b;
      b.push_back(static_cast<double>(v));
    }
}

std::string vllm_finished_reason(const Sequence& s) {
  if (s.outcome != Outcome::kCompleted) return "abort";
  if (s.finish_reason == "length" ||
      (s.finish_reason.empty() && s.num_generated >= s.req.max_output_tokens))
    return "length";
  return "stop";
}

VllmMetrics::VllmMetrics(prometheus::Registry& reg, const std::string& model_name,
                         int max_model_len) {
  using namespace prometheus;
  const Labels l{{"model_name", model_name}, {"engine", "0"}};
  auto gauge = [&](const char* name, const char* help) {
    return &BuildGauge().Name(name).Help(help).Register(reg).Add(l);
  };
  auto counter = [&](const char* name, const char* help) {
    return &BuildCounter().Name(name).Help(help).Register(reg).Add(l);
  };
  auto histogram = [&](const char* name, const char* help, const std::vector<double>& buckets) {
    return &BuildHistogram().Name(name).Help(help).Register(reg).Add(l, buckets);
  };
  running_ = gauge("vllm:num_requests_running", "Number of requests in model execution batches.");
  waiting_ = gauge("vllm:num_requests_waiting", "Number of requests waiting to be processed.");
  gpu_cache_ = gauge("vllm:gpu_cache_usage_perc",
                     "GPU KV-cache usage. 1 means 100 percent usage (vLLM's older name of "
                     "vllm:kv_cache_usage_perc).");
  kv_cache_ = gauge("vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.");

  prompt_tokens_ = counter("vllm:prompt_tokens_total", "Number of prefill tokens processed.");
  generation_tokens_ =
      counter("vllm:generation_tokens_total", "Number of generation tokens processed.");
  preemptions_ =
      counter("vllm:num_preemptions_total", "Cumulative number of preemption from the engine.");
  auto& success = BuildCounter()
                      .Name("vllm:request_success_total")
                      .Help("Count of successfully processed requests.")
                      .Register(reg);
  auto reason = [&](const char* r) {
    Labels lr = l;
    lr["finished_reason"] = r;
    return &success.Add(lr);
  };
  success_stop_ = reason("stop");
  success_length_ = reason("length");
  success_abort_ = reason("abort");

  ttft_ = histogram("vllm:time_to_first_token_seconds",
                    "Histogram of time to first token in seconds.", kVllmTtftBuckets);
  tpot_ = histogram("vllm:time_per_output_token_seconds",
                    "Histogram of time per output token in seconds.", kVllmTpotBuckets);
  itl_ = histogram("vllm:inter_token_latency_seconds",
                   "Histogram of inter-token latency in seconds.", kVllmTpotBuckets);
  e2e_ = histogram("vllm:e2e_request_latency_seconds",
                   "Histogram of e2e request latency in seconds.", kVllmLatencyBuckets);
  queue_ = histogram("vllm:request_queue_time_seconds",
                     "Histogram of time spent in WAITING phase for request.", kVllmLatencyBuckets);
  inference_ =
      histogram("vllm:request_inference_time_seconds",
                "Histogram of time spent in RUNNING phase for request.", kVllmLatencyBuckets);
  prefill_ =
      histogram("vllm:request_prefill_time_seconds",
                "Histogram of time spent in PREFILL phase for request.", kVllmLatencyBuckets);
  decode_ = histogram("vllm:request_decode_time_seconds",
                      "Histogram of time spent in DECODE phase for request.", kVllmLatencyBuckets);
  const std::vector<double> lengths = vllm_1_2_5_buckets(max_model_len);
  prompt_len_ =
      histogram("vllm:request_prompt_tokens", "Number of prefill tokens processed.", lengths);
  gen_len_ = histogram("vllm:request_generation_tokens", "Number of generation tokens processed.",
                       lengths);
  max_tokens_ = histogram("vllm:request_params_max_tokens",
                          "Histogram of the max_tokens request parameter.", lengths);
  max_gen_ = histogram("vllm:request_max_num_generation_tokens",
                       "Histogram of maximum number of requested generation tokens.", lengths);
  iteration_ =
      histogram("vllm:iteration_tokens_total", "Histogram of number of tokens per engine_step.",
                {1, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384});
  prefix_queries_ = counter("vllm:prefix_cache_queries_total",
                            "Prefix cache queries, in terms of number of queried tokens.");
  prefix_hits_ = counter("vllm:prefix_cache_hits_total",
                         "Prefix cache hits, in terms of number of cached tokens.");
  model_name_ = model_name;
}

void VllmMetrics::on_step_tokens(std::int64_t tokens) {
  iteration_->Observe(static_cast<double>(tokens));
}

void VllmMetrics::on_prefix_cache(std::int64_t queries, std::int64_t hits) {
  if (queries > prefix_queries_seen_)
    prefix_queries_->Increment(static_cast<double>(queries - prefix_queries_seen_));
  if (hits > prefix_hits_seen_)
    prefix_hits_->Increment(static_cast<double>(hits - prefix_hits_seen_));
  prefix_queries_seen_ = std::max(prefix_queries_seen_, queries);
  prefix_hits_seen_ = std::max(prefix_hits_seen_, hits);
}

void VllmMetrics::set_cache_config(prometheus::Registry& reg, int block_size, std::int64_t blocks,
                                   bool prefix_caching) {
  if (cache_config_set_) return;
  cache_config_set_ = true;
  // vLLM's labels are its CacheConfig's fields as Python writes them.
  prometheus::BuildGauge()
      .Name("vllm:cache_config_info")
      .Help("Information of the LLMEngine CacheConfig")
      .Register(reg)
      .Add({{"engine", "0"},
            {"block_size", std::to_string(block_size)},
            {"num_gpu_blocks", std::to_string(blocks)},
            {"enable_prefix_caching", prefix_caching ? "True" : "False"},
            {"cache_dtype", "auto"}})
      .Set(1);
}

void VllmMetrics::on_token(const Sequence& s, double itl_s) {
  generation_tokens_->Increment();
  if (itl_s < 0) {  // the first token: the prompt has been prefilled (recorded now, as vLLM)
    prompt_tokens_->Increment(s.req.prompt_tokens);
    if (s.first_token_s >= 0) ttft_->Observe(s.first_token_s - s.req.arrival_s);
    return;
  }
  tpot_->Observe(itl_s);
  itl_->Observe(itl_s);
}

void VllmMetrics::on_end(const Sequence& s) {
  // vLLM refuses what it can never serve at its API, before its engine: such a request is in
  // none of its families (prima counts it in prima:requests_rejected_total{reason="engine"}).
  if (s.outcome == Outcome::kRejected) return;
  const std::string reason = vllm_finished_reason(s);
  (reason == "stop"     ? success_stop_
   : reason == "length" ? success_length_
                        : success_abort_)
      ->Increment();
  // vLLM records the per-request histograms of every finished request, aborted ones included;
  // a request that never got a token (refused, failed or cancelled while queued) has no
  // phases to record.
  if (s.first_token_s < 0) return;
  const Time a = s.req.arrival_s;
  const Time sched = s.first_scheduled_s >= 0 ? s.first_scheduled_s : a;
  const Time end = s.finish_s >= s.first_token_s ? s.finish_s : s.first_token_s;
  e2e_->Observe(end - a);
  queue_->Observe(sched - a);
  inference_->Observe(end - sched);
  prefill_->Observe(s.first_token_s - sched);
  decode_->Observe(end - s.first_token_s);
  prompt_len_->Observe(s.req.prompt_tokens);
  gen_len_->Observe(s.num_generated);
  max_tokens_->Observe(s.req.max_output_tokens);
  max_gen_->Observe(s.num_generated);
}

void VllmMetrics::on_state(int running, int waiting, double kv_usage,
                           std::int64_t new_preemptions) {
  running_->Set(running);
  waiting_->Set(waiting);
  gpu_cache_->Set(kv_usage);
  kv_cache_->Set(kv_usage);
  if (new_preemptions > 0) preemptions_->Increment(static_cast<double>(new_preemptions));
}

}  // namespace prima::server
