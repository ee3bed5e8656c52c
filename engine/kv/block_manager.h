// BlockManager: the paged KV cache of one replica (vLLM's PagedAttention layout).
//
// The cache is `num_blocks` blocks of `block_size` tokens. A sequence holds a block table
// (Sequence::blocks) that grows as it computes tokens; blocks return to the free list when it
// finishes or is preempted. Admission keeps a watermark of free blocks so running sequences
// can grow without immediate preemption. Physical block ids are real: the real backend
// indexes its K/V tensors with them. Not thread-safe (engine loop only).
#pragma once

#include <cstdint>
#include <vector>

#include "engine/core/request.h"

namespace prima::kv {

class BlockManager {
 public:
  BlockManager(int num_blocks, int block_size, double watermark = 0.01);

  int block_size() const { return block_size_; }
  int num_blocks() const { return num_blocks_; }
  int free_blocks() const { return static_cast<int>(free_.size()); }
  int used_blocks() const { return num_blocks_ - free_blocks(); }
  double usage() const { return num_blocks_ ? double(used_blocks()) / num_blocks_ : 0; }
  int peak_used_blocks() const { return peak_used_; }
  std::int64_t capacity_tokens() const { return std::int64_t(num_blocks_) * block_size_; }

  int blocks_for(int tokens) const { return (tokens + block_size_ - 1) / block_size_; }
  // Extra blocks `seq` needs to hold `tokens` tokens.
  int extra_blocks(const Sequence& seq, int tokens) const;
  // Whether a new sequence needing `blocks` blocks may be admitted (keeps the watermark).
  bool can_admit(int blocks) const { return free_blocks() - blocks >= watermark_blocks_; }
  // Grows seq's block table to hold `tokens` tokens; false (and no change) if not enough free.
  bool grow(Sequence& seq, int tokens);
  // Returns all of seq's blocks to the free list.
  void release(Sequence& seq);
  // Tokens stored vs. token slots in allocated blocks: internal fragmentation of the last
  // block of every sequence (paged blocks have no external fragmentation).
  double internal_fragmentation(std::int64_t tokens_stored) const;

 private:
  int num_blocks_;
  int block_size_;
  int watermark_blocks_;
  int peak_used_ = 0;
  std::vector<int> free_;  // stack of free block ids
};

}  // namespace prima::kv
