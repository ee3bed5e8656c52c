// Router: picks the replica for a new request. Policies: round_robin,
// least_outstanding_tokens (least assigned token footprint; ties to the lowest id).
// Deterministic; not thread-safe (engine loop only). Borrows the replicas.
#pragma once

#include <string>
#include <vector>

#include "engine/cluster/replica.h"

namespace prima::cluster {

enum class RoutingPolicy { kRoundRobin, kLeastOutstandingTokens };
const std::vector<std::string>& routing_policy_names();
bool parse_routing_policy(const std::string& s, RoutingPolicy* out);

class Router {
 public:
  explicit Router(RoutingPolicy p) : policy_(p) {}
  // Index into `replicas` of the chosen one among those that can hold `s`; -1 if none can.
  int pick(const std::vector<Replica*>& replicas, const Sequence& s);

 private:
  RoutingPolicy policy_;
  std::size_t next_ = 0;
};

}  // namespace prima::cluster
