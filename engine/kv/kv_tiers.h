// KV offload tiers below the GPU's prefix cache: host DRAM, local NVMe, remote storage (as
// LMCache and Mooncake's store keep them). A tier holds whole KV blocks by their prefix-cache
// chain hash, in LRU order, up to its capacity.
//
//   - offload: a cached block the GPU evicts (BlockManager) is written to the first tier,
//     unless a tier already holds it (tiers are inclusive: a block read back stays where it
//     was). A full tier demotes its least recently used block to the next tier (written
//     there unless held), and the last tier drops its victim. Writes are asynchronous: each
//     replica's writes into a tier queue one after another at its write time per block, and
//     a block is readable once its write has finished.
//   - lookup: a prefix-cache miss on the GPU looks the chain's next block up tier by tier; a
//     hit is read back into a GPU block (BlockManager::match_prefix), costing
//     seconds_per_block of that tier on the step that admits the sequence. A block still
//     being written is a miss (counted as late).
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
  std::string name;                    // "host", "nvme", "remote"
  std::int64_t capacity_blocks = 0;    // whole blocks it holds
  double seconds_per_block = 0;        // reading one block back to the GPU
  double bytes_per_block = 0;          // for reports: one block of the replica's KV
  double write_seconds_per_block = 0;  // writing one block from the GPU (0: instant)
};

struct KvTierStats {
  std::int64_t written = 0;  // blocks written into the tier
  std::int64_t removed = 0;  // blocks demoted to the next tier or dropped
  std::int64_t dropped = 0;  // of removed: not written below (no next tier, or one holds it)
  std::int64_t read = 0;     // blocks read back to a GPU (hits)
  std::int64_t late = 0;     // lookups that found the block still being written (misses)
  std::int64_t stored = 0;   // blocks it holds now
};

class KvTier {
 public:
  explicit KvTier(KvTierSpec spec) : spec_(std::move(spec)) {}
  const KvTierSpec& spec() const { return spec_; }
  const KvTierStats& stats() const { return stats_; }
  bool contains(std::uint64_t hash) const { return pos_.count(hash) != 0; }
  // Marks a read of `hash` at `now` (a hit): most recently used again. False when not held,
  // or not yet written (late).
  bool read(std::uint64_t hash, double now = 0);
  // Stores `hash` (most recently used), readable from `ready_s`. Returns the victim it removed
  // to make room, or 0.
  std::uint64_t write(std::uint64_t hash, double ready_s = 0);
  // The victim just removed is not written to a lower tier (none, or one holds it already).
  void note_dropped() { ++stats_.dropped; }

 private:
  KvTierSpec spec_;
  KvTierStats stats_;
  struct Entry {
    std::list<std::uint64_t>::iterator pos;
    double ready_s;  // when its write finishes
  };
  std::list<std::uint64_t> lru_;  // least recently used first
  std::unordered_map<std::uint64_t, Entry> pos_;
};

// One replica's tiers, fastest first (shared ones borrowed by shared_ptr), with what reading a
// block of each back and writing one into each costs this replica (its GPUs' share of a block
// at their bandwidth; empty: each tier's spec), and its write queue into each.
class KvTiers {
 public:
  explicit KvTiers(std::vector<std::shared_ptr<KvTier>> tiers, std::vector<double> read_s = {},
                   std::vector<double> write_s = {});
  bool empty() const { return tiers_.empty(); }
  const std::vector<std::shared_ptr<KvTier>>& tiers() const { return tiers_; }
  // The time of the engine's current step (writes queue from it, reads check readiness).
  void set_now(double now) { now_ = now; }
  // The GPU evicted the cached block `hash`.
  void offload(std::uint64_t hash);
  // The first tier holding `hash` written by now (read: counted as a hit, most recently used),
  // or -1.
  int read(std::uint64_t hash);
  double seconds_per_block(int tier) const { return read_s_[static_cast<std::size_t>(tier)]; }
  double write_seconds_per_block(int tier) const {
    return write_s_[static_cast<std::size_t>(tier)];
  }

 private:
  // Queues a write into tier i at now_: when it will be readable.
  double queue_write(std::size_t i);

  std::vector<std::shared_ptr<KvTier>> tiers_;
  std::vector<double> read_s_, write_s_;
  std::vector<double> busy_until_;  // this replica's write queue per tier
  double now_ = 0;
};

}  // namespace prima::kv
