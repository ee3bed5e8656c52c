// SimFabric: moves bytes between GPUs (KV migration, prefill -> decode hand-off) as SimGrid
// flows (Comm::sendto) between GPU hosts, contending with every other flow on shared links.
// done(ok) on completion; done(unavailable naming the host or link that is down) on failure.
// A transfer to the same device completes at once (on the loop, not inside transfer()).
// Creating one turns off the executors' exclusive-link shortcut (SimPlatform::mark_all_shared);
// with lone flows on, each transfer tells the platform's LinkOccupancy when it starts (lone
// flows on its route turn into SimGrid flows) and ends.
//
// With a FaultInjector (set_fault_injector; none by default): a transfer between nodes
// consults transfer_attempts() (retries and registration cost delay the flow; a failure
// answers unavailable after the retries); a weight load into a GPU with an active
// corrupted_shard fault reads the bytes, then fails its checksum; flows report their bytes
// for the timeline.
//
// Thread-safety: simulation loop only. Ownership: borrows the platform and runtime (they must
// outlive it); owns in-flight transfer records, which must complete before it is destroyed.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "backends/sim/fault_injector.h"
#include "backends/sim/platform.h"
#include "engine/runtime.h"

namespace prima::sim {

class SimFabric : public Fabric {
 public:
  SimFabric(SimPlatform* platform, Runtime* runtime);
  ~SimFabric() override;
  SimFabric(const SimFabric&) = delete;
  SimFabric& operator=(const SimFabric&) = delete;

  void transfer(DeviceId from, DeviceId to, Bytes n, std::function<void(Status)> done) override;
  // Reads n bytes from the storage host into a GPU (weight loading).
  void load_from_storage(DeviceId to, Bytes n, std::function<void(Status)> done);

  int in_flight() const { return in_flight_; }
  // Fault models (null = none, the default). Borrowed: must outlive the fabric or be unset.
  void set_fault_injector(FaultInjector* injector) { injector_ = injector; }

 private:
  struct Transfer;
  void start(simgrid::s4u::Host* src, simgrid::s4u::Host* dst, Bytes n,
             std::function<void(Status)> done, DeviceId corrupt = -1);
  void on_end(Transfer* t, bool ok);

  SimPlatform* platform_;
  Runtime* runtime_;
  std::vector<std::unique_ptr<Transfer>> all_;
  std::vector<Transfer*> free_;
  int in_flight_ = 0;
  FaultInjector* injector_ = nullptr;
};

}  // namespace prima::sim
