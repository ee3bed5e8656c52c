#include "engine/cluster/response_cache.h"

namespace prima::cluster {

bool ResponseCache::cacheable(const Request& r) const {
  return opts_.enabled && r.prefix_group != 0 && r.prompt_tokens > 0 &&
         r.prompt_tokens <= opts_.max_prompt_tokens && r.prefix_tokens == r.prompt_tokens;
}

bool ResponseCache::lookup(const Request& r, Time now) {
  if (!cacheable(r)) return false;
  ++lookups_;
  auto it = map_.find({r.prefix_group, r.prompt_tokens});
  if (it == map_.end()) return false;
  if (opts_.ttl_s > 0 && now - it->second->stored_s > opts_.ttl_s) {
    lru_.erase(it->second);
    map_.erase(it);
    return false;
  }
  lru_.splice(lru_.begin(), lru_, it->second);
  ++hits_;
  return true;
}

void ResponseCache::insert(const Request& r, Time now) {
  if (!cacheable(r) || opts_.capacity <= 0) return;
  Key k{r.prefix_group, r.prompt_tokens};
  auto it = map_.find(k);
  if (it != map_.end()) {
    it->second->stored_s = now;
    lru_.splice(lru_.begin(), lru_, it->second);
    return;
  }
  if (static_cast<int>(map_.size()) >= opts_.capacity) {
    map_.erase(lru_.back().key);
    lru_.pop_back();
  }
  lru_.push_front({k, now});
  map_[k] = lru_.begin();
}

}  // namespace prima::cluster
