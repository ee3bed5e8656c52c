#include "backends/sim/link_occupancy.h"

#include <algorithm>

namespace prima::sim {

LinkOccupancy::~LinkOccupancy() {
  for (Use& u : uses_)
    if (u.link != nullptr && u.link->get_data<Use>() == &u) u.link->set_data(nullptr);
}

LinkOccupancy::Use* LinkOccupancy::find_other(const simgrid::s4u::Link* l) const {
  auto it = other_.find(l);
  return it == other_.end() ? nullptr : it->second;
}

LinkOccupancy::Use& LinkOccupancy::use(simgrid::s4u::Link* l) {
  if (Use* u = find(l)) return *u;
  Use& u = uses_.emplace_back();
  u.owner = this;
  u.link = l;
  if (l->get_data<Use>() == nullptr)
    l->set_data(&u);
  else
    other_[l] = &u;
  return u;
}

const LinkOccupancy::Route* LinkOccupancy::route(const std::vector<simgrid::s4u::Link*>& links) {
  auto it = route_of_.find(links);
  if (it != route_of_.end()) return it->second;
  Route& r = routes_.emplace_back();
  r.links_ = links;
  for (simgrid::s4u::Link* l : links) r.uses_.push_back(&use(l));
  route_of_.emplace(links, &r);
  return &r;
}

bool LinkOccupancy::idle(const Route& r, double from_s, double to_s) const {
  for (const Use* u : r.uses_) {
    if (u->flows > 0) return false;
    for (const Use::Lone& f : u->lone)
      if (f.start_s < to_s && from_s < f.end_s) return false;
  }
  return true;
}

void LinkOccupancy::add_lone(LoneFlow* f) {
  const Use::Lone entry{f->lone_start_s(), f->lone_end_s(), f};
  for (Use* u : f->lone_route().uses_) u->lone.push_back(entry);
}

void LinkOccupancy::remove_lone(LoneFlow* f) {
  for (Use* u : f->lone_route().uses_) {
    auto& v = u->lone;
    for (auto it = v.begin(); it != v.end(); ++it)
      if (it->flow == f) {
        v.erase(it);
        break;
      }
  }
}

void LinkOccupancy::flow_started(const std::vector<simgrid::s4u::Link*>& links, double now,
                                 double latency_s) {
  const double eps = latency_s > 0 ? std::min(1e-9, latency_s / 4) : 1e-9;
  // Collect first: a conversion starts a SimGrid flow of its own (flow_started again, on
  // links that then carry no lone flow).
  const std::size_t base = converting_.size();
  for (const simgrid::s4u::Link* l : links) {
    const Use* u = find(l);
    if (u == nullptr) continue;
    for (const Use::Lone& e : u->lone)
      if (std::find(converting_.begin() + static_cast<std::ptrdiff_t>(base), converting_.end(),
                    e.flow) == converting_.end())
        converting_.push_back(e.flow);
  }
  for (std::size_t i = base; i < converting_.size(); ++i) remove_lone(converting_[i]);
  for (simgrid::s4u::Link* l : links) ++use(l).flows;
  for (std::size_t i = base; i < converting_.size(); ++i) {
    ++conversions_;
    converting_[i]->convert(now, eps);
  }
  converting_.resize(base);
}

void LinkOccupancy::flow_ended(const std::vector<simgrid::s4u::Link*>& links) {
  for (const simgrid::s4u::Link* l : links) {
    Use* u = find(l);
    if (u != nullptr && u->flows > 0) --u->flows;
  }
}

}  // namespace prima::sim
