// Workloads: what requests arrive, when, and how long they are.
//
// A WorkloadSpec is the parsed "workload" object of a scenario: an arrival process (poisson,
// gamma, constant, a time-varying poisson rate profile, closed-loop users, or a replayed
// trace), prompt/output length distributions, a priority mix with per-class SLAs and an
// optional shared-prefix model. make_workload() turns a spec plus a seed into a
// WorkloadDriver, which posts arrivals on a Runtime's clock and hands each one to a Submit
// callback. Drivers generate lazily (one outstanding timer; closed loop: one per user), so a
// day of 20 million requests costs no memory; traces are read fully into memory.
//
// Determinism: the same spec and seed give the same sequence on any machine. All draws come
// from generators derived from the seed (engine/workload/random.h), one stream each for
// arrivals, prompt lengths, output lengths, priorities and prefixes, so changing a length
// distribution never shifts arrival times. Closed-loop users draw think times and lengths
// from per-user streams, so a user's k-th request is the same whatever the serving policy.
//
// Threading: single-threaded, like the rest of the engine; drivers run on the runtime's loop.
// Ownership: the driver keeps the Runtime pointer given to start(), which must outlive it;
// destroying a driver cancels its pending timers.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "engine/config/json_reader.h"
#include "engine/core/request.h"
#include "engine/core/status.h"
#include "engine/core/types.h"
#include "engine/runtime.h"

namespace prima::workload {

struct RequestSpec {  // one request to submit
  Time arrival_s = 0;
  int prompt_tokens = 0;
  int output_tokens = 0;  // tokens to generate
  Priority priority = Priority::kNormal;
  double sla_s = 0;                // latency target for the request (0 = none)
  std::uint64_t user = 0;          // closed-loop user index, 1..users (0 for open-loop)
  std::uint64_t prefix_group = 0;  // requests sharing a prompt prefix (0 = none)
  int prefix_tokens = 0;           // length of that shared prefix (<= prompt_tokens)
  // A Mooncake trace's block hashes: prompt block j (of prefix_hash_tokens tokens) has id
  // (*prefix_hashes)[j]; requests share the blocks of their common leading ids (the prefix
  // cache's identity). Null: none (prefix_group, if any, says what is shared).
  std::shared_ptr<const std::vector<std::uint64_t>> prefix_hashes;
  int prefix_hash_tokens = 0;
};

// The engine request a spec becomes when it arrives at `now`. A spec of 0 generated tokens (a
// trace's prefill-only call) asks for 1: it ends with the first token, as a server answering
// max_tokens=1 would.
Request to_request(const RequestSpec& spec, Time now, RequestId id);

// A token-length distribution. Draws are rounded to integers and clamped to [min, max].
struct LengthSpec {
  enum class Kind { kFixed, kUniform, kLognormal, kNormal, kEmpirical, kSequence };
  Kind kind = Kind::kFixed;
  double value = 0;  // fixed
  // uniform draws integers in [min, max] (the clamps double as the range).
  double mu = 0, sigma = 0;     // lognormal: log-space mean and stddev
  double mean = 0, stddev = 0;  // normal
  std::vector<int> values;      // empirical; sequence (the k-th request takes values[k mod n])
  std::vector<double> weights;  // empirical (same length as values; empty = equal)
  int min = 1;                  // clamps
  int max = std::numeric_limits<int>::max();

  static LengthSpec fixed(int v);
  Status validate(const std::string& what) const;
};

enum class ArrivalType { kPoisson, kGamma, kConstant, kClosedLoop, kTrace };
enum class TraceFormat { kAzureCsv, kJsonl, kMooncake };

struct RatePoint {
  Time t_s = 0;
  double rate_rps = 0;
};

struct ArrivalSpec {
  ArrivalType type = ArrivalType::kPoisson;
  double rate_rps = 1;  // poisson, gamma, constant; trace: target mean rate (0 = as recorded)
  double cv = 1;        // gamma: coefficient of variation of the gaps (1 = poisson)
  // poisson only: piecewise-linear rate over time (thinning). Empty = constant rate_rps.
  std::vector<RatePoint> rate_profile;
  double period_s = 0;  // > 0: the profile repeats with this period
  // closed_loop
  int users = 1;
  bool think_fixed = false;  // fixed think time, else exponential with this mean
  double think_time_s = 0;
  double ramp_up_s = 0;  // users start evenly spread over this time
  // trace
  TraceFormat format = TraceFormat::kAzureCsv;
  std::string path;  // resolved against the scenario's directory
  double time_scale = 1;
  bool loop = false;
};

// Requests share one of `groups` prompt prefixes (group chosen uniformly) with probability
// `fraction`. groups == 0 disables it.
struct PrefixSpec {
  int groups = 0;
  int tokens = 0;
  double fraction = 1;
};

struct WorkloadSpec {
  ArrivalSpec arrival;
  LengthSpec prompt_tokens = LengthSpec::fixed(512);  // ignored for traces (own lengths)
  LengthSpec output_tokens = LengthSpec::fixed(128);
  // Fractions by Priority index (high, normal, low); sum to 1.
  std::array<double, kNumPriorities> priority_mix = {0, 1, 0};
  std::array<double, kNumPriorities> sla_s = {0, 0, 0};  // per class; 0 = none
  PrefixSpec prefix;
  std::uint64_t max_requests = 0;  // 0 = no limit
  // Multi-turn chats (closed_loop only; sessions.enabled): each user holds a conversation of
  // `turns` requests; a turn's prompt is the conversation so far (earlier prompts and
  // outputs) plus `prompt_tokens` new ones, and it shares the conversation's blocks with the
  // earlier turns (prefix cache). The user thinks between turns (think_time_s) and starts a
  // new conversation after the last turn, or when the next prompt would exceed max_context.
  struct Sessions {
    bool enabled = false;
    LengthSpec turns = LengthSpec::fixed(4);
    int max_context = 32768;
  } sessions;
  // MoE routing imbalance: the busiest expert-parallel rank's routed tokens over the mean
  // (>= 1; 1: uniform). Used by the cost model with expert parallelism.
  double expert_load_skew = 1;

  Status validate() const;
};

// Parses the scenario's "workload" object. base_dir resolves relative trace paths. Throws
// config::ConfigError (file, JSON path, what is valid); calls finish() on every object.
WorkloadSpec parse_workload(const config::JsonReader& r, const std::string& base_dir);
// The same, returning a Status instead of throwing.
Result<WorkloadSpec> parse_workload_status(const config::JsonReader& r,
                                           const std::string& base_dir);

class WorkloadDriver {  // posts arrivals on the runtime's clock, one timer outstanding at a time
 public:
  using Submit = std::function<void(const RequestSpec&)>;
  virtual ~WorkloadDriver() = default;
  // Schedules the first arrival(s), relative to rt->now(). Call once.
  virtual Status start(Runtime* rt, Submit submit) = 0;
  // Closed-loop feedback: the user thinks, then sends again. Ignored by open-loop drivers.
  virtual void on_finished(const RequestSpec& spec, Time now) {}
  virtual bool done() const = 0;  // no further arrival will come
  virtual std::uint64_t submitted() const = 0;
};

// Builds a driver (reads a trace file if the spec names one). Arrivals stop at start +
// duration_s (exclusive; infinity = no limit) and after spec.max_requests.
Result<std::unique_ptr<WorkloadDriver>> make_workload(const WorkloadSpec& spec, std::uint64_t seed,
                                                      double duration_s);

}  // namespace prima::workload
