// Open-loop arrival processes: poisson (constant rate or a piecewise-linear rate profile by
// thinning), gamma renewal, constant spacing and trace replay.
#include <algorithm>
#include <cmath>

#include "engine/workload/internal.h"

namespace prima::workload {
namespace {

class PoissonProcess : public ArrivalProcess {
 public:
  PoissonProcess(double rate, std::uint64_t seed) : rate_(rate), g_(seed) {}
  std::optional<Time> next(double horizon_s) override {
    t_ += exponential(g_, rate_);
    if (!(t_ < horizon_s)) return std::nullopt;
    return t_;
  }

 private:
  double rate_;
  Rng g_;
  double t_ = 0;
};

// Renewal process with gamma gaps: mean 1/rate, coefficient of variation cv.
class GammaProcess : public ArrivalProcess {
 public:
  GammaProcess(double rate, double cv, std::uint64_t seed)
      : shape_(1.0 / (cv * cv)), scale_(1.0 / (rate * shape_)), g_(seed) {}
  std::optional<Time> next(double horizon_s) override {
    t_ += standard_gamma(g_, shape_) * scale_;
    if (!(t_ < horizon_s)) return std::nullopt;
    return t_;
  }

 private:
  double shape_, scale_;
  Rng g_;
  double t_ = 0;
};

// Arrivals at 0, 1/rate, 2/rate, ... (computed from the index: no drift).
class ConstantProcess : public ArrivalProcess {
 public:
  explicit ConstantProcess(double rate) : rate_(rate) {}
  std::optional<Time> next(double horizon_s) override {
    double t = static_cast<double>(k_) / rate_;
    if (!(t < horizon_s)) return std::nullopt;
    ++k_;
    return t;
  }

 private:
  double rate_;
  std::uint64_t k_ = 0;
};

// Non-homogeneous poisson by thinning (Lewis & Shedler): candidates at the peak rate, each
// kept with probability rate(t) / peak.
class ProfileProcess : public ArrivalProcess {
 public:
  ProfileProcess(std::vector<RatePoint> profile, double period_s, std::uint64_t seed)
      : profile_(std::move(profile)), period_s_(period_s), g_(seed) {
    for (const auto& p : profile_) peak_ = std::max(peak_, p.rate_rps);
  }
  std::optional<Time> next(double horizon_s) override {
    if (!(peak_ > 0)) return std::nullopt;
    for (;;) {
      // Past the end of a one-shot profile with rate 0 nothing more will come.
      if (period_s_ <= 0 && t_ >= profile_.back().t_s && profile_.back().rate_rps <= 0)
        return std::nullopt;
      t_ += exponential(g_, peak_);
      if (!(t_ < horizon_s)) return std::nullopt;
      if (uniform01(g_) * peak_ < profile_rate(profile_, period_s_, t_)) return t_;
    }
  }

 private:
  std::vector<RatePoint> profile_;
  double period_s_;
  Rng g_;
  double peak_ = 0;
  double t_ = 0;
};

// Replays records; offsets are scaled, and with `loop` the trace repeats every period.
class TraceProcess : public ArrivalProcess {
 public:
  TraceProcess(TracePtr trace, double scale, bool loop)
      : trace_(std::move(trace)), scale_(scale), loop_(loop) {
    const auto& v = *trace_;
    double span = v.back().arrival_s - v.front().arrival_s;
    // One mean gap after the last record, so the seam looks like the rest of the trace.
    period_s_ = v.size() > 1 ? span + span / static_cast<double>(v.size() - 1) : 0;
  }
  std::optional<Time> next(double horizon_s) override {
    const auto& v = *trace_;
    if (i_ == v.size()) {
      if (!loop_) return std::nullopt;
      i_ = 0;
      ++laps_;
    }
    double t = (v[i_].arrival_s + static_cast<double>(laps_) * period_s_) * scale_;
    if (!(t < horizon_s)) return std::nullopt;
    current_ = &v[i_++];
    return t;
  }
  const TraceRecord* record() const override { return current_; }

 private:
  TracePtr trace_;
  double scale_;
  bool loop_;
  double period_s_ = 0;
  std::size_t i_ = 0;
  std::uint64_t laps_ = 0;
  const TraceRecord* current_ = nullptr;
};

}  // namespace

double profile_rate(const std::vector<RatePoint>& profile, double period_s, double t) {
  if (profile.empty()) return 0;
  if (period_s > 0) {
    t = std::fmod(t, period_s);
    if (t < 0) t += period_s;
    // Wrap: between the last point and the first point of the next period.
    const RatePoint& last = profile.back();
    const RatePoint& first = profile.front();
    if (t >= last.t_s || t < first.t_s) {
      double t0 = last.t_s, t1 = first.t_s + period_s;
      double x = t >= last.t_s ? t : t + period_s;
      if (t1 <= t0) return last.rate_rps;
      return last.rate_rps + (first.rate_rps - last.rate_rps) * (x - t0) / (t1 - t0);
    }
  } else {
    if (t <= profile.front().t_s) return profile.front().rate_rps;
    if (t >= profile.back().t_s) return profile.back().rate_rps;
  }
  // First point after t.
  auto it = std::upper_bound(profile.begin(), profile.end(), t,
                             [](double x, const RatePoint& p) { return x < p.t_s; });
  const RatePoint& b = *it;
  const RatePoint& a = *(it - 1);
  return a.rate_rps + (b.rate_rps - a.rate_rps) * (t - a.t_s) / (b.t_s - a.t_s);
}

Result<std::unique_ptr<ArrivalProcess>> make_arrival_process(const ArrivalSpec& spec,
                                                             std::uint64_t seed, TracePtr trace) {
  const std::uint64_t s = derive_seed(seed, Stream::kArrival);
  switch (spec.type) {
    case ArrivalType::kPoisson:
      if (!spec.rate_profile.empty())
        return std::unique_ptr<ArrivalProcess>(
            new ProfileProcess(spec.rate_profile, spec.period_s, s));
      return std::unique_ptr<ArrivalProcess>(new PoissonProcess(spec.rate_rps, s));
    case ArrivalType::kGamma:
      return std::unique_ptr<ArrivalProcess>(new GammaProcess(spec.rate_rps, spec.cv, s));
    case ArrivalType::kConstant:
      return std::unique_ptr<ArrivalProcess>(new ConstantProcess(spec.rate_rps));
    case ArrivalType::kTrace: {
      if (!trace || trace->empty()) return invalid_argument(spec.path + ": empty trace");
      const auto& v = *trace;
      double span = v.back().arrival_s - v.front().arrival_s;
      double scale = spec.time_scale;
      if (spec.rate_rps > 0) {
        if (v.size() < 2 || !(span > 0))
          return invalid_argument(spec.path +
                                  ": rate_rps needs a trace with at least two distinct "
                                  "arrival times (it rescales the recorded mean rate)");
        double recorded_rps = static_cast<double>(v.size() - 1) / span;
        scale = recorded_rps / spec.rate_rps;
      }
      if (spec.loop && (v.size() < 2 || !(span > 0)))
        return invalid_argument(spec.path +
                                ": loop needs a trace with at least two distinct arrival times");
      return std::unique_ptr<ArrivalProcess>(new TraceProcess(std::move(trace), scale, spec.loop));
    }
    case ArrivalType::kClosedLoop:
      break;
  }
  return internal_error("make_arrival_process: closed_loop is not an open-loop process");
}

}  // namespace prima::workload
