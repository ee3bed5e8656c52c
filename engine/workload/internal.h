// Internals of engine/workload shared by its .cpp files (not for use outside workload/):
// open-loop arrival processes and the RequestFactory that fills in lengths, priority, SLA and
// shared prefix for each arrival.
//
// ArrivalProcess: yields arrival offsets (seconds since the driver started) in order, lazily.
// RequestFactory: immutable after construction; draws from generators passed in.
// Single-threaded; a process owns its generator; the trace is shared read-only.
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include "engine/workload/lengths.h"
#include "engine/workload/random.h"
#include "engine/workload/trace.h"
#include "engine/workload/workload.h"

namespace prima::workload {

class ArrivalProcess {
 public:
  virtual ~ArrivalProcess() = default;
  // The next arrival's offset if it is before `horizon_s`; nullopt when none will come
  // before it (the process is then finished).
  virtual std::optional<Time> next(double horizon_s) = 0;
  // The trace record of the arrival just returned by next(); nullptr for synthetic processes.
  virtual const TraceRecord* record() const { return nullptr; }
};

using TracePtr = std::shared_ptr<const std::vector<TraceRecord>>;

// Builds the open-loop process for `spec` (not closed_loop). `trace` is required for traces.
Result<std::unique_ptr<ArrivalProcess>> make_arrival_process(const ArrivalSpec& spec,
                                                             std::uint64_t seed, TracePtr trace);

// Piecewise-linear rate at offset t (periodic when period_s > 0).
double profile_rate(const std::vector<RatePoint>& profile, double period_s, double t);

class RequestFactory {
 public:
  explicit RequestFactory(const WorkloadSpec& spec)
      : prompt_(spec.prompt_tokens),
        output_(spec.output_tokens),
        prio_cdf_(cumulative({spec.priority_mix.begin(), spec.priority_mix.end()})),
        sla_s_(spec.sla_s),
        prefix_(spec.prefix) {}

  // Fills the `index`-th request (0, 1, ... in the order made); `rec` (a trace row) supplies
  // lengths and, when given, priority and SLA.
  template <typename G>
  RequestSpec make(Time arrival_s, const TraceRecord* rec, std::uint64_t index, G& prompt_g,
                   G& output_g, G& prio_g, G& prefix_g) const {
    RequestSpec r;
    r.arrival_s = arrival_s;
    if (rec) {
      r.prompt_tokens = rec->prompt_tokens;
      r.output_tokens = rec->output_tokens;
    } else {
      r.prompt_tokens = prompt_.draw(prompt_g, index);
      r.output_tokens = output_.draw(output_g, index);
    }
    r.priority = rec && rec->priority >= 0
                     ? static_cast<Priority>(rec->priority)
                     : static_cast<Priority>(weighted_choice(prio_g, prio_cdf_));
    r.sla_s = rec && rec->sla_s >= 0 ? rec->sla_s : sla_s_[static_cast<int>(r.priority)];
    if (rec && rec->block_hashes) {
      // A Mooncake trace: its block ids say what is shared.
      r.prefix_hashes = rec->block_hashes;
      r.prefix_hash_tokens = rec->hash_block_tokens;
      r.prefix_tokens = static_cast<int>(std::min<std::int64_t>(
          r.prompt_tokens,
          static_cast<std::int64_t>(rec->block_hashes->size()) * rec->hash_block_tokens));
    } else if (prefix_.groups > 0 && uniform01(prefix_g) < prefix_.fraction) {
      r.prefix_group = static_cast<std::uint64_t>(uniform_int(prefix_g, 1, prefix_.groups));
      r.prefix_tokens = std::min(prefix_.tokens, r.prompt_tokens);
    }
    return r;
  }

 private:
  LengthSampler prompt_, output_;
  std::vector<double> prio_cdf_;
  std::array<double, kNumPriorities> sla_s_;
  PrefixSpec prefix_;
};

}  // namespace prima::workload
