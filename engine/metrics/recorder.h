// Recorder: what a run measured. Per-request records (arrival, first scheduled, first token,
// finish, outcome), per-step device work (busy GPU-seconds and FLOPs, also binned per
// simulated second) and timeline samples. The report writer turns it into report.json,
// requests.csv and timeline.csv. Not thread-safe (engine loop only).
//
// Retention: by default everything is kept (`prima simulate` writes it all). A long-running
// server (`prima serve`, which writes no report) sets a retention: at most N request records
// and M timeline rows are kept (the newest; the oldest are dropped a quarter of the limit at a
// time, so between 3N/4 and N stay once N were reached) and the dropped ones are counted. The
// totals (submitted, count(outcome), output tokens, busy GPU time, FLOPs, preemptions) stay
// exact. The completion latencies of the open timeline window are capped the same way.
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "engine/core/request.h"

namespace prima::metrics {

struct RequestRecord {
  RequestId id = 0;
  Priority priority = Priority::kNormal;
  double sla_s = 0;
  ReplicaId replica = -1;
  Outcome outcome = Outcome::kPending;
  std::string reason;
  int prompt_tokens = 0;
  int output_tokens = 0;  // generated
  int preemptions = 0;
  Time arrival_s = 0, first_scheduled_s = -1, first_token_s = -1, finish_s = -1;

  double ttft_s() const { return first_token_s - arrival_s; }
  double e2e_s() const { return finish_s - arrival_s; }
  double queue_s() const { return first_scheduled_s - arrival_s; }
  // Mean time per output token after the first; 0 with fewer than 2 tokens.
  double tpot_s() const {
    return output_tokens > 1 ? (finish_s - first_token_s) / (output_tokens - 1) : 0;
  }
};

// One row of timeline.csv: the state at the end of second `t_s` and what happened during it.
struct TimelineRow {
  double t_s = 0;
  std::int64_t arrivals = 0, completions = 0, rejections = 0, failures = 0;
  std::int64_t tokens_generated = 0;
  int running = 0, waiting = 0;
  int replicas_up = 0;
  int replicas_loading = 0;    // autoscaling: replicas loading weights (not in timeline.csv yet)
  double kv_usage = 0;         // mean over replicas, 0..1
  double gpu_utilization = 0;  // busy GPU-seconds in the window / (GPUs * window)
  double e2e_p50_s = 0, e2e_p99_s = 0;  // of requests completed in the window
  // Backend columns (Recorder::set_extra_columns), already formatted for CSV.
  std::vector<std::string> extra;
};

class Recorder {
 public:
  explicit Recorder(int gpus = 0) : gpus_(gpus) {}
  void set_gpus(int n) { gpus_ = n; }
  int gpus() const { return gpus_; }

  void on_arrival(Time t);
  // One output token (counted; its time is not kept: per-request times are in on_end).
  void on_token() {
    ++output_tokens_;
    ++window_.tokens_generated;
  }
  void on_token(Time) { on_token(); }
  void on_tokens(std::int64_t n) {  // n output tokens at once
    output_tokens_ += n;
    window_.tokens_generated += n;
  }
  void on_end(const Sequence& s, Time t);  // completed, rejected or failed
  // A step that kept `gpu_seconds` of GPU time busy between start and end, doing `flops`.
  void on_step(Time start, Time end, double gpu_seconds, double flops);
  // Busy seconds of one GPU (by global device id) during a step.
  void on_device_busy(DeviceId d, double seconds) {
    if (d < 0) return;
    if (static_cast<std::size_t>(d) >= device_busy_s_.size()) device_busy_s_.resize(d + 1, 0.0);
    device_busy_s_[d] += seconds;
  }
  void on_preemptions(int n) { preemptions_ += n; }
  // Appends the state sample for second [t-1, t) and closes that window. `extra` holds the
  // values of the extra columns (same order; missing values are written empty).
  void sample(Time t, int running, int waiting, int replicas_up, double kv_usage,
              std::vector<std::string> extra = {});
  // Names of backend-specific timeline columns (fault injection: temperatures, link
  // utilization, retransmission rate, active faults), appended after the standard ones.
  void set_extra_columns(std::vector<std::string> names) { extra_columns_ = std::move(names); }
  const std::vector<std::string>& extra_columns() const { return extra_columns_; }
  void note_memory_fraction(double f);
  // Replicas loading weights, copied into the following samples (autoscaling).
  void note_replicas_loading(int n) { replicas_loading_ = n; }

  // Keep at most `max_records` request records and `max_timeline_rows` timeline rows (0:
  // no limit, the default). Applies from the next record or row on.
  void set_retention(std::size_t max_records, std::size_t max_timeline_rows);
  std::size_t max_records() const { return max_records_; }
  std::size_t max_timeline_rows() const { return max_timeline_rows_; }
  // Records and rows dropped by the retention (0 without one).
  std::int64_t records_dropped() const { return records_dropped_; }
  std::int64_t timeline_rows_dropped() const { return timeline_dropped_; }

  const std::vector<RequestRecord>& records() const { return records_; }
  const std::vector<TimelineRow>& timeline() const { return timeline_; }
  std::int64_t submitted() const { return submitted_; }
  std::int64_t count(Outcome o) const;
  std::int64_t preemptions() const { return preemptions_; }
  std::int64_t output_tokens() const { return output_tokens_; }
  double busy_gpu_seconds() const { return busy_gpu_s_; }
  const std::vector<double>& device_busy_seconds() const { return device_busy_s_; }
  double flops() const { return flops_; }
  double memory_fraction_max() const { return memory_fraction_max_; }
  double first_arrival_s() const { return first_arrival_s_; }
  double last_finish_s() const { return last_finish_s_; }

 private:
  void add_busy(Time start, Time end, double gpu_seconds);

  int gpus_;
  std::size_t max_records_ = 0, max_timeline_rows_ = 0;  // 0: no limit
  std::int64_t records_dropped_ = 0, timeline_dropped_ = 0;
  std::vector<RequestRecord> records_;
  std::vector<TimelineRow> timeline_;
  std::int64_t submitted_ = 0, completed_ = 0, rejected_ = 0, failed_ = 0;
  std::int64_t preemptions_ = 0, output_tokens_ = 0;
  double busy_gpu_s_ = 0, flops_ = 0, memory_fraction_max_ = 0;
  std::vector<double> device_busy_s_;  // by DeviceId
  double first_arrival_s_ = -1, last_finish_s_ = 0;
  int replicas_loading_ = 0;
  std::vector<std::string> extra_columns_;
  // Current window accumulators.
  TimelineRow window_;
  std::vector<double> window_e2e_;
  // Busy GPU-seconds per second: busy_by_second_[i] is second busy_base_ + i.
  double& busy_bin(std::int64_t sec);
  std::deque<double> busy_by_second_;
  std::int64_t busy_base_ = 0;
  double busy_dropped_ = 0;  // sink for bins already closed and dropped
};

}  // namespace prima::metrics
