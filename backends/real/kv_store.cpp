// KvStore allocation (uninitialised f16 arrays: every slot is written before it is read).
#include "backends/real/kv_store.h"

namespace prima::real {

KvStore::KvStore(int layers, int num_blocks, int block_size, int kv_heads, int head_dim)
    : num_blocks_(num_blocks), block_size_(block_size), kv_heads_(kv_heads), head_dim_(head_dim) {
  const std::size_t n = std::size_t(num_blocks) * block_size * kv_heads * head_dim;
  for (int l = 0; l < layers; ++l) {
    k_.emplace_back(new std::uint16_t[n]);
    v_.emplace_back(new std::uint16_t[n]);
  }
}

kernels::KvLayer KvStore::layer(int i) const {
  kernels::KvLayer kv;
  kv.k = k_[i].get();
  kv.v = v_[i].get();
  kv.block_size = block_size_;
  kv.kv_heads = kv_heads_;
  kv.head_dim = head_dim_;
  return kv;
}

}  // namespace prima::real
