// A scenario run in process with no network or SimGrid: the engine's ServingEngine and
// scheduler on a VirtualRuntime, one replica on one node whose steps take the cost model's
// analytic step time (CostModel::step_time_s with its collectives on NVLink: the sim backend's
// analytic intra-node path, tests/engine/calib/analytic_run_test.cpp holds the two together).
// It is what engine calibration runs (engine_fit.h): a published benchmark point is a
// scenario on one node, and a fit runs each point many times; thousands of times faster than
// forking a simulation. Deployments it does not cover (several replicas or nodes, pipeline
// parallelism, disaggregation, faults, autoscaling) are refused with the reason. Stateless;
// thread-safe (each call owns its engine).
#pragma once

#include <nlohmann/json.hpp>

#include "engine/core/status.h"
#include "engine/scenario/scenario.h"

namespace prima::calib {

// The report of the run, as report.json's "latency_s", "requests" and "throughput" sections
// (metrics::build_report), or the reason the scenario is not one this run covers.
Result<nlohmann::ordered_json> run_analytic(const scenario::Scenario& sc);

}  // namespace prima::calib
