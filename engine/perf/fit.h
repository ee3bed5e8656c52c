// Nelder–Mead: derivative-free minimisation of f: R^n -> R, for fitting a few calibration
// parameters to measurements where each evaluation is a whole simulation (no gradients, some
// noise from discrete events). Bounds are honoured through a change of variables (as
// fminsearchbnd does): the simplex moves in an unbounded z, and x = T(z) always lies within
// [lo, hi] (both bounds: lo + (hi-lo)(sin z + 1)/2; lower only: lo + z^2; upper only: hi - z^2).
// The objective is only ever called with x inside the bounds.
//
// Plain function; the objective is called on the calling thread, one evaluation at a time.
#pragma once

#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "engine/core/status.h"

namespace prima::perf {

struct FitBound {
  double lo = -std::numeric_limits<double>::infinity();
  double hi = std::numeric_limits<double>::infinity();
};

// What one iteration did, for progress lines.
struct NelderMeadIteration {
  int iteration = 0;    // 1-based
  int evaluations = 0;  // objective calls so far
  double best_f = 0;
  std::vector<double> best_x;
  const char* step = "";  // "reflect", "expand", "contract", "shrink", "restart"
};

struct NelderMeadOptions {
  int max_iterations = 60;
  // Size of the first simplex per dimension, in x units (each vertex moves one coordinate by
  // this much, inward when the bound is nearer). Empty: 10% of |x0|, or 0.1 when x0 is 0.
  std::vector<double> initial_step;
  // Converged when the spread of f over the simplex is at most f_tolerance and every vertex
  // is within x_tolerance of the best one, measured in units of the first simplex's size.
  double f_tolerance = 1e-10;
  double x_tolerance = 1e-4;
  // A simplex can collapse before the minimum, in a long narrow valley (two parameters that
  // trade off against each other) or on a rough objective (a simulation's discrete events):
  // it converges early, or shrinks and crawls. When it has converged or shrunk to 1/100 of the
  // first simplex's size, start again from the best point with a fresh first simplex, up to
  // this many times while iterations remain and the previous restart gained more than 0.1% of
  // f; otherwise a converged simplex ends the search (and a small one goes on).
  int restarts = 0;
  std::function<void(const NelderMeadIteration&)> on_iteration;  // optional
};

struct NelderMeadResult {
  std::vector<double> x;  // the best point found
  double f = 0;
  int iterations = 0;
  int evaluations = 0;
  bool converged = false;  // false: stopped at max_iterations
  int restarts = 0;        // restarts made
};

using Objective = std::function<double(const std::vector<double>&)>;

// Minimises f from x0. A non-finite f counts as worse than any finite one. Errors (invalid
// argument): no dimensions, bounds/steps of the wrong size, lo >= hi, x0 outside its bounds, a
// zero initial step.
Result<NelderMeadResult> nelder_mead(const Objective& f, const std::vector<double>& x0,
                                     const std::vector<FitBound>& bounds,
                                     const NelderMeadOptions& opts = {});

}  // namespace prima::perf
