// Router: picks the replica for a new request among the replicas that accept requests.
// Policies:
//   round_robin               - in turn;
//   least_outstanding_tokens  - least assigned token footprint (ties to the lowest index);
//   power_of_two              - two distinct replicas drawn from a seeded splitmix64 generator,
//                               the less loaded (outstanding tokens) wins;
//   prefix_affinity           - requests of one Request::prefix_key() (the workload's prefix
//                               group, or a traced prompt's first block id) go to the replica the
//                               group last went to while its load is at most the least loaded
//                               one's + affinity_slack_tokens; else (and for group 0) to the
//                               least loaded, which becomes the group's replica.
// Speed weights (set_speed_weight, used with load migration): a replica's load becomes its
// outstanding tokens / its relative speed (1 = average), so faster replicas get more work;
// round_robin then picks the least weighted load (a turn cannot weigh by speed).
// Deterministic (same calls, same picks); not thread-safe (engine loop only). Borrows the
// replicas.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/cluster/replica.h"

namespace prima::cluster {

enum class RoutingPolicy { kRoundRobin, kLeastOutstandingTokens, kPowerOfTwo, kPrefixAffinity };
const std::vector<std::string>& routing_policy_names();
bool parse_routing_policy(const std::string& s, RoutingPolicy* out);

class Router {
 public:
  explicit Router(RoutingPolicy p, std::uint64_t seed = 1,
                  std::int64_t affinity_slack_tokens = 8192)
      : policy_(p), rng_(seed), slack_(affinity_slack_tokens) {}
  // Index into `replicas` of the chosen one among those that can hold `s`; -1 if none can.
  int pick(const std::vector<Replica*>& replicas, const Sequence& s);
  RoutingPolicy policy() const { return policy_; }
  // Relative speed of a replica (> 0; 1 = average). Empty (the default): unweighted.
  void set_speed_weight(std::function<double(ReplicaId)> w) { weight_ = std::move(w); }

 private:
  int least_loaded(const std::vector<Replica*>& replicas, const Sequence& s) const;
  double load(const Replica* r) const;
  std::uint64_t next_random();

  RoutingPolicy policy_;
  std::uint64_t rng_;
  std::int64_t slack_;
  std::size_t next_ = 0;
  std::unordered_map<std::uint64_t, ReplicaId> affinity_;  // prefix group -> replica id
  std::function<double(ReplicaId)> weight_;
};

}  // namespace prima::cluster
