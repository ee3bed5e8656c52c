// A typed device buffer for the CPU execution layer's tests: allocated with cudaMalloc, filled
// and read with cudaMemcpy, freed on destruction. Not thread-safe.
#pragma once

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cstddef>
#include <vector>

namespace prima::cudaemu::testing {

template <typename T>
class Buffer {
 public:
  explicit Buffer(std::size_t n) : n_(n) {
    EXPECT_EQ(cudaMalloc(reinterpret_cast<void**>(&p_), n * sizeof(T)), cudaSuccess);
  }
  explicit Buffer(const std::vector<T>& host) : Buffer(host.size()) {
    EXPECT_EQ(cudaMemcpy(p_, host.data(), n_ * sizeof(T), cudaMemcpyHostToDevice), cudaSuccess);
  }
  ~Buffer() { cudaFree(p_); }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  T* ptr() const { return p_; }
  std::vector<T> read() const {
    std::vector<T> v(n_);
    EXPECT_EQ(cudaMemcpy(v.data(), p_, n_ * sizeof(T), cudaMemcpyDeviceToHost), cudaSuccess);
    return v;
  }

 private:
  T* p_ = nullptr;
  std::size_t n_;
};

}  // namespace prima::cudaemu::testing
