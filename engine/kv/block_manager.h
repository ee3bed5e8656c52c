// BlockManager: the paged KV cache of one replica (vLLM's PagedAttention layout), with an
// optional prefix cache.
//
// The cache is `num_blocks` blocks of `block_size` tokens. A sequence holds a block table
// (Sequence::blocks) that grows as it computes tokens; blocks return to the free list when it
// finishes or is preempted. Admission keeps a watermark of free blocks so running sequences
// can grow without immediate preemption. Physical block ids are real: the real backend
// indexes its K/V tensors with them.
//
// Prefix cache (off by default; set_prefix_caching): a full block whose tokens are all
// prompt tokens gets a chained hash (hash of the parent block's hash and the block's content
// identity). Identity: in simulation (no token ids) block i of a request inside its shared
// prefix is (prefix_group, i), and past it (request id, i), registered only when the request
// is preempted (keep_for_recompute): its own recompute finds those; with real token ids
// (Request::prompt_ids) it is the hash of the block's ids. Blocks are reference counted: sequences
// with the same prefix share them. A cached block whose last user released it stays in the cache
// (evictable, LRU order) until a block is needed and the free list is empty. Evictable blocks count
// as free.
//
// Memory: paged blocks have no external fragmentation (any free block serves any sequence),
// so compact() cannot defragment anything; it only drops the evictable prefix-cache blocks
// back to the free list and restores the free list's order (lowest ids first). Only the
// last block of a sequence wastes space (internal fragmentation, < one block per sequence).
// Not thread-safe (engine loop only).
#pragma once

#include <cstdint>
#include <list>
#include <unordered_map>
#include <vector>

#include "engine/core/request.h"
#include "engine/kv/kv_tiers.h"

namespace prima::kv {

class BlockManager {
 public:
  BlockManager(int num_blocks, int block_size, double watermark = 0.01);

  int block_size() const { return block_size_; }
  int num_blocks() const { return num_blocks_; }
  // Blocks a sequence can get now: the free list plus evictable prefix-cache blocks.
  int free_blocks() const {
    return static_cast<int>(free_.size() + lru_.size()) + (num_blocks_ - fresh_);
  }
  int used_blocks() const { return num_blocks_ - free_blocks(); }
  // Share of blocks held by sequences (utilization of the KV cache).
  double usage() const { return num_blocks_ ? double(used_blocks()) / num_blocks_ : 0; }
  int peak_used_blocks() const { return peak_used_; }
  std::int64_t capacity_tokens() const { return std::int64_t(num_blocks_) * block_size_; }
  int watermark_blocks() const { return watermark_blocks_; }

  int blocks_for(int tokens) const { return (tokens + block_size_ - 1) / block_size_; }
  // Extra blocks `seq` needs to hold `tokens` tokens.
  int extra_blocks(const Sequence& seq, int tokens) const;
  // Whether a new sequence needing `blocks` blocks may be admitted (keeps the watermark and
  // `reserve` more blocks free).
  bool can_admit(int blocks, int reserve = 0) const {
    return free_blocks() - blocks >= watermark_blocks_ + reserve;
  }
  // Grows seq's block table to hold `tokens` tokens; false (and no change) if not enough free.
  // Inline fast path: no block needed (most decode steps). Nothing changes then, not even the
  // peak: every call that raises the blocks in use (grow_blocks, match_prefix) records it.
  // (tokens <= blocks * block_size is blocks_for(tokens) <= blocks without a division.)
  bool grow(Sequence& seq, int tokens) {
    if (tokens <= static_cast<std::int64_t>(seq.num_blocks) * block_size_) return true;
    return grow_blocks(seq, tokens);
  }
  // Returns all of seq's blocks (shared ones: drops its reference).
  void release(Sequence& seq);
  // Tokens stored vs. token slots in allocated blocks: internal fragmentation of the last
  // block of every sequence (paged blocks have no external fragmentation).
  double internal_fragmentation(std::int64_t tokens_stored) const;

  // --- Prefix cache ---
  void set_prefix_caching(bool on) { prefix_caching_ = on; }
  // KV offload tiers below the prefix cache (kv_tiers.h): evicted cached blocks go there, and
  // match_prefix reads the chain's next blocks back from them. Set before use.
  void set_tiers(std::shared_ptr<KvTiers> tiers) { tiers_ = std::move(tiers); }
  // The engine's current time, for the tiers' write queues (the scheduler sets it per step).
  void set_now(double now) {
    if (tiers_) tiers_->set_now(now);
  }
  const KvTiers* tiers() const { return tiers_.get(); }
  // Seconds of tier reads (blocks read back by match_prefix) not yet charged to a step;
  // returns them and resets.
  double take_load_s() {
    const double s = load_s_;
    load_s_ = 0;
    return s;
  }
  std::int64_t tier_hit_tokens() const { return tier_hit_tokens_; }
  bool prefix_caching() const { return prefix_caching_; }
  // For a sequence holding no blocks: shares the cached blocks of its longest cached prefix
  // (seq.blocks, seq.kv_cached_blocks) and returns the tokens they hold, always fewer than
  // seq.known_tokens() (at least one token is computed). 0 when caching is off. Does not
  // count statistics (see note_lookup): an admission that fails calls release(). With
  // tiers, a block missing on the GPU but held by a tier is read back into a free block
  // (while one is free) and the chain goes on.
  int match_prefix(Sequence& seq);
  // Registers seq's full prompt blocks computed so far (up to `computed` tokens): in
  // simulation those of its shared prefix.
  void commit(Sequence& seq, int computed);
  // Before a preemption by recompute: registers the rest of seq's computed full prompt blocks
  // too (in simulation its own, past the shared prefix), so that its recompute finds them
  // while they are cached, as vLLM's prefix cache and SGLang's radix cache do. Registering
  // them only here costs nothing to the requests that are never preempted (no other request
  // can hit a simulated request's own blocks).
  void keep_for_recompute(Sequence& seq);
  // Statistics of admissions: a lookup of `prompt_tokens`, `hit_tokens` of them cached.
  void note_lookup(int prompt_tokens, int hit_tokens);
  std::int64_t prefix_lookups() const { return lookups_; }
  std::int64_t prefix_lookup_tokens() const { return lookup_tokens_; }
  std::int64_t prefix_hit_tokens() const { return hit_tokens_; }
  std::int64_t prefix_hits() const { return hits_; }  // lookups with at least one block hit
  double prefix_hit_rate() const {  // share of looked-up prompt tokens found in the cache
    return lookup_tokens_ ? double(hit_tokens_) / double(lookup_tokens_) : 0.0;
  }
  int cached_blocks() const { return static_cast<int>(lru_.size()); }  // evictable now
  std::int64_t evictions() const { return evictions_; }
  int ref_count(int block) const {
    return block < static_cast<int>(refs_.size()) ? refs_[block] : 0;
  }
  // References beyond the first over all blocks: tokens_stored for internal_fragmentation()
  // must count a shared (full) block once, i.e. subtract shared_extra_refs() * block_size.
  int shared_extra_refs() const { return shared_extra_refs_; }

  // Drops every evictable cached block to the free list and sorts the free list (lowest ids
  // on top). Returns the blocks dropped. See the header note: nothing to defragment.
  int compact();
  std::int64_t compactions() const { return compactions_; }

 private:
  bool grow_blocks(Sequence& seq, int tokens);  // grow() when blocks are needed
  int take_block();  // from the free list, else evicts the least recently used cached block
  void grow_block_state(int block);  // sizes the per-block vectors to hold `block`
  std::uint64_t block_hash(const Sequence& seq, int i, std::uint64_t parent) const;
  int cacheable_blocks(const Sequence& seq, bool own) const;
  void register_blocks(Sequence& seq, int computed, bool own);

  int num_blocks_;
  int block_size_;
  int watermark_blocks_;
  int peak_used_ = 0;
  // Free blocks: the stack free_ (released blocks) on top of the never-used blocks
  // [fresh_, num_blocks_), which come next in ascending order: the same order as one stack
  // of every free id filled lowest-on-top, without touching memory per block up front (a
  // cache of 100k blocks per replica, times hundreds of replicas, costs at construction).
  std::vector<int> free_;  // stack of released block ids
  int fresh_ = 0;          // lowest never-used block id
  // Per-block state, sized to the blocks handed out so far (grown by take_block()).
  std::vector<int> refs_;  // references per block

  bool prefix_caching_ = false;
  std::vector<std::uint64_t> hash_;  // 0: not in the cache
  std::unordered_map<std::uint64_t, int> by_hash_;
  std::list<int> lru_;  // evictable cached blocks, least recently released first
  std::vector<std::list<int>::iterator> lru_pos_;
  std::vector<char> in_lru_;
  std::int64_t lookups_ = 0, lookup_tokens_ = 0, hit_tokens_ = 0, hits_ = 0;
  std::int64_t evictions_ = 0, compactions_ = 0;
  std::shared_ptr<KvTiers> tiers_;
  double load_s_ = 0;
  std::int64_t tier_hit_tokens_ = 0;
  int shared_extra_refs_ = 0;
};

}  // namespace prima::kv
