// Prometheus metrics of the server (see metrics.h).
#include "server/metrics.h"

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include <algorithm>
#include <iterator>
#include <map>
#include <mutex>

namespace prima::server {
namespace {

const prometheus::Histogram::BucketBoundaries kLatencyBuckets = {
    0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75,
    1.0,   2.5,   5.0,  7.5,  10,   20,   40,   80,  160,  320, 640};
const prometheus::Histogram::BucketBoundaries kItlBuckets = {
    0.001, 0.005, 0.01, 0.015, 0.02, 0.025, 0.03, 0.04, 0.05, 0.075,
    0.1,   0.15,  0.2,  0.3,   0.4,  0.5,   0.75, 1.0,  2.5,  5.0};

const char* kOutcomeNames[] = {"completed", "rejected", "failed", "cancelled"};
const char* kRejectionNames[] = {"capacity",  "draining",     "invalid", "not_found",
                                 "too_large", "unauthorized", "engine"};
static_assert(std::size(kRejectionNames) == kNumRejections);

bool is_cancellation(const Sequence& s) {
  return s.reason == "client disconnected";
}

}  // namespace

const char* rejection_name(Rejection r) {
  return kRejectionNames[static_cast<int>(r)];
}

ServerMetrics::ServerMetrics(const std::string& model, int max_model_len)
    : reg_(std::make_shared<prometheus::Registry>()), model_(model) {
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
  flops_ = &BuildCounter()
                .Name("prima:flops_total")
                .Help(
                    "Useful floating-point operations of the steps, all GPUs (rate()/1e12: "
                    "TFLOP/s)")
                .Register(*reg_)
                .Add(m);
  auto& replicas = BuildGauge()
                       .Name("prima:replicas")
                       .Help(
                           "Replicas by state (unhealthy: taken out of routing after failed "
                           "steps; probed until they answer)")
                       .Register(*reg_);
  const char* states[] = {"active", "unhealthy", "loading", "draining"};
  for (std::size_t i = 0; i < replicas_.size(); ++i)
    replicas_[i] = &replicas.Add({{"model", model}, {"state", states[i]}});
  preemptions_ = &BuildCounter()
                      .Name("prima:num_preemptions_total")
                      .Help("Sequences preempted to make room in the KV cache")
                      .Register(*reg_)
                      .Add(m);

  auto& rejected = BuildCounter()
                       .Name("prima:requests_rejected_total")
                       .Help(
                           "API requests refused with an error answer, by reason (capacity: 429, "
                           "draining: 503, invalid: 400, not_found: 404, too_large: 413/431, "
                           "unauthorized: 401, engine: refused by the engine)")
                       .Register(*reg_);
  for (int r = 0; r < kNumRejections; ++r)
    rejected_[r] = &rejected.Add(
        {{"model_name", model}, {"reason", rejection_name(static_cast<Rejection>(r))}});
  auto& errored = BuildCounter()
                      .Name("prima:requests_errored_total")
                      .Help(
                          "Requests that ended in an error, by reason (failed: the engine "
                          "failed it; cancelled: the client went away; internal: a 5xx "
                          "answer from the server itself)")
                      .Register(*reg_);
  errored_failed_ = &errored.Add({{"model_name", model}, {"reason", "failed"}});
  errored_cancelled_ = &errored.Add({{"model_name", model}, {"reason", "cancelled"}});
  errored_internal_ = &errored.Add({{"model_name", model}, {"reason", "internal"}});

  vllm_ = std::make_unique<VllmMetrics>(*reg_, model, max_model_len);
}

ServerMetrics::~ServerMetrics() = default;

void ServerMetrics::on_token(const Sequence& s, double itl_s) {
  PerPriority& pp = by_prio_[static_cast<int>(s.req.priority)];
  pp.generation_tokens->Increment();
  if (itl_s >= 0) pp.itl->Observe(itl_s);
  vllm_->on_token(s, itl_s);
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
    rejected_[static_cast<int>(Rejection::kEngine)]->Increment();
  } else if (is_cancellation(s)) {
    o = 3;
    errored_cancelled_->Increment();
  } else {
    errored_failed_->Increment();
  }
  pp.outcomes[o]->Increment();
  vllm_->on_end(s);
}

void ServerMetrics::on_refused(Rejection why, std::optional<Priority> p) {
  rejected_[static_cast<int>(why)]->Increment();
  if (p) by_prio_[static_cast<int>(*p)].outcomes[1]->Increment();
}

void ServerMetrics::on_http_error(int status) {
  if (status >= 500) {
    // 503 is the draining answer; any other 5xx is the server's own failure.
    if (status == 503)
      on_refused(Rejection::kDraining);
    else
      errored_internal_->Increment();
    return;
  }
  switch (status) {
    case 401:
    case 403:
      return on_refused(Rejection::kUnauthorized);
    case 404:
      return on_refused(Rejection::kNotFound);
    case 413:
    case 431:
      return on_refused(Rejection::kTooLarge);
    case 429:
      return on_refused(Rejection::kCapacity);
    default:
      if (status >= 400) on_refused(Rejection::kInvalid);
  }
}

void ServerMetrics::on_state(double now_s, int running, int waiting, double kv_usage,
                             std::int64_t preemptions_total, double busy_gpu_s_total, int gpus) {
  running_->Set(running);
  waiting_->Set(waiting);
  kv_->Set(kv_usage);
  const std::int64_t new_preemptions =
      std::max<std::int64_t>(0, preemptions_total - preemptions_seen_);
  if (new_preemptions > 0) {
    preemptions_->Increment(static_cast<double>(new_preemptions));
    preemptions_seen_ = preemptions_total;
  }
  vllm_->on_state(running, waiting, kv_usage, new_preemptions);
  if (util_mark_s_ < 0) {
    util_mark_s_ = now_s;
    util_mark_busy_ = busy_gpu_s_total;
  } else if (now_s - util_mark_s_ >= 1.0 && gpus > 0) {
    gpu_->Set((busy_gpu_s_total - util_mark_busy_) / (gpus * (now_s - util_mark_s_)));
    util_mark_s_ = now_s;
    util_mark_busy_ = busy_gpu_s_total;
  }
}

void ServerMetrics::on_replicas(int active, int unhealthy, int loading, int draining) {
  replicas_[0]->Set(active);
  replicas_[1]->Set(unhealthy);
  replicas_[2]->Set(loading);
  replicas_[3]->Set(draining);
}

struct ServerMetrics::LinkState {
  std::mutex mu;
  prometheus::Family<prometheus::Counter>* bytes = nullptr;
  prometheus::Family<prometheus::Counter>* retransmits = nullptr;
  // By series key: the counter and the source's value it has counted up to (bytes start
  // from 0; retransmits from the source's value at the first sample).
  struct Seen {
    prometheus::Counter* counter = nullptr;
    std::uint64_t last = 0;
  };
  std::map<std::string, Seen> seen;
};

void ServerMetrics::set_link_source(std::function<LinkCounters()> source) {
  links_ = std::make_unique<LinkState>();
  links_->bytes = &prometheus::BuildCounter()
                       .Name("prima:link_bytes_total")
                       .Help(
                           "Bytes this rank (0) sent to (link=\"0->r\") and received from "
                           "(\"r->0\") each other rank of the job")
                       .Register(*reg_);
  links_->retransmits = &prometheus::BuildCounter()
                             .Name("prima:link_retransmissions_total")
                             .Help(
                                 "Retransmissions on the host's links since start: RDMA "
                                 "ports' local_ack_timeout_err + packet_seq_err + "
                                 "implied_nak_seq_err, TCP's RetransSegs")
                             .Register(*reg_);
  link_source_ = std::move(source);
}

void ServerMetrics::sample_links() const {
  if (!link_source_) return;
  const LinkCounters now = link_source_();
  LinkState& ls = *links_;
  std::lock_guard<std::mutex> lock(ls.mu);
  auto count = [&](const std::string& key, prometheus::Family<prometheus::Counter>* family,
                   const prometheus::Labels& labels, std::uint64_t value, bool from_zero) {
    auto it = ls.seen.find(key);
    if (it == ls.seen.end()) {
      LinkState::Seen s{&family->Add(labels), from_zero ? 0 : value};
      it = ls.seen.emplace(key, s).first;
    }
    if (value > it->second.last) {
      it->second.counter->Increment(static_cast<double>(value - it->second.last));
      it->second.last = value;
    }
  };
  for (const auto& b : now.bytes)
    count("b " + b.link, ls.bytes, {{"model", model_}, {"link", b.link}}, b.bytes, true);
  for (const auto& r : now.retransmits)
    count("r " + r.transport + " " + r.device + " " + r.port, ls.retransmits,
          {{"model", model_}, {"transport", r.transport}, {"device", r.device}, {"port", r.port}},
          r.count, false);
}

void ServerMetrics::on_step_tokens(std::int64_t tokens) {
  vllm_->on_step_tokens(tokens);
}

void ServerMetrics::on_prefix_cache(std::int64_t queries, std::int64_t hits) {
  vllm_->on_prefix_cache(queries, hits);
}

void ServerMetrics::set_cache_config(int block_size, std::int64_t blocks, bool prefix_caching) {
  vllm_->set_cache_config(*reg_, block_size, blocks, prefix_caching);
}

void ServerMetrics::on_flops(double flops_total) {
  if (flops_total > flops_seen_) {
    flops_->Increment(flops_total - flops_seen_);
    flops_seen_ = flops_total;
  }
}

std::string ServerMetrics::text() const {
  sample_links();
  return prometheus::TextSerializer().Serialize(reg_->Collect());
}

}  // namespace prima::server
