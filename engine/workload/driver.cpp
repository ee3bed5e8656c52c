// WorkloadDrivers: open loop (an ArrivalProcess, one timer outstanding) and closed loop
// (N users, each with at most one request in flight and one timer), and make_workload().
#include <algorithm>
#include <cmath>
#include <limits>

#include "engine/workload/internal.h"

namespace prima::workload {
namespace {

// What both drivers share: the runtime, the submit callback and the start time, bound once.
class DriverBase : public WorkloadDriver {
 protected:
  Status bind(Runtime* rt, Submit submit) {
    if (rt_) return failed_precondition("workload driver: start() called twice");
    if (!rt || !submit)
      return invalid_argument("workload driver: start() needs a runtime and a submit callback");
    rt_ = rt;
    submit_ = std::move(submit);
    t0_ = rt_->now();
    return ok_status();
  }

  Runtime* rt_ = nullptr;
  Submit submit_;
  Time t0_ = 0;
};

class OpenLoopDriver : public DriverBase {
 public:
  OpenLoopDriver(const WorkloadSpec& spec, std::unique_ptr<ArrivalProcess> process,
                 std::uint64_t seed, double duration_s)
      : factory_(spec),
        process_(std::move(process)),
        max_requests_(spec.max_requests),
        duration_s_(duration_s),
        prompt_g_(derive_seed(seed, Stream::kPromptLen)),
        output_g_(derive_seed(seed, Stream::kOutputLen)),
        prio_g_(derive_seed(seed, Stream::kPriority)),
        prefix_g_(derive_seed(seed, Stream::kPrefix)) {}
  ~OpenLoopDriver() override {
    if (rt_ && timer_ != kNoTimer) rt_->cancel(timer_);
  }

  Status start(Runtime* rt, Submit submit) override {
    PRIMA_RETURN_IF_ERROR(bind(rt, std::move(submit)));
    schedule_next();
    return ok_status();
  }
  bool done() const override { return done_; }
  std::uint64_t submitted() const override { return submitted_; }

 private:
  void schedule_next() {
    timer_ = kNoTimer;
    if (max_requests_ > 0 && submitted_ >= max_requests_) {
      done_ = true;
      return;
    }
    std::optional<Time> t = process_->next(duration_s_);
    if (!t) {
      done_ = true;
      return;
    }
    const TraceRecord* rec = process_->record();
    if (rec) record_ = *rec;
    has_record_ = rec != nullptr;
    next_s_ = t0_ + *t;
    timer_ = rt_->at(next_s_, [this] { fire(); });
  }

  void fire() {
    timer_ = kNoTimer;
    RequestSpec r = factory_.make(next_s_, has_record_ ? &record_ : nullptr, submitted_, prompt_g_,
                                  output_g_, prio_g_, prefix_g_);
    ++submitted_;
    // Schedule first, so done() is already right while submit_ runs.
    schedule_next();
    submit_(r);
  }

  RequestFactory factory_;
  std::unique_ptr<ArrivalProcess> process_;
  std::uint64_t max_requests_;
  double duration_s_;
  Rng prompt_g_, output_g_, prio_g_, prefix_g_;
  Time next_s_ = 0;
  TraceRecord record_;
  bool has_record_ = false;
  TimerId timer_ = kNoTimer;
  std::uint64_t submitted_ = 0;
  bool done_ = false;
};

// Locust-style users: user u (1..N) starts at ramp_up_s * (u-1) / N, sends a request, waits
// for it to finish (on_finished), thinks, and sends again. Every user draws from its own
// streams, so its k-th think time and request do not depend on the serving order.
class ClosedLoopDriver : public DriverBase {
 public:
  ClosedLoopDriver(const WorkloadSpec& spec, std::uint64_t seed, double duration_s)
      : factory_(spec),
        arrival_(spec.arrival),
        sessions_(spec.sessions),
        turns_(spec.sessions.turns),
        max_requests_(spec.max_requests),
        duration_s_(duration_s) {
    users_.reserve(static_cast<std::size_t>(spec.arrival.users));
    for (int u = 1; u <= spec.arrival.users; ++u) {
      auto s = [&](Stream k) { return derive_seed(derive_seed(seed, Stream::kUser, u), k); };
      users_.push_back(User{SplitMix64(s(Stream::kArrival)), SplitMix64(s(Stream::kPromptLen)),
                            SplitMix64(s(Stream::kOutputLen)), SplitMix64(s(Stream::kPriority)),
                            SplitMix64(s(Stream::kPrefix))});
    }
  }
  ~ClosedLoopDriver() override {
    if (!rt_) return;
    for (auto& u : users_)
      if (u.timer != kNoTimer) rt_->cancel(u.timer);
  }

  Status start(Runtime* rt, Submit submit) override {
    PRIMA_RETURN_IF_ERROR(bind(rt, std::move(submit)));
    active_ = users_.size();
    const double n = static_cast<double>(users_.size());
    for (std::size_t i = 0; i < users_.size(); ++i) {
      double offset = arrival_.ramp_up_s * static_cast<double>(i) / n;
      schedule(i, t0_ + offset);
    }
    return ok_status();
  }

  void on_finished(const RequestSpec& spec, Time now) override {
    if (spec.user == 0 || spec.user > users_.size()) return;
    std::size_t i = spec.user - 1;
    User& u = users_[i];
    if (!u.outstanding) return;  // not ours, or reported twice
    u.outstanding = false;
    if (sessions_.enabled) {  // the answer joins the conversation
      u.context = spec.prompt_tokens + spec.output_tokens;
      --u.turns_left;
    }
    if (stopped_) return;
    double think = arrival_.think_fixed        ? arrival_.think_time_s
                   : arrival_.think_time_s > 0 ? exponential(u.think_g, 1.0 / arrival_.think_time_s)
                                               : 0.0;
    schedule(i, now + think);
  }

  bool done() const override { return stopped_ || active_ == 0; }
  std::uint64_t submitted() const override { return submitted_; }

 private:
  struct User {
    SplitMix64 think_g, prompt_g, output_g, prio_g, prefix_g;
    TimerId timer = kNoTimer;
    // Sessions: the conversation (its id, turns left, tokens so far).
    std::uint64_t conversation = 0, conversations = 0;
    int turns_left = 0;
    int context = 0;
    bool outstanding = false;
    bool retired = false;
  };

  void schedule(std::size_t i, Time t) {
    User& u = users_[i];
    if (!(t - t0_ < duration_s_)) {
      retire(u);
      return;
    }
    u.timer = rt_->at(t, [this, i] { fire(i); });
  }

  void retire(User& u) {
    if (u.retired) return;
    u.retired = true;
    --active_;
  }

  void fire(std::size_t i) {
    User& u = users_[i];
    u.timer = kNoTimer;
    if (stopped_) return;
    RequestSpec r = factory_.make(rt_->now(), nullptr, submitted_, u.prompt_g, u.output_g, u.prio_g,
                                  u.prefix_g);
    r.user = i + 1;
    if (sessions_.enabled) continue_conversation(u, i, &r);
    u.outstanding = true;
    ++submitted_;
    if (max_requests_ > 0 && submitted_ >= max_requests_) stop();
    submit_(r);
  }

  // A turn: the conversation so far plus the new prompt tokens, all of it its conversation's
  // blocks (prefix group: a per-user conversation id, bit 62 set to stay clear of
  // shared_prefix groups). A new conversation after the last turn or past max_context.
  void continue_conversation(User& u, std::size_t i, RequestSpec* r) {
    if (u.turns_left <= 0 || u.context + r->prompt_tokens > sessions_.max_context) {
      u.conversation = (std::uint64_t{1} << 62) | (std::uint64_t(i + 1) << 32) | ++u.conversations;
      u.turns_left = std::max(1, turns_.draw(u.prefix_g, u.conversations - 1));
      u.context = 0;
    }
    r->prompt_tokens += u.context;
    r->prefix_group = u.conversation;
    r->prefix_tokens = r->prompt_tokens;
  }

  // No more arrivals: cancel every pending timer.
  void stop() {
    stopped_ = true;
    for (auto& u : users_) {
      if (u.timer != kNoTimer) rt_->cancel(u.timer);
      u.timer = kNoTimer;
      retire(u);
    }
  }

  RequestFactory factory_;
  ArrivalSpec arrival_;
  WorkloadSpec::Sessions sessions_;
  LengthSampler turns_;
  std::uint64_t max_requests_;
  double duration_s_;
  std::vector<User> users_;
  std::size_t active_ = 0;
  std::uint64_t submitted_ = 0;
  bool stopped_ = false;
};

}  // namespace

Result<std::unique_ptr<WorkloadDriver>> make_workload(const WorkloadSpec& spec, std::uint64_t seed,
                                                      double duration_s) {
  if (!(duration_s > 0))
    return invalid_argument("workload: duration_s must be > 0 (or infinity for no limit), got " +
                            std::to_string(duration_s));
  PRIMA_RETURN_IF_ERROR(spec.validate());
  if (spec.arrival.type == ArrivalType::kClosedLoop)
    return std::unique_ptr<WorkloadDriver>(new ClosedLoopDriver(spec, seed, duration_s));
  TracePtr trace;
  if (spec.arrival.type == ArrivalType::kTrace) {
    auto records = read_trace(spec.arrival.format, spec.arrival.path);
    if (!records.ok()) return records.status();
    trace = std::make_shared<const std::vector<TraceRecord>>(std::move(records).value());
  }
  auto process = make_arrival_process(spec.arrival, seed, std::move(trace));
  if (!process.ok()) return process.status();
  return std::unique_ptr<WorkloadDriver>(
      new OpenLoopDriver(spec, std::move(process).value(), seed, duration_s));
}

Request to_request(const RequestSpec& spec, Time now, RequestId id) {
  Request r;
  r.id = id;
  r.arrival_s = now;
  r.prompt_tokens = spec.prompt_tokens;
  r.max_output_tokens = std::max(1, spec.output_tokens);
  r.priority = spec.priority;
  r.sla_s = spec.sla_s;
  r.user = spec.user;
  r.prefix_group = spec.prefix_group;
  r.prefix_tokens = spec.prefix_tokens;
  r.prefix_hashes = spec.prefix_hashes;
  r.prefix_hash_tokens = spec.prefix_hash_tokens;
  return r;
}

}  // namespace prima::workload
