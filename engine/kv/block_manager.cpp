#include "engine/kv/block_manager.h"

#include <algorithm>

namespace prima::kv {
namespace {

std::uint64_t mix(std::uint64_t h, std::uint64_t v) {
  // splitmix64 of (h, v): the chain hash of a block.
  std::uint64_t x = h ^ (v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2));
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  x ^= x >> 31;
  return x ? x : 1;  // 0 means "not cached"
}

}  // namespace

BlockManager::BlockManager(int num_blocks, int block_size, double watermark)
    : num_blocks_(std::max(0, num_blocks)),
      block_size_(std::max(1, block_size)),
      watermark_blocks_(static_cast<int>(watermark * std::max(0, num_blocks))) {}

void BlockManager::grow_block_state(int block) {
  if (block < static_cast<int>(refs_.size())) return;
  const int n =
      std::min(num_blocks_, std::max({block + 1, 2 * static_cast<int>(refs_.size()), 256}));
  refs_.resize(n, 0);
  hash_.resize(n, 0);
  lru_pos_.resize(n);
  in_lru_.resize(n, 0);
}

int BlockManager::extra_blocks(const Sequence& seq, int tokens) const {
  return std::max(0, blocks_for(tokens) - seq.num_blocks);
}

int BlockManager::take_block() {
  int b;
  if (!free_.empty()) {
    b = free_.back();
    free_.pop_back();
  } else if (fresh_ < num_blocks_) {
    b = fresh_++;
    grow_block_state(b);
  } else {
    b = lru_.front();
    lru_.pop_front();
    in_lru_[b] = 0;
    if (tiers_) tiers_->offload(hash_[b]);
    by_hash_.erase(hash_[b]);
    hash_[b] = 0;
    ++evictions_;
  }
  refs_[b] = 1;
  return b;
}

bool BlockManager::grow_blocks(Sequence& seq, int tokens) {
  int need = extra_blocks(seq, tokens);
  if (need > free_blocks()) return false;
  if (seq.blocks.capacity() == 0)  // one allocation for most sequences (capped at 4 KiB)
    seq.blocks.reserve(
        static_cast<std::size_t>(std::max(need, std::min(blocks_for(seq.max_tokens()), 1024))));
  for (int i = 0; i < need; ++i) seq.blocks.push_back(take_block());
  seq.num_blocks = static_cast<int>(seq.blocks.size());
  peak_used_ = std::max(peak_used_, used_blocks());
  return true;
}

void BlockManager::release(Sequence& seq) {
  // Last block first: with the prefix cache, a chain's tail is evicted before its head.
  for (auto it = seq.blocks.rbegin(); it != seq.blocks.rend(); ++it) {
    const int b = *it;
    if (refs_[b] > 1) --shared_extra_refs_;
    if (--refs_[b] > 0) continue;  // still shared by another sequence
    if (hash_[b] != 0) {
      lru_pos_[b] = lru_.insert(lru_.end(), b);
      in_lru_[b] = 1;
    } else {
      free_.push_back(b);
    }
  }
  seq.blocks.clear();
  seq.num_blocks = 0;
  seq.kv_cached_blocks = 0;
}

double BlockManager::internal_fragmentation(std::int64_t tokens_stored) const {
  const double slots = double(used_blocks()) * block_size_;
  return slots > 0 ? 1.0 - double(tokens_stored) / slots : 0.0;
}

int BlockManager::cacheable_blocks(const Sequence& seq, bool own) const {
  const Request& r = seq.req;
  // Real token ids: every full prompt block. Simulated prompts: the shared prefix's, and with
  // `own` (a preemption) the rest too, which only the request's own recompute finds.
  const int tokens = !r.prompt_ids.empty() ? static_cast<int>(r.prompt_ids.size())
                     : own                 ? r.prompt_tokens
                                           : std::min(r.prefix_tokens, r.prompt_tokens);
  return std::max(0, tokens) / block_size_;
}

std::uint64_t BlockManager::block_hash(const Sequence& seq, int i, std::uint64_t parent) const {
  const Request& r = seq.req;
  const int last = (i + 1) * block_size_ - 1;  // the block's last token
  if (r.prefix_hashes && r.prefix_hash_tokens > 0 && last < r.prefix_tokens) {
    // A traced block id covers the block's last token (earlier ones are in the chain).
    // (prefix_tokens is at most the traced ids' tokens: j is one of them.)
    const std::size_t j =
        static_cast<std::size_t>(last) / static_cast<std::size_t>(r.prefix_hash_tokens);
    return mix(mix(mix(parent, 0x6d6f6f6eull), (*r.prefix_hashes)[j]), std::uint64_t(i));
  }
  if (r.prompt_ids.empty()) {
    // Simulated prompts: a block inside the shared prefix is (prefix_group, i); past it the
    // tokens are the request's own, which only its own recompute (after a preemption) reuses.
    if (last < r.prefix_tokens) return mix(mix(parent, r.prefix_group), std::uint64_t(i));
    return mix(mix(mix(parent, 0x6f776eull), std::uint64_t(r.id)), std::uint64_t(i));
  }
  std::uint64_t h = mix(parent, 0x7265616cull);  // real token ids: a separate hash space
  for (int t = i * block_size_; t < (i + 1) * block_size_; ++t)
    h = mix(h, static_cast<std::uint32_t>(r.prompt_ids[t]));
  return h;
}

int BlockManager::match_prefix(Sequence& seq) {
  if (!prefix_caching_ || !seq.blocks.empty()) return 0;
  // Never the whole prompt: the last known token is always computed (it samples).
  const int max_blocks =
      std::min(cacheable_blocks(seq, true), (seq.known_tokens() - 1) / block_size_);
  std::uint64_t h = 0;
  for (int i = 0; i < max_blocks; ++i) {
    h = block_hash(seq, i, h);
    auto it = by_hash_.find(h);
    if (it == by_hash_.end()) {
      // Below the GPU: read the block back into a free block, cached again under its hash.
      if (!tiers_ || free_blocks() == 0) break;
      const int tier = tiers_->read(h);
      if (tier < 0) break;
      const int b = take_block();
      hash_[b] = h;
      by_hash_[h] = b;
      load_s_ += tiers_->seconds_per_block(tier);
      tier_hit_tokens_ += block_size_;
      seq.blocks.push_back(b);
      continue;
    }
    const int b = it->second;
    if (in_lru_[b]) {
      lru_.erase(lru_pos_[b]);
      in_lru_[b] = 0;
    }
    if (refs_[b] > 0) ++shared_extra_refs_;
    ++refs_[b];
    seq.blocks.push_back(b);
  }
  seq.kv_cached_blocks = seq.num_blocks = static_cast<int>(seq.blocks.size());
  peak_used_ = std::max(peak_used_, used_blocks());
  return seq.kv_cached_blocks * block_size_;
}

void BlockManager::commit(Sequence& seq, int computed) {
  register_blocks(seq, computed, false);
}

void BlockManager::keep_for_recompute(Sequence& seq) {
  register_blocks(seq, seq.num_computed, true);
}

void BlockManager::register_blocks(Sequence& seq, int computed, bool own) {
  if (!prefix_caching_) return;
  const int full = std::min(
      {cacheable_blocks(seq, own), computed / block_size_, static_cast<int>(seq.blocks.size())});
  if (seq.kv_cached_blocks >= full) return;
  std::uint64_t h = 0;
  for (int i = 0; i < seq.kv_cached_blocks; ++i) h = block_hash(seq, i, h);
  for (int i = seq.kv_cached_blocks; i < full; ++i) {
    h = block_hash(seq, i, h);
    const int b = seq.blocks[i];
    if (hash_[b] == 0 && by_hash_.emplace(h, b).second) hash_[b] = h;
    // Already cached elsewhere (computed concurrently): this copy stays private.
  }
  seq.kv_cached_blocks = full;
}

void BlockManager::note_lookup(int prompt_tokens, int hit_tokens) {
  ++lookups_;
  lookup_tokens_ += prompt_tokens;
  hit_tokens_ += hit_tokens;
  if (hit_tokens > 0) ++hits_;
}

int BlockManager::compact() {
  const int dropped = static_cast<int>(lru_.size());
  for (int b : lru_) {
    in_lru_[b] = 0;
    if (tiers_) tiers_->offload(hash_[b]);
    by_hash_.erase(hash_[b]);
    hash_[b] = 0;
    free_.push_back(b);
  }
  lru_.clear();
  std::sort(free_.begin(), free_.end(), std::greater<int>());  // lowest ids on top
  ++compactions_;
  return dropped;
}

}  // namespace prima::kv
