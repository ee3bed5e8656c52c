// The host-staged DeviceComm (device_comm.h): each transfer waits for the stream, copies the
// device buffer to a host buffer, moves it over the Communicator and copies it back.
#include "backends/real/cuda/device_comm.h"

#include "backends/real/cuda/device_buffer.h"

namespace prima::real::cuda {

namespace {

class HostStagedComm final : public DeviceComm {
 public:
  explicit HostStagedComm(Communicator* c) : c_(c) {}
  std::string name() const override { return "host-staged"; }
  int rank() const override { return c_->rank(); }
  int size() const override { return c_->size(); }

  Status allreduce_sum(float* d, std::size_t n, cudaStream_t stream) override {
    PRIMA_RETURN_IF_ERROR(to_host(d, n, stream, "all-reduce"));
    PRIMA_RETURN_IF_ERROR(c_->allreduce_sum(host_.data(), n));
    return to_device(d, n, stream, "all-reduce");
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
  std::vector<float> host_;
};

}  // namespace

std::unique_ptr<DeviceComm> make_host_staged_comm(Communicator* c) {
  return std::make_unique<HostStagedComm>(c);
}

}  // namespace prima::real::cuda
