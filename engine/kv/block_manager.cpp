#include "engine/kv/block_manager.h"

#include <algorithm>

namespace prima::kv {

BlockManager::BlockManager(int num_blocks, int block_size, double watermark)
    : num_blocks_(std::max(0, num_blocks)),
      block_size_(std::max(1, block_size)),
      watermark_blocks_(static_cast<int>(watermark * std::max(0, num_blocks))) {
  free_.reserve(num_blocks_);
  // Lowest ids on top of the stack: allocation order is deterministic and compact.
  for (int b = num_blocks_ - 1; b >= 0; --b) free_.push_back(b);
}

int BlockManager::extra_blocks(const Sequence& seq, int tokens) const {
  return std::max(0, blocks_for(tokens) - static_cast<int>(seq.blocks.size()));
}

bool BlockManager::grow(Sequence& seq, int tokens) {
  int need = extra_blocks(seq, tokens);
  if (need > free_blocks()) return false;
  for (int i = 0; i < need; ++i) {
    seq.blocks.push_back(free_.back());
    free_.pop_back();
  }
  peak_used_ = std::max(peak_used_, used_blocks());
  return true;
}

void BlockManager::release(Sequence& seq) {
  for (auto it = seq.blocks.rbegin(); it != seq.blocks.rend(); ++it) free_.push_back(*it);
  seq.blocks.clear();
}

double BlockManager::internal_fragmentation(std::int64_t tokens_stored) const {
  const double slots = double(used_blocks()) * block_size_;
  return slots > 0 ? 1.0 - double(tokens_stored) / slots : 0.0;
}

}  // namespace prima::kv
