#include "engine/cluster/autoscaler.h"

#include <algorithm>
#include <cmath>

namespace prima::cluster {

void Autoscaler::start() {
  stop();
  // The count at start is the first recommendation: no scale-down before a full window.
  if (history_.empty())
    history_.emplace_back(
        rt_->now(), engine_->count(ReplicaState::kActive) + engine_->count(ReplicaState::kLoading));
  timer_ = rt_->at(rt_->now() + opts_.interval_s, [this] {
    timer_ = kNoTimer;
    evaluate();
    start();
  });
}

void Autoscaler::stop() {
  if (timer_ != kNoTimer) rt_->cancel(timer_);
  timer_ = kNoTimer;
}

void Autoscaler::evaluate() {
  const Time now = rt_->now();
  std::vector<ReplicaLoad> loads = engine_->sample_utilization();
  const int active = static_cast<int>(loads.size());
  const int loading = engine_->count(ReplicaState::kLoading);
  double util = 0;
  for (const auto& l : loads) util += l.utilization;
  util = active > 0 ? util / active : 0;
  last_utilization_ = util;

  int desired = active;
  const double ratio = util / opts_.target_utilization;
  if (active > 0 && std::abs(ratio - 1.0) > opts_.tolerance)
    desired = static_cast<int>(std::ceil(active * ratio - 1e-9));
  desired = std::clamp(desired, opts_.min_replicas, opts_.max_replicas);
  last_desired_ = desired;
  history_.emplace_back(now, desired);
  while (!history_.empty() && history_.front().first < now - opts_.scale_down_stabilization_s)
    history_.pop_front();

  const int current = active + loading;
  if (desired > current) {
    for (int k = current; k < desired; ++k) {
      if (engine_->add_replica() < 0) break;  // no free GPUs
      ++counters_->scale_ups;
    }
    return;
  }
  int stabilized = desired;
  for (const auto& [t, d] : history_) stabilized = std::max(stabilized, d);
  if (loading > 0 || stabilized >= active) return;
  std::vector<ReplicaLoad> idle;  // candidates: served most of the window
  for (const auto& l : loads)
    if (l.window_s >= 0.5 * opts_.interval_s &&
        (!opts_.scale_down_idle_only || l.utilization < opts_.scale_down_utilization))
      idle.push_back(l);
  std::stable_sort(idle.begin(), idle.end(), [](const ReplicaLoad& a, const ReplicaLoad& b) {
    return a.utilization < b.utilization || (a.utilization == b.utilization && a.id > b.id);
  });
  int n = active - stabilized;
  for (const auto& l : idle) {
    if (n == 0) break;
    if (engine_->drain_replica(l.id)) {
      ++counters_->scale_downs;
      --n;
    }
  }
}

}  // namespace prima::cluster
