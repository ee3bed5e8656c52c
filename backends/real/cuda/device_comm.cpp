// The host-staged DeviceComm (device_comm.h): each transfer waits for the stream, copies the
// device buffer to a host buffer, moves it over the Communicator and copies it back.
#include "backends/real/cuda/device_comm.h"

#include <algorithm>

#include "backends/real/cuda/device_buffer.h"

namespace prima::real::cuda {

namespace {

class HostStagedComm final : public DeviceComm {
 public:
  explicit HostStagedComm(Communicator* c) : c_(c) {}
  std::string name() const override { return "host-staged"; }
  int rank() const override { return c_->rank(); }
  int size() const override { return c_->size(); }

  Status allgather(const float* d, std::size_t n, float* out, cudaStream_t stream) override {
    PRIMA_RETURN_IF_ERROR(to_host(d, n, stream, "all-gather"));
    all_.resize(n * std::size_t(size()));
    std::copy(host_.begin(), host_.end(), all_.begin() + std::ptrdiff_t(n) * rank());
    for (int r = 0; r < size(); ++r)
      PRIMA_RETURN_IF_ERROR(c_->broadcast(all_.data() + n * std::size_t(r), n * sizeof(float), r));
    PRIMA_CUDA_OK(cudaMemcpyAsync(out, all_.data(), all_.size() * sizeof(float),
                                  cudaMemcpyHostToDevice, stream),
                  "copy to the device after the all-gather");
    return cuda_status(cudaStreamSynchronize(stream), "the all-gather");
  }
  Status send(int peer, int tag, const float* d, std::size_t n, cudaStream_t stream) override {
    PRIMA_RETURN_IF_ERROR(to_host(d, n, stream, "send"));
    return c_->send(peer, tag, host_.data(), n * sizeof(float));
  }
  Status recv(int peer, int tag, float* d, std::size_t n, cudaStream_t stream) override {
    host_.resize(n);
    PRIMA_RETURN_IF_ERROR(c_->recv(peer, tag, host_.data(), n * sizeof(float)));
    return to_device(d, n, stream, "recv");
  }

 private:
  Status to_host(const float* d, std::size_t n, cudaStream_t stream, const char* what) {
    host_.resize(n);
    PRIMA_CUDA_OK(
        cudaMemcpyAsync(host_.data(), d, n * sizeof(float), cudaMemcpyDeviceToHost, stream),
        std::string("copy to the host for the ") + what);
    return cuda_status(cudaStreamSynchronize(stream), std::string("the ") + what);
  }
  // The copy is complete before the host buffer is reused (the next transfer waits for it).
  Status to_device(float* d, std::size_t n, cudaStream_t stream, const char* what) {
    PRIMA_CUDA_OK(
        cudaMemcpyAsync(d, host_.data(), n * sizeof(float), cudaMemcpyHostToDevice, stream),
        std::string("copy to the device after the ") + what);
    return cuda_status(cudaStreamSynchronize(stream), std::string("the ") + what);
  }

  Communicator* c_;
  std::vector<float> host_, all_;
};

}  // namespace

std::unique_ptr<DeviceComm> make_host_staged_comm(Communicator* c) {
  return std::make_unique<HostStagedComm>(c);
}

}  // namespace prima::real::cuda
