// KvStore: one rank's paged KV cache: per layer (of its pipeline stage) a K and a V array of
// f16, num_blocks x kv_heads x block_size x head_dim (kv_heads: this rank's share), indexed by
// the engine's physical block ids (BlockManager). Memory is reserved, not touched, at
// construction (pages are committed as they are written). Owned by the backend; written and
// read only by the rank's worker thread.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "kernels/cpu/attention.h"

namespace prima::real {

class KvStore {
 public:
  KvStore(int layers, int num_blocks, int block_size, int kv_heads, int head_dim);
  int layers() const { return static_cast<int>(k_.size()); }
  int num_blocks() const { return num_blocks_; }
  int block_size() const { return block_size_; }
  kernels::KvLayer layer(int i) const;
  // Bytes of K and V of one block in one layer.
  static double block_bytes(int block_size, int kv_heads, int head_dim) {
    return 2.0 * 2.0 * block_size * kv_heads * head_dim;
  }

 private:
  int num_blocks_, block_size_, kv_heads_, head_dim_;
  std::vector<std::unique_ptr<std::uint16_t[]>> k_, v_;
};

}  // namespace prima::real
