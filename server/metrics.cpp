// Prometheus metrics of the server (see metrics.h).
#include "server/metrics.h"

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

namespace prima::server {
namespace {

const prometheus::Histogram::BucketBoundaries kLatencyBuckets = {
    0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75,
    1.0,   2.5,   5.0,  7.5,  10,   20,   40,   80,  160,  320, 640};
const prometheus::Histogram::BucketBoundaries kItlBuckets = {
    0.001, 0.005, 0.01, 0.015, 0.02, 0.025, 0.03, 0.04, 0.05, 0.075,
    0.1,   0.15,  0.2,  0.3,   0.4,  0.5,   0.75, 1.0,  2.5,  5.0};

const char* kOutcomeNames[] = {"completed", "rejected", "failed", "cancelled"};

}  // namespace

ServerMetrics::ServerMetrics(const std::string& model)
    : reg_(std::make_shared<prometheus::Registry>()) {
  using namespace prometheus;
  auto& ttft = BuildHistogram()
                   .Name("prima:time_to_first_token_seconds")
                   .Help("Time to first token: arrival to first output token, seconds")
                   .Register(*reg_);
  auto& itl = BuildHistogram()
                  .Name("prima:inter_token_latency_seconds")
                  .Help("Time between two consecutive output tokens of a request, seconds")
                  .Register(*reg_);
  auto& e2e = BuildHistogram()
                  .Name("prima:e2e_request_latency_seconds")
                  .Help("End-to-end request latency: arrival to the last token, seconds")
                  .Register(*reg_);
  auto& queue = BuildHistogram()
                    .Name("prima:request_queue_time_seconds")
                    .Help("Time a request waited before its first step, seconds")
                    .Register(*reg_);
  auto& prompt = BuildCounter()
                     .Name("prima:prompt_tokens_total")
                     .Help("Prompt tokens of the requests that were prefilled")
                     .Register(*reg_);
  auto& gen = BuildCounter()
                  .Name("prima:generation_tokens_total")
                  .Help("Output tokens generated")
                  .Register(*reg_);
  auto& outcomes = BuildCounter()
                       .Name("prima:request_outcomes_total")
                       .Help("Requests that ended, by outcome (cancelled: the client went away)")
                       .Register(*reg_);
  for (int p = 0; p < kNumPriorities; ++p) {
    const Labels l{{"model", model}, {"priority", priority_name(static_cast<Priority>(p))}};
    PerPriority& pp = by_prio_[p];
    pp.ttft = &ttft.Add(l, kLatencyBuckets);
    pp.itl = &itl.Add(l, kItlBuckets);
    pp.e2e = &e2e.Add(l, kLatencyBuckets);
    pp.queue = &queue.Add(l, kLatencyBuckets);
    pp.prompt_tokens = &prompt.Add(l);
    pp.generation_tokens = &gen.Add(l);
    for (int o = 0; o < kOutcomes; ++o) {
      Labels lo = l;
      lo["outcome"] = kOutcomeNames[o];
      pp.outcomes[o] = &outcomes.Add(lo);
    }
  }
  const Labels m{{"model", model}};
  running_ = &BuildGauge()
                  .Name("prima:num_requests_running")
                  .Help("Requests in a running batch (holding KV blocks)")
                  .Register(*reg_)
                  .Add(m);
  waiting_ = &BuildGauge()
                  .Name("prima:num_requests_waiting")
                  .Help("Requests queued for admission")
                  .Register(*reg_)
                  .Add(m);
  kv_ = &BuildGauge()
             .Name("prima:kv_cache_usage_perc")
             .Help("KV-cache usage: fraction of blocks in use, mean over replicas (0..1)")
             .Register(*reg_)
             .Add(m);
  gpu_ = &BuildGauge()
              .Name("prima:gpu_utilization_perc")
              .Help("GPU busy fraction over the last second or more of engine time (0..1)")
              .Register(*reg_)
              .Add(m);
  preemptions_ = &BuildCounter()
                      .Name("prima:num_preemptions_total")
                      .Help("Sequences preempted to make room in the KV cache")
                      .Register(*reg_)
                      .Add(m);
}

ServerMetrics::~ServerMetrics() = default;

void ServerMetrics::on_token(Priority p, double itl_s) {
  PerPriority& pp = by_prio_[static_cast<int>(p)];
  pp.generation_tokens->Increment();
  if (itl_s >= 0) pp.itl->Observe(itl_s);
}

void ServerMetrics::on_end(const Sequence& s) {
  PerPriority& pp = by_prio_[static_cast<int>(s.req.priority)];
  const Time a = s.req.arrival_s;
  if (s.first_scheduled_s >= 0) pp.queue->Observe(s.first_scheduled_s - a);
  if (s.first_token_s >= 0) {
    pp.ttft->Observe(s.first_token_s - a);
    pp.prompt_tokens->Increment(s.req.prompt_tokens);
  }
  int o = 2;
  if (s.outcome == Outcome::kCompleted) {
    o = 0;
    pp.e2e->Observe(s.finish_s - a);
  } else if (s.outcome == Outcome::kRejected) {
    o = 1;
  } else if (s.reason == "client disconnected") {
    o = 3;
  }
  pp.outcomes[o]->Increment();
}

void ServerMetrics::on_state(double now_s, int running, int waiting, double kv_usage,
                             std::int64_t preemptions_total, double busy_gpu_s_total, int gpus) {
  running_->Set(running);
  waiting_->Set(waiting);
  kv_->Set(kv_usage);
  if (preemptions_total > preemptions_seen_) {
    preemptions_->Increment(static_cast<double>(preemptions_total - preemptions_seen_));
    preemptions_seen_ = preemptions_total;
  }
  if (util_mark_s_ < 0) {
    util_mark_s_ = now_s;
    util_mark_busy_ = busy_gpu_s_total;
  } else if (now_s - util_mark_s_ >= 1.0 && gpus > 0) {
    gpu_->Set((busy_gpu_s_total - util_mark_busy_) / (gpus * (now_s - util_mark_s_)));
    util_mark_s_ = now_s;
    util_mark_busy_ = busy_gpu_s_total;
  }
}

std::string ServerMetrics::text() const {
  return prometheus::TextSerializer().Serialize(reg_->Collect());
}

}  // namespace prima::server
