// KvTier and KvTiers (kv_tiers.h): LRU tiers of KV blocks by chain hash.
#include "engine/kv/kv_tiers.h"

#include <algorithm>

namespace prima::kv {

bool KvTier::read(std::uint64_t hash, double now) {
  auto it = pos_.find(hash);
  if (it == pos_.end()) return false;
  if (it->second.ready_s > now) {
    ++stats_.late;
    return false;
  }
  lru_.splice(lru_.end(), lru_, it->second.pos);
  ++stats_.read;
  return true;
}

std::uint64_t KvTier::write(std::uint64_t hash, double ready_s) {
  if (spec_.capacity_blocks <= 0 || pos_.count(hash)) return 0;
  std::uint64_t victim = 0;
  if (static_cast<std::int64_t>(lru_.size()) >= spec_.capacity_blocks) {
    victim = lru_.front();
    pos_.erase(victim);
    lru_.pop_front();
    ++stats_.removed;
    --stats_.stored;
  }
  pos_[hash] = Entry{lru_.insert(lru_.end(), hash), ready_s};
  ++stats_.written;
  ++stats_.stored;
  return victim;
}

KvTiers::KvTiers(std::vector<std::shared_ptr<KvTier>> tiers, std::vector<double> read_s,
                 std::vector<double> write_s)
    : tiers_(std::move(tiers)),
      read_s_(std::move(read_s)),
      write_s_(std::move(write_s)),
      busy_until_(tiers_.size(), 0.0) {
  for (std::size_t i = read_s_.size(); i < tiers_.size(); ++i)
    read_s_.push_back(tiers_[i]->spec().seconds_per_block);
  for (std::size_t i = write_s_.size(); i < tiers_.size(); ++i)
    write_s_.push_back(tiers_[i]->spec().write_seconds_per_block);
}

double KvTiers::queue_write(std::size_t i) {
  busy_until_[i] = std::max(busy_until_[i], now_) + write_s_[i];
  return busy_until_[i];
}

void KvTiers::offload(std::uint64_t hash) {
  for (const auto& t : tiers_)
    if (t->contains(hash)) return;  // inclusive: already below the GPU
  std::uint64_t moving = hash;
  for (std::size_t i = 0; i < tiers_.size() && moving != 0; ++i) {
    const double ready = tiers_[i]->spec().capacity_blocks > 0 ? queue_write(i) : now_;
    const std::uint64_t victim = tiers_[i]->write(moving, ready);
    if (victim == 0) return;
    // The victim goes one tier down unless that tier (or one below it) holds it already.
    bool held = false;
    for (std::size_t j = i + 1; j < tiers_.size() && !held; ++j) held = tiers_[j]->contains(victim);
    if (i + 1 == tiers_.size() || held) {
      tiers_[i]->note_dropped();
      return;
    }
    moving = victim;
  }
}

int KvTiers::read(std::uint64_t hash) {
  for (std::size_t i = 0; i < tiers_.size(); ++i)
    if (tiers_[i]->read(hash, now_)) return static_cast<int>(i);
  return -1;
}

}  // namespace prima::kv
