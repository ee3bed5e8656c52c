// ResponseCache: answers repeated short prompts without touching a replica (seed 001).
// Keys are prompt identities; in simulation a prompt is (prefix_group, prompt_tokens), and
// only requests whose whole prompt is shared (prefix_tokens == prompt_tokens) are cacheable.
// LRU with a capacity and an optional TTL (0 = no expiry). Not thread-safe (engine loop).
#pragma once

#include <cstdint>
#include <list>
#include <unordered_map>
#include <utility>

#include "engine/cluster/cluster_options.h"
#include "engine/core/request.h"

namespace prima::cluster {

class ResponseCache {
 public:
  explicit ResponseCache(ResponseCacheOptions o) : opts_(o) {}
  bool enabled() const { return opts_.enabled; }
  bool cacheable(const Request& r) const;
  // Counts a lookup; true on a live entry (which becomes most recently used).
  bool lookup(const Request& r, Time now);
  // Stores the response of a completed request (refreshes an existing entry).
  void insert(const Request& r, Time now);

  std::int64_t lookups() const { return lookups_; }
  std::int64_t hits() const { return hits_; }
  std::size_t size() const { return map_.size(); }
  const ResponseCacheOptions& options() const { return opts_; }

 private:
  using Key = std::pair<std::uint64_t, int>;
  struct KeyHash {
    std::size_t operator()(const Key& k) const {
      return std::hash<std::uint64_t>()(k.first * 0x9e3779b97f4a7c15ull + std::uint64_t(k.second));
    }
  };
  struct Entry {
    Key key;
    Time stored_s;
  };
  ResponseCacheOptions opts_;
  std::list<Entry> lru_;  // front = most recent
  std::unordered_map<Key, std::list<Entry>::iterator, KeyHash> map_;
  std::int64_t lookups_ = 0, hits_ = 0;
};

}  // namespace prima::cluster
