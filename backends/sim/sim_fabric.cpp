#include "backends/sim/sim_fabric.h"

#include <simgrid/s4u.hpp>

#include "backends/sim/activity_dispatch.h"

namespace sg4 = simgrid::s4u;

namespace prima::sim {

struct SimFabric::Transfer final : CompletionTarget {
  SimFabric* fabric = nullptr;
  sg4::ActivityPtr comm;
  sg4::Host* src = nullptr;
  sg4::Host* dst = nullptr;
  std::function<void(Status)> done;
  DeviceId corrupt = -1;  // a weight load whose shard fails its checksum
  Bytes bytes = 0;
  std::vector<sg4::Link*> links;  // its route, while lone flows are on (LinkOccupancy)
  void on_activity_end(const sg4::Activity&, bool ok) override { fabric->on_end(this, ok); }
};

SimFabric::SimFabric(SimPlatform* platform, Runtime* runtime)
    : platform_(platform), runtime_(runtime) {
  // Transfers go anywhere and are not claimed up front: no link is exclusive to a flow slot.
  platform_->mark_all_shared();
}

SimFabric::~SimFabric() = default;

void SimFabric::transfer(DeviceId from, DeviceId to, Bytes n, std::function<void(Status)> done) {
  if (from < 0 || to < 0 || from >= platform_->num_gpus() || to >= platform_->num_gpus()) {
    Status s = invalid_argument("sim fabric: device " + std::to_string(from) + " -> " +
                                std::to_string(to) + " outside 0.." +
                                std::to_string(platform_->num_gpus() - 1));
    runtime_->at(runtime_->now(), [done = std::move(done), s] { done(s); });
    return;
  }
  if (from == to) {
    runtime_->at(runtime_->now(), [done = std::move(done)] { done(ok_status()); });
    return;
  }
  sg4::Host* src = platform_->host_of(from);
  sg4::Host* dst = platform_->host_of(to);
  if (injector_ != nullptr) {
    TransferFaults tf = injector_->transfer_attempts(src, dst);
    if (tf.fails) {
      Status s = unavailable("sim fabric: " + tf.reason);
      runtime_->at(runtime_->now() + tf.extra_s, [done = std::move(done), s] { done(s); });
      return;
    }
    if (tf.extra_s > 0) {
      runtime_->at(runtime_->now() + tf.extra_s,
                   [this, src, dst, n, done = std::move(done)]() mutable {
                     start(src, dst, n, std::move(done));
                   });
      return;
    }
  }
  start(src, dst, n, std::move(done));
}

void SimFabric::load_from_storage(DeviceId to, Bytes n, std::function<void(Status)> done) {
  const bool corrupt = injector_ != nullptr && injector_->corrupted_shard(to);
  start(platform_->storage_host(), platform_->host_of(to), n, std::move(done), corrupt ? to : -1);
}

void SimFabric::start(sg4::Host* src, sg4::Host* dst, Bytes n, std::function<void(Status)> done,
                      DeviceId corrupt) {
  std::string down = platform_->first_failed_element(src, dst);
  if (!down.empty()) {
    Status s = unavailable("sim fabric: " + src->get_name() + " -> " + dst->get_name() + ": " +
                           down + " is down");
    runtime_->at(runtime_->now(), [done = std::move(done), s] { done(s); });
    return;
  }
  Transfer* t;
  if (free_.empty()) {
    all_.push_back(std::make_unique<Transfer>());
    t = all_.back().get();
    t->fabric = this;
  } else {
    t = free_.back();
    free_.pop_back();
  }
  t->src = src;
  t->dst = dst;
  t->done = std::move(done);
  t->corrupt = corrupt;
  t->bytes = n;
  sg4::CommPtr c = sg4::Comm::sendto_init(src, dst)->set_payload_size(static_cast<uint64_t>(n));
  c->set_data(static_cast<CompletionTarget*>(t));
  t->comm = c;
  t->links.clear();
  if (platform_->occupancy().enabled()) {
    t->links = platform_->route(src, dst);
    platform_->occupancy().flow_started(t->links, runtime_->now(),
                                        platform_->flow_latency(src, dst));
  }
  ++in_flight_;
  ActivityDispatch::start(c);
}

void SimFabric::on_end(Transfer* t, bool ok) {
  if (!t->links.empty()) platform_->occupancy().flow_ended(t->links);
  Status s;
  if (!ok) {
    std::string down = platform_->first_failed_element(t->src, t->dst);
    s = unavailable("sim fabric: " + t->src->get_name() + " -> " + t->dst->get_name() + " failed" +
                    (down.empty() ? std::string() : " (" + down + " is down)"));
  } else if (t->corrupt >= 0) {
    s = internal_error("sim fabric: weight shard of gpu " + std::to_string(t->corrupt) +
                       " failed its checksum (sha256 mismatch): corrupted_shard fault");
  }
  if (ok && injector_ != nullptr && injector_->measuring())
    injector_->count_bytes(platform_->route(t->src, t->dst), static_cast<double>(t->bytes));
  ActivityDispatch::retire(std::move(t->comm));
  auto done = std::move(t->done);
  t->done = nullptr;
  free_.push_back(t);
  --in_flight_;
  if (done) done(std::move(s));
}

}  // namespace prima::sim
