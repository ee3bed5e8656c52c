// KV offload tiers below the GPU's prefix cache: host DRAM, local NVMe, remote storage (as
// LMCache and Mooncake's store keep them). A tier holds whole KV blocks by their prefix-cache
// chain hash, in LRU order, up to its capacity.
//
//   - offload: a cached block the GPU evicts (BlockManager) is written to the first tier,
//     unless a tier already holds it (tiers are inclusive: a block read back stays where it
//     was). A full tier demotes its least recently used block to the next tier (written
//     there unless held), and the last tier drops its victim.
//   - lookup: a prefix-cache miss on the GPU looks the chain's next block up tier by tier; a
//     hit is read back into a GPU block (BlockManager::match_prefix), costing
//     seconds_per_block of that tier on the step that admits the sequence.
//
// Traffic: per tier, blocks written - blocks removed (demoted or dropped) = blocks stored,
// always; blocks read count the hits. A tier may be shared by several replicas' hierarchies
// (remote storage): then every replica's evictions and hits meet in it.
// Not thread-safe (engine loop only).
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace prima::kv {

struct KvTierSpec {
  std::string name;                  // "host", "nvme", "remote"
  std::int64_t capacity_blocks = 0;  // whole blocks it holds
  double seconds_per_block = 0;      // reading one block back to the GPU
  double bytes_per_block = 0;        // for reports: one block of the replica's KV
};

struct KvTierStats {
  std::int64_t written = 0;  // blocks written into the tier
  std::int64_t removed = 0;  // blocks demoted to the next tier or dropped
  std::int64_t dropped = 0;  // of removed: not written below (no next tier, or one holds it)
  std::int64_t read = 0;     // blocks read back to a GPU (hits)
  std::int64_t stored = 0;   // blocks it holds now
};

class KvTier {
 public:
  explicit KvTier(KvTierSpec spec) : spec_(std::move(spec)) {}
  const KvTierSpec& spec() const { return spec_; }
  const KvTierStats& stats() const { return stats_; }
  bool contains(std::uint64_t hash) const { return pos_.count(hash) != 0; }
  // Marks a read of `hash` (a hit): most recently used again. False when not held.
  bool read(std::uint64_t hash);
  // Stores `hash` (most recently used). Returns the victim it removed to make room, or 0.
  std::uint64_t write(std::uint64_t hash);
  // The victim just removed is not written to a lower tier (none, or one holds it already).
  void note_dropped() { ++stats_.dropped; }

 private:
  KvTierSpec spec_;
  KvTierStats stats_;
  std::list<std::uint64_t> lru_;  // least recently used first
  std::unordered_map<std::uint64_t, std::list<std::uint64_t>::iterator> pos_;
};

// One replica's tiers, fastest first (shared ones borrowed by shared_ptr), with what reading a
// block of each back costs this replica (its GPUs' share of a block at their bandwidth; empty:
// each tier's seconds_per_block).
class KvTiers {
 public:
  explicit KvTiers(std::vector<std::shared_ptr<KvTier>> tiers, std::vector<double> read_s = {})
      : tiers_(std::move(tiers)), read_s_(std::move(read_s)) {
    for (std::size_t i = read_s_.size(); i < tiers_.size(); ++i)
      read_s_.push_back(tiers_[i]->spec().seconds_per_block);
  }
  bool empty() const { return tiers_.empty(); }
  const std::vector<std::shared_ptr<KvTier>>& tiers() const { return tiers_; }
  // The GPU evicted the cached block `hash`.
  void offload(std::uint64_t hash);
  // The first tier holding `hash` (read: counted as a hit, most recently used), or -1.
  int read(std::uint64_t hash);
  double seconds_per_block(int tier) const { return read_s_[static_cast<std::size_t>(tier)]; }

 private:
  std::vector<std::shared_ptr<KvTier>> tiers_;
  std::vector<double> read_s_;
};

}  // namespace prima::kv
