// Transfers: how a SimExecutor's stages move bytes, and the speed-ups that time transfers
// without SimGrid flows (private to the executor's sources; read sim_executor.h first).
//
// Reference:
//   analytic terms  seconds that ride on the stage's compute Exec (stage_analytic_s): the
//                   intra-node TP all-reduces and PP sends (analytic_intra_node_collectives,
//                   at the NVLink figures), the latency term of flow-modelled all-reduces, the
//                   fixed per-send cost, the step overhead on stage 0, fault extras.
//   ring flows      a TP all-reduce that spans nodes (or with analytic collectives off): one
//                   SimGrid flow per GPU to its ring neighbour of 2(p-1)/p x bytes x count,
//                   after the compute (start_allreduce).
//   send flow       a PP send between nodes: one flow lead -> next stage's lead of send_bytes,
//                   after the ring (start_send).
//   flow path       a FlowPath: a route whose flows never overlap each other, with a platform
//                   flow slot that claims its links (SimPlatform::claim_links) and what a
//                   lone flow on it costs (latency x factor, min bandwidth x factor).
//
// Speed-ups:
//   exclusive       (exclusive_links_analytic) a path whose links no other slot claims is
//                   costed as a lone flow among the analytic terms: no flow at all. Decided
//                   again whenever the platform's claims change (refresh_exclusive).
//   lone flow       (lone_flows; the model is in link_occupancy.h) a ring or send flow that
//                   starts on links carrying no other flow is a timer at its lone-flow end
//                   (LoneSend, registered in LinkOccupancy); when another flow starts on one of
//                   its links it converts: it continues as a SimGrid Comm of what it has left
//                   (continue_as_comm; eps: the newcomer's latency phase, during which it was
//                   still alone).
//   folded send     (lone_flows) a stage's PP send whose links are free for its whole future
//                   interval rides on the stage's compute timer (fold_send: the timer ends
//                   with the send; FoldedSend registered for [compute end, lone-flow end)).
//                   A flow starting on its links unfolds it (unfold_send): still computing,
//                   the timer is re-armed at the compute's end and the send decides again;
//                   sending, the rest continues as a SimGrid Comm.
//
// Thread-safety: simulation loop only. Ownership: borrows the Replica (its owner's); the
// LoneSends and FoldedSends live in their Steps.
#pragma once

#include <cstdint>
#include <vector>

#include "backends/sim/sim_executor_state.h"

namespace prima::sim::exec {

class Transfers {
 public:
  explicit Transfers(Replica& rep) : rep_(rep) {}

  // Decides how stage's transfers are modelled (flows or analytic) and makes its flow paths
  // (claiming their links). Once per stage, in stage order, when the executor is made.
  void lay_out(Stage& stage);
  // Releases the links every stage's paths claimed (the executor is destroyed).
  void release_paths();
  // Re-decides ring_analytic / send_analytic (and the lone-flow routes) when the platform's
  // link claims changed since the last call.
  void refresh_if_claims_changed() {
    if (rep_.platform->claims_version() != claims_seen_) refresh_exclusive();
  }

  // The seconds that ride on a stage's compute (step overhead on stage 0, analytic
  // collectives and sends, fault extras); fills st's analytic byte counts and fault.
  double stage_analytic_s(const Stage& stage, Step* st, const perf::StageCost& c);
  // st's ring flows / send flow at its current stage (after its compute).
  void start_allreduce(Step* st);
  void start_send(Step* st);

  // Folds the stage's PP send into its compute timer when its links are free for the whole
  // send (returns the timer's flops, or -1 when it does not fold).
  double fold_send(Stage& stage, Step* st, const perf::StageCost& c, double compute_flops);
  // Registers x's folded send at `stage` (x->folds[stage.index]) when the send's links are
  // free from the end of compute_flops started at `start` to the send's lone-flow end: the
  // timer's flops (compute, then the send), or -1 (nothing registered). fold_send for a stage
  // starting now, ClosedForm::plan_fold for one planned at launch.
  double register_fold(Stage& stage, Step* x, const perf::StageCost& c, double start,
                       double compute_flops);
  // A flow started on folded send f's links at `now` (ClosedForm::on_fold_converted).
  void unfold_send(FoldedSend* f, double now, double eps);
  void unregister_fold(Step* x, int stage);  // folds[stage], if registered
  void unregister_folds(Step* x);            // every registered fold of x
  // A lone flow's links were taken at `now` (LoneSend::convert).
  void convert_lone(LoneSend* f, double now, double eps);
  // Drops x's lone flows still timed (the executor is destroyed).
  void cancel_lone(Step* x);

 private:
  FlowPath make_path(simgrid::s4u::Host* src, simgrid::s4u::Host* dst);
  void refresh_exclusive();
  // Whether st's all-to-all is costed analytically (its links exclusive), and its figures.
  void refresh_a2a(Stage& st);
  double ring_analytic_s(const Stage& stage, double bytes_per_flow) const;
  // A flow towards a GPU that is off, or across a link that is down, fails the step at once
  // (SimGrid cannot start it): true then.
  bool fail_if_down(Step* st, const std::vector<simgrid::s4u::Host*>& hosts,
                    const std::vector<const std::vector<simgrid::s4u::Link*>*>& paths);
  // Starts one flow of a phase: lone when its links are idle, else a SimGrid Comm
  // (converting lone flows there).
  void start_flow(Step* st, const FlowPath& path, simgrid::s4u::Host* src, simgrid::s4u::Host* dst,
                  double bytes);
  void on_lone_end(LoneSend* f);
  // A lone transfer on p whose latency phase ends (ended) at latency_end continues at `now` as
  // a SimGrid Comm of what it has left (link_occupancy.h).
  void continue_as_comm(Step* st, const FlowPath& p, simgrid::s4u::Host* src,
                        simgrid::s4u::Host* dst, double latency_end, double bytes, double now,
                        double eps);

  Replica& rep_;
  std::uint64_t claims_seen_ = ~std::uint64_t{0};
};

}  // namespace prima::sim::exec
