// Options of the sim backend (filled from the scenario's "sim" section and CLI flags).
// Plain values.
#pragma once

namespace prima::sim {

struct SimOptions {
  // One Exec per pipeline stage on its lead GPU (rate set by the slowest GPU of the stage)
  // instead of one per GPU: much faster, same timing while GPUs of a stage stay in step.
  bool aggregate_stage_execs = true;
  // TP all-reduces that stay inside one node are costed analytically (no flows) when the
  // replica is the only user of those NVLink links.
  bool analytic_intra_node_collectives = true;
};

}  // namespace prima::sim
