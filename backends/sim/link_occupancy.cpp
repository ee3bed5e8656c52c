#include "backends/sim/link_occupancy.h"

#include <algorithm>

namespace prima::sim {

bool LinkOccupancy::idle(const std::vector<simgrid::s4u::Link*>& links, double from_s,
                         double to_s) const {
  for (const simgrid::s4u::Link* l : links) {
    auto it = use_.find(l);
    if (it == use_.end()) continue;
    if (it->second.flows > 0) return false;
    for (const LoneFlow* f : it->second.lone)
      if (f->lone_start_s() < to_s && from_s < f->lone_end_s()) return false;
  }
  return true;
}

void LinkOccupancy::add_lone(LoneFlow* f) {
  for (const simgrid::s4u::Link* l : f->lone_links()) use_[l].lone.push_back(f);
}

void LinkOccupancy::remove_lone(LoneFlow* f) {
  for (const simgrid::s4u::Link* l : f->lone_links()) {
    auto it = use_.find(l);
    if (it == use_.end()) continue;
    auto& v = it->second.lone;
    v.erase(std::remove(v.begin(), v.end(), f), v.end());
  }
}

void LinkOccupancy::flow_started(const std::vector<simgrid::s4u::Link*>& links, double now,
                                 double latency_s) {
  const double eps = latency_s > 0 ? std::min(1e-9, latency_s / 4) : 1e-9;
  // Collect first: a conversion starts a SimGrid flow of its own (flow_started again, on
  // links that then carry no lone flow).
  const std::size_t base = converting_.size();
  for (const simgrid::s4u::Link* l : links) {
    auto it = use_.find(l);
    if (it == use_.end()) continue;
    for (LoneFlow* f : it->second.lone)
      if (std::find(converting_.begin() + static_cast<std::ptrdiff_t>(base), converting_.end(),
                    f) == converting_.end())
        converting_.push_back(f);
  }
  for (std::size_t i = base; i < converting_.size(); ++i) remove_lone(converting_[i]);
  for (const simgrid::s4u::Link* l : links) ++use_[l].flows;
  for (std::size_t i = base; i < converting_.size(); ++i) {
    ++conversions_;
    converting_[i]->convert(now, eps);
  }
  converting_.resize(base);
}

void LinkOccupancy::flow_ended(const std::vector<simgrid::s4u::Link*>& links) {
  for (const simgrid::s4u::Link* l : links) {
    auto it = use_.find(l);
    if (it != use_.end() && it->second.flows > 0) --it->second.flows;
  }
}

}  // namespace prima::sim
