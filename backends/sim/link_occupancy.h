// LinkOccupancy: which links carry a flow right now, for lone flows (SimSpeedups::lone_flows).
//
// A lone flow is a transfer that started while none of its links carried another flow. As
// long as it stays alone, CM02 gives it the whole route (min bandwidth x factor) after its
// latency, so it is costed as a timer at start + latency + bytes / rate: no SimGrid Comm, no
// LMM variable. The moment a SimGrid flow is about to start on one of its links,
// flow_started() asks it to convert itself (LoneFlow::convert) into a SimGrid flow carrying
// what is left: the rest of its latency phase, or, in its bandwidth phase, the bytes not yet
// sent after a short latency `eps` (SimGrid gives a latency-free flow a sharing weight of 1
// instead of its route's, so the converted flow keeps a latency; eps is a quarter of the
// newcomer's latency at most, so the newcomer is still in its own latency phase and the lone
// flow would have been alone until then anyway). From there on SimGrid shares the links as
// usual.
//
// A lone flow may also be registered ahead of its start (a send folded into its stage's
// compute timer: SimExecutor), for the interval [lone_start_s, lone_end_s). A link carries
// lone flows whose intervals do not overlap, and never a lone flow and a SimGrid flow at once
// (except a lone flow ending within eps of a newcomer, left to finish: see convert); a SimGrid
// flow starting on a link converts every lone flow registered there, started or not (its own
// end is not known).
//
// Thread-safety: simulation loop only. Ownership: borrows the lone flows (registered until
// remove_lone or their conversion) and the links (SimGrid's, alive for the process). Each
// link's state is reached through the link's user data (s4u::Link::set_data, which nothing
// else in prima uses), so that a lookup is one load rather than a hash; a link whose data
// another LinkOccupancy holds falls back to a map. A route (OccupancyRoute, from route()) holds
// its links' states directly: a flow path resolves its route once, and the lone-flow calls on
// every send (idle, add_lone, remove_lone) walk it without any lookup; each registered flow's
// interval is kept next to it on every link, so idle() makes no virtual calls.
#pragma once

#include <deque>
#include <map>
#include <simgrid/s4u/Link.hpp>
#include <unordered_map>
#include <vector>

namespace prima::sim {

class LinkOccupancy;

// A route's links as a LinkOccupancy resolved them (LinkOccupancy::route): their state is one
// load away. Owned by that LinkOccupancy; the address is stable for its life.
class OccupancyRoute {
 public:
  const std::vector<simgrid::s4u::Link*>& links() const { return links_; }

 private:
  friend class LinkOccupancy;
  struct Use;
  std::vector<simgrid::s4u::Link*> links_;
  std::vector<Use*> uses_;  // parallel to links_
};

class LoneFlow {
 public:
  virtual ~LoneFlow() = default;
  // A SimGrid flow starts on one of this flow's links at `now`: continue as a SimGrid flow
  // (or, when it ends within eps of now, finish as planned; or, not started yet, decide again
  // when it starts). The flow is no longer registered when this is called.
  virtual void convert(double now, double eps) = 0;
  // Its route (resolved by the LinkOccupancy it registers with), and its interval; both
  // stable while registered (add_lone records the interval).
  virtual const OccupancyRoute& lone_route() const = 0;
  virtual double lone_start_s() const = 0;
  virtual double lone_end_s() const = 0;
};

// A link's state in one LinkOccupancy.
struct OccupancyRoute::Use {
  struct Lone {  // a registered lone flow and its interval
    double start_s, end_s;
    LoneFlow* flow;
  };
  int flows = 0;           // SimGrid flows
  std::vector<Lone> lone;  // disjoint intervals, in registration order
  const LinkOccupancy* owner = nullptr;
  simgrid::s4u::Link* link = nullptr;
};

class LinkOccupancy {
 public:
  using Route = OccupancyRoute;
  LinkOccupancy() = default;
  LinkOccupancy(const LinkOccupancy&) = delete;
  LinkOccupancy& operator=(const LinkOccupancy&) = delete;
  ~LinkOccupancy();  // clears the link data it set
  // Lone flows are allowed from now on.
  void enable() { enabled_ = true; }
  bool enabled() const { return enabled_; }
  // The route over `links`, resolved once (the same links give the same route).
  const Route* route(const std::vector<simgrid::s4u::Link*>& links);
  // Whether none of the route's links carries a SimGrid flow now or a lone flow registered for
  // a time overlapping [from_s, to_s) (intervals that only touch do not overlap).
  bool idle(const Route& r, double from_s, double to_s) const;
  // The same over `links` (resolving their route: for callers off the hot path, and tests).
  bool idle(const std::vector<simgrid::s4u::Link*>& links, double from_s, double to_s) {
    return idle(*route(links), from_s, to_s);
  }
  // Registers f on its route (lone_route(), resolved here) for its interval.
  void add_lone(LoneFlow* f);
  // Unregisters f (its timer fired). No-op for a flow not registered.
  void remove_lone(LoneFlow* f);
  // A SimGrid flow with latency `latency_s` (its route's, factors applied) starts on `links`
  // at `now`: the lone flows there convert first, with eps = min(1 ns, latency_s / 4).
  void flow_started(const std::vector<simgrid::s4u::Link*>& links, double now, double latency_s);
  // A SimGrid flow on `links` ended (finished, failed or cancelled).
  void flow_ended(const std::vector<simgrid::s4u::Link*>& links);
  // Lone flows asked to convert so far, those left to end within eps included (a statistic
  // for tests).
  long conversions() const { return conversions_; }

 private:
  using Use = Route::Use;
  // The state of a link: nullptr when it never carried a flow here (find), created (use).
  Use* find(const simgrid::s4u::Link* l) const {
    Use* u = l->get_data<Use>();
    if (u != nullptr && u->owner == this) return u;
    return other_.empty() ? nullptr : find_other(l);
  }
  Use* find_other(const simgrid::s4u::Link* l) const;
  Use& use(simgrid::s4u::Link* l);
  std::deque<Use> uses_;                                       // stable addresses
  std::unordered_map<const simgrid::s4u::Link*, Use*> other_;  // data held by another one
  std::deque<Route> routes_;                                   // stable addresses
  std::map<std::vector<simgrid::s4u::Link*>, const Route*> route_of_;
  std::vector<LoneFlow*> converting_;
  bool enabled_ = false;
  long conversions_ = 0;
};

}  // namespace prima::sim
