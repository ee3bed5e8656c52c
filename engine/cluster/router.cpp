#include "engine/cluster/router.h"

namespace prima::cluster {

const std::vector<std::string>& routing_policy_names() {
  static const std::vector<std::string> kNames = {"round_robin", "least_outstanding_tokens"};
  return kNames;
}

bool parse_routing_policy(const std::string& s, RoutingPolicy* out) {
  if (s == "round_robin")
    *out = RoutingPolicy::kRoundRobin;
  else if (s == "least_outstanding_tokens")
    *out = RoutingPolicy::kLeastOutstandingTokens;
  else
    return false;
  return true;
}

int Router::pick(const std::vector<Replica*>& replicas, const Sequence& s) {
  const std::size_t n = replicas.size();
  if (n == 0) return -1;
  if (policy_ == RoutingPolicy::kRoundRobin) {
    for (std::size_t k = 0; k < n; ++k) {
      std::size_t i = (next_ + k) % n;
      if (replicas[i]->can_ever_fit(s)) {
        next_ = i + 1;
        return static_cast<int>(i);
      }
    }
    return -1;
  }
  int best = -1;
  for (std::size_t i = 0; i < n; ++i) {
    if (!replicas[i]->can_ever_fit(s)) continue;
    if (best < 0 || replicas[i]->outstanding_tokens() < replicas[best]->outstanding_tokens())
      best = static_cast<int>(i);
  }
  return best;
}

}  // namespace prima::cluster
