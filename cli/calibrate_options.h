// The options of `prima calibrate` (cli/cmd_calibrate.cpp): its flags as one struct with their
// defaults (std::nullopt: a flag without a default that was not given), filled from the
// parsed command line by calibrate_options() and checked by validate() (a Status whose
// message names the flag and its bad value). Parameter overrides (--set), the parameters to
// fit (--fit) and their bounds (--bound) stay the text given until validate() has checked
// them; the conversions assume validated options. Checks that need the files (the points,
// a profile) are the command's. Plain values; thread-compatible.
#pragma once

#include <boost/program_options.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cli/calibrate_fit.h"
#include "engine/core/status.h"
#include "engine/perf/calibration.h"

namespace prima::cli {

// One --set: a parameter of the efficiency profile and its value (seconds for latencies).
using ParamValue = std::pair<const perf::EfficiencyField*, double>;

struct CalibrateOptions {
  std::string points_file = "data/calibration/published.json";  // --points
  std::string gpu;                     // --gpu: only its points; "" = every GPU's
  std::optional<std::string> profile;  // --profile FILE for its GPU
  bool roofline = false;               // the default shares, no built-in profiles
  std::optional<std::string> sources;  // --sources: point source IDs, comma-separated
  std::vector<std::string> sets;       // --set KEY=VALUE
  std::optional<std::string> fit;      // --fit: parameters, comma-separated
  std::vector<std::string> bounds;     // --bound KEY=LO:HI
  FitSettings fit_settings;            // --iterations, --starts, --max-error
  std::optional<std::string> out;      // --out: the profile to write
  bool write_fidelity = false;
  bool json = false;
  // The engine whose terms the step points are predicted with (a name or a profile file);
  // default: the one the points name (splitwise-2023 for the Splitwise set).
  std::optional<std::string> engine;
  // --engine-points FILE: calibrate an engine on published measurements of it
  // (data/calibration/engines/*.json, cli/calibrate_engine.h) instead of the step points.
  std::optional<std::string> engine_points;
  bool cv = false;  // --cv: leave-one-source-out cross-validation of the engine fit
  int threads = 2;  // --threads: engine calibration runs in parallel

  Status validate() const;

  // Conversions of validated options.
  std::vector<std::string> source_ids() const;  // --sources split at commas
  std::vector<ParamValue> overrides() const;    // --set
  FitSpace fit_space() const;                   // --fit and --bound
};

// The flags, their defaults and help text.
boost::program_options::options_description calibrate_flags();
// The options the parsed flags give (not validated).
CalibrateOptions calibrate_options(const boost::program_options::variables_map& vm);

}  // namespace prima::cli
