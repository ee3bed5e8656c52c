#include "engine/cluster/load_migration.h"

#include <algorithm>

#include "engine/cluster/replica.h"

namespace prima::cluster {

LoadMigrator::Stats& LoadMigrator::stats(ReplicaId id) {
  if (static_cast<std::size_t>(id) >= stats_.size()) stats_.resize(id + 1);
  return stats_[id];
}

void LoadMigrator::on_step(ReplicaId id, std::int64_t tokens, double busy_s) {
  Stats& s = stats(id);
  s.tokens += static_cast<double>(tokens);
  s.busy_s += busy_s;
}

void LoadMigrator::on_work() {
  if (timer_ != kNoTimer) return;
  timer_ = rt_->at(rt_->now() + opts_.interval_s, [this] {
    timer_ = kNoTimer;
    evaluate();
    if (engine_->in_system() > 0) on_work();
  });
}

void LoadMigrator::stop() {
  if (timer_ != kNoTimer) rt_->cancel(timer_);
  timer_ = kNoTimer;
}

double LoadMigrator::speed(ReplicaId id) const {
  return static_cast<std::size_t>(id) < stats_.size() ? stats_[id].speed : 0;
}

double LoadMigrator::relative_speed(ReplicaId id) const {
  const double s = speed(id);
  return s > 0 && mean_speed_ > 0 ? s / mean_speed_ : 1.0;
}

int LoadMigrator::evaluate() {
  // Speeds from this interval's steps.
  for (Stats& s : stats_) {
    if (s.busy_s > 0 && s.tokens > 0) s.speed = s.tokens / s.busy_s;
    s.tokens = s.busy_s = 0;
  }
  const std::vector<Replica*>& pool = engine_->routing_pool();
  std::vector<double> known;
  for (const Replica* r : pool)
    if (speed(r->id()) > 0) known.push_back(speed(r->id()));
  mean_speed_ = 0;
  for (double v : known) mean_speed_ += v / static_cast<double>(known.size());
  if (pool.size() < 2 || known.empty()) return 0;
  std::sort(known.begin(), known.end());
  const double median_speed = known[known.size() / 2];

  const std::size_t n = pool.size();
  std::vector<double> spd(n), work(n), wait(n);
  for (std::size_t i = 0; i < n; ++i) {
    spd[i] = speed(pool[i]->id()) > 0 ? speed(pool[i]->id()) : median_speed;
    work[i] = static_cast<double>(pool[i]->work_left_tokens());
    wait[i] = work[i] / spd[i];
  }
  std::vector<double> sorted = wait;
  std::sort(sorted.begin(), sorted.end());
  const double median = n % 2 ? sorted[n / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]);
  const double limit = opts_.imbalance_ratio * median;

  std::vector<std::size_t> order(n);
  for (std::size_t i = 0; i < n; ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return wait[a] > wait[b]; });
  int moves = 0;
  for (std::size_t src : order) {
    if (moves >= opts_.max_moves_per_interval || wait[src] <= limit || wait[src] <= 0) break;
    std::vector<Sequence*> cand = pool[src]->movable();
    // The newest waiting sequences would wait longest here: they move first.
    for (auto it = cand.rbegin(); it != cand.rend(); ++it) {
      if (moves >= opts_.max_moves_per_interval || wait[src] <= limit) break;
      Sequence* s = *it;
      const double w =
          static_cast<double>(s->remaining() + s->req.max_output_tokens - s->num_generated - 1);
      std::size_t dst = n;
      for (std::size_t j = 0; j < n; ++j)
        if (j != src && pool[j]->can_ever_fit(*s) && (dst == n || wait[j] < wait[dst])) dst = j;
      // Only while it helps: the sequence would wait less there than it waits here.
      if (dst == n || (work[dst] + w) / spd[dst] >= wait[src]) continue;
      if (!pool[src]->cancel(s)) continue;
      pool[dst]->submit(s);
      ++counters_->migrations;
      ++moves;
      work[src] -= w;
      work[dst] += w;
      wait[src] = work[src] / spd[src];
      wait[dst] = work[dst] / spd[dst];
    }
  }
  return moves;
}

}  // namespace prima::cluster
