// Recorder: per-request records, device work and timeline samples (see recorder.h).
#include "engine/metrics/recorder.h"

#include <algorithm>
#include <cmath>

#include "engine/metrics/summary.h"

namespace prima::metrics {
namespace {

// Makes room for one more element in a vector capped at `limit` (0: no cap): when full, drops
// the oldest quarter (at least one) and returns how many were dropped. Amortized O(1).
template <typename T>
std::size_t make_room(std::vector<T>* v, std::size_t limit) {
  if (limit == 0 || v->size() < limit) return 0;
  const std::size_t drop =
      std::min(v->size(), std::max<std::size_t>(1, limit / 4) + (v->size() - limit));
  v->erase(v->begin(), v->begin() + static_cast<std::ptrdiff_t>(drop));
  return drop;
}

}  // namespace

void Recorder::set_retention(std::size_t max_records, std::size_t max_timeline_rows) {
  max_records_ = max_records;
  max_timeline_rows_ = max_timeline_rows;
}

void Recorder::on_arrival(Time t) {
  ++submitted_;
  ++window_.arrivals;
  if (first_arrival_s_ < 0) first_arrival_s_ = t;
}

void Recorder::on_end(const Sequence& s, Time t) {
  RequestRecord r;
  r.id = s.req.id;
  r.priority = s.req.priority;
  r.sla_s = s.req.sla_s;
  r.replica = s.replica;
  r.outcome = s.outcome;
  r.reason = s.reason;
  r.prompt_tokens = s.req.prompt_tokens;
  r.output_tokens = s.num_generated;
  r.preemptions = s.preemptions;
  r.arrival_s = s.req.arrival_s;
  r.first_scheduled_s = s.first_scheduled_s;
  r.first_token_s = s.first_token_s;
  r.finish_s = t;
  last_finish_s_ = std::max(last_finish_s_, t);
  switch (s.outcome) {
    case Outcome::kCompleted:
      ++completed_;
      ++window_.completions;
      make_room(&window_e2e_, max_records_);  // a window nobody closes (serve) stays bounded
      window_e2e_.push_back(r.e2e_s());
      break;
    case Outcome::kRejected:
      ++rejected_;
      ++window_.rejections;
      break;
    case Outcome::kFailed:
      ++failed_;
      ++window_.failures;
      break;
    case Outcome::kPending:
      break;
  }
  records_dropped_ += static_cast<std::int64_t>(make_room(&records_, max_records_));
  records_.push_back(std::move(r));
}

std::int64_t Recorder::count(Outcome o) const {
  switch (o) {
    case Outcome::kCompleted:
      return completed_;
    case Outcome::kRejected:
      return rejected_;
    case Outcome::kFailed:
      return failed_;
    case Outcome::kPending:
      return submitted_ - completed_ - rejected_ - failed_;
  }
  return 0;
}

double& Recorder::busy_bin(std::int64_t sec) {
  if (sec < busy_base_) return busy_dropped_;  // dropped already: never read again
  const auto i = static_cast<std::size_t>(sec - busy_base_);
  if (i >= busy_by_second_.size()) busy_by_second_.resize(i + 1, 0.0);
  return busy_by_second_[i];
}

void Recorder::add_busy(Time start, Time end, double gpu_seconds) {
  if (end <= start) {
    busy_bin(static_cast<std::int64_t>(std::floor(end))) += gpu_seconds;
    return;
  }
  // Spread the busy time uniformly over [start, end], split at whole seconds.
  const double rate = gpu_seconds / (end - start);
  double t = start;
  while (t < end) {
    double sec = std::floor(t);
    double stop = std::min(end, sec + 1.0);
    busy_bin(static_cast<std::int64_t>(sec)) += rate * (stop - t);
    t = stop;
  }
}

void Recorder::on_step(Time start, Time end, double gpu_seconds, double flops) {
  busy_gpu_s_ += gpu_seconds;
  flops_ += flops;
  add_busy(start, end, gpu_seconds);
}

void Recorder::note_memory_fraction(double f) {
  memory_fraction_max_ = std::max(memory_fraction_max_, f);
}

void Recorder::sample(Time t, int running, int waiting, int replicas_up, double kv_usage,
                      std::vector<std::string> extra) {
  TimelineRow row = window_;
  row.extra = std::move(extra);
  row.t_s = t;
  row.running = running;
  row.waiting = waiting;
  row.replicas_up = replicas_up;
  row.replicas_loading = replicas_loading_;
  row.kv_usage = kv_usage;
  const auto sec = static_cast<std::int64_t>(std::llround(t)) - 1;
  if (sec >= busy_base_ && sec - busy_base_ < std::int64_t(busy_by_second_.size())) {
    const double busy = busy_by_second_[static_cast<std::size_t>(sec - busy_base_)];
    row.gpu_utilization = gpus_ > 0 ? std::min(1.0, busy / gpus_) : 0;
  }
  // Busy time of steps that finish later is binned when they finish; drop old bins.
  while (busy_base_ <= sec - 600) {
    if (!busy_by_second_.empty()) busy_by_second_.pop_front();
    ++busy_base_;
    if (busy_by_second_.empty()) {
      busy_base_ = std::max(busy_base_, sec - 599);
      break;
    }
  }
  if (!window_e2e_.empty()) {
    std::sort(window_e2e_.begin(), window_e2e_.end());
    row.e2e_p50_s = percentile_sorted(window_e2e_, 50);
    row.e2e_p99_s = percentile_sorted(window_e2e_, 99);
  }
  timeline_dropped_ += static_cast<std::int64_t>(make_room(&timeline_, max_timeline_rows_));
  timeline_.push_back(row);
  window_ = TimelineRow();
  window_e2e_.clear();
}

}  // namespace prima::metrics
