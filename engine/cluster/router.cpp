#include "engine/cluster/router.h"

#include <algorithm>

namespace prima::cluster {

const std::vector<std::string>& routing_policy_names() {
  static const std::vector<std::string> kNames = {"round_robin", "least_outstanding_tokens",
                                                  "power_of_two", "prefix_affinity"};
  return kNames;
}

bool parse_routing_policy(const std::string& s, RoutingPolicy* out) {
  if (s == "round_robin")
    *out = RoutingPolicy::kRoundRobin;
  else if (s == "least_outstanding_tokens")
    *out = RoutingPolicy::kLeastOutstandingTokens;
  else if (s == "power_of_two")
    *out = RoutingPolicy::kPowerOfTwo;
  else if (s == "prefix_affinity")
    *out = RoutingPolicy::kPrefixAffinity;
  else
    return false;
  return true;
}

std::uint64_t Router::next_random() {  // splitmix64: portable and deterministic
  std::uint64_t z = (rng_ += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

double Router::load(const Replica* r) const {
  const auto tokens = static_cast<double>(r->outstanding_tokens());
  if (!weight_) return tokens;
  return tokens / std::max(1e-6, weight_(r->id()));
}

int Router::least_loaded(const std::vector<Replica*>& replicas, const Sequence& s) const {
  int best = -1;
  for (std::size_t i = 0; i < replicas.size(); ++i) {
    if (!replicas[i]->can_ever_fit(s)) continue;
    if (best < 0 || load(replicas[i]) < load(replicas[best])) best = static_cast<int>(i);
  }
  return best;
}

int Router::pick(const std::vector<Replica*>& replicas, const Sequence& s) {
  const std::size_t n = replicas.size();
  if (n == 0) return -1;
  switch (policy_) {
    case RoutingPolicy::kRoundRobin:
      if (weight_) return least_loaded(replicas, s);
      for (std::size_t k = 0; k < n; ++k) {
        std::size_t i = (next_ + k) % n;
        if (replicas[i]->can_ever_fit(s)) {
          next_ = i + 1;
          return static_cast<int>(i);
        }
      }
      return -1;
    case RoutingPolicy::kLeastOutstandingTokens:
      return least_loaded(replicas, s);
    case RoutingPolicy::kPowerOfTwo: {
      if (n == 1) return replicas[0]->can_ever_fit(s) ? 0 : -1;
      std::size_t a = next_random() % n;
      std::size_t b = next_random() % (n - 1);
      if (b >= a) ++b;
      const bool fa = replicas[a]->can_ever_fit(s), fb = replicas[b]->can_ever_fit(s);
      if (fa && fb) return static_cast<int>(load(replicas[b]) < load(replicas[a]) ? b : a);
      if (fa) return static_cast<int>(a);
      if (fb) return static_cast<int>(b);
      return least_loaded(replicas, s);
    }
    case RoutingPolicy::kPrefixAffinity: {
      const int best = least_loaded(replicas, s);
      const std::uint64_t key = s.req.prefix_key();
      if (best < 0 || key == 0) return best;
      auto it = affinity_.find(key);
      if (it != affinity_.end()) {
        for (std::size_t i = 0; i < n; ++i) {
          if (replicas[i]->id() != it->second) continue;
          if (replicas[i]->can_ever_fit(s) &&
              load(replicas[i]) <= load(replicas[best]) + static_cast<double>(slack_))
            return static_cast<int>(i);
          break;
        }
      }
      affinity_[key] = replicas[best]->id();
      return best;
    }
  }
  return -1;
}

}  // namespace prima::cluster
