// StepForward: a whole forward pass of one rank holding the entire model (TP 1, PP 1) that
// RankRunner runs in place of its CPU layers: the logits of a step's sampling rows, which
// RankRunner then samples on the host as it does the CPU path's. The GPU forward pass
// (backends/real/cuda/DeviceForward) is one; RealBackendOptions::device_forward makes it.
// Called by one thread.
#pragma once

#include <string>
#include <vector>

#include "backends/real/step_codec.h"
#include "engine/core/status.h"

namespace prima::real {

class StepForward {
 public:
  virtual ~StepForward() = default;
  // Checks the step, runs it, and sets logits to the rows StepInput::logit_rows() names
  // (logit_rows().size() x vocab).
  virtual Status forward(const StepInput& s, std::vector<float>* logits) = 0;
  // What runs it ("cuda:0 (NVIDIA H100 ...)", "prima CUDA emulator (CPU, 2 workers)").
  virtual std::string device() const = 0;
};

}  // namespace prima::real
