// Nelder–Mead minimisation of f: R^n -> R within box bounds (each coordinate is mapped through
// a logistic transform, so the search space is unbounded and every evaluated point is inside
// its bounds). Deterministic: the same inputs give the same answer. Used to fit calibration
// parameters (prima calibrate --fit, prima replay --fit).
#pragma once

#include <functional>
#include <vector>

namespace prima::perf {

struct FitBounds {
  double lo = 0, hi = 1;
};

struct FitResult {
  std::vector<double> x;  // the best point found
  double value = 0;       // f(x)
  int evaluations = 0;
  int iterations = 0;
};

// Minimises f from x0 (clamped into bounds). Stops after max_iterations or when the simplex's
// values differ by less than tol. progress(iteration, best value) is called once per iteration
// when given.
FitResult nelder_mead(const std::function<double(const std::vector<double>&)>& f,
                      std::vector<double> x0, const std::vector<FitBounds>& bounds,
                      int max_iterations = 400, double tol = 1e-10,
                      const std::function<void(int, double)>& progress = {});

}  // namespace prima::perf
