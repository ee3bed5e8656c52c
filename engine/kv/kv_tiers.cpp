// KvTier and KvTiers (kv_tiers.h): LRU tiers of KV blocks by chain hash.
#include "engine/kv/kv_tiers.h"

namespace prima::kv {

bool KvTier::read(std::uint64_t hash) {
  auto it = pos_.find(hash);
  if (it == pos_.end()) return false;
  lru_.splice(lru_.end(), lru_, it->second);
  ++stats_.read;
  return true;
}

std::uint64_t KvTier::write(std::uint64_t hash) {
  if (spec_.capacity_blocks <= 0 || pos_.count(hash)) return 0;
  std::uint64_t victim = 0;
  if (static_cast<std::int64_t>(lru_.size()) >= spec_.capacity_blocks) {
    victim = lru_.front();
    pos_.erase(victim);
    lru_.pop_front();
    ++stats_.removed;
    --stats_.stored;
  }
  pos_[hash] = lru_.insert(lru_.end(), hash);
  ++stats_.written;
  ++stats_.stored;
  return victim;
}

void KvTiers::offload(std::uint64_t hash) {
  for (const auto& t : tiers_)
    if (t->contains(hash)) return;  // inclusive: already below the GPU
  std::uint64_t moving = hash;
  for (std::size_t i = 0; i < tiers_.size() && moving != 0; ++i) {
    const std::uint64_t victim = tiers_[i]->write(moving);
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
    if (tiers_[i]->read(hash)) return static_cast<int>(i);
  return -1;
}

}  // namespace prima::kv
