// `--synthetic NAME[:TYPE]` of `prima generate`, `prima profile` and `prima serve --backend
// real`: a model of a real shape with seeded random weights (backends/real/synthetic_model.h)
// instead of --model. The flag, its check (the form, and that it and --model exclude each
// other) and its resolution, which makes the GGUF file in the cache folder when it is not
// there yet and gives its path as the model path.
#pragma once

#include <boost/program_options.hpp>
#include <optional>
#include <string>

#include "engine/core/status.h"

namespace prima::cli {

// Adds --synthetic to `opts`.
void add_synthetic_flag(boost::program_options::options_description& opts);
// --synthetic's value ("" when not given).
std::string synthetic_flag(const boost::program_options::variables_map& vm);

// invalid_argument when neither or both of --model and --synthetic are given, or when
// --synthetic does not parse.
Status check_model_source(const std::string& model_path, const std::string& synthetic);

// With --synthetic: makes the model when the cache lacks it (a note on stderr), sets
// `model_path`, and returns nullopt; on failure prints "COMMAND: reason" and returns the exit
// code (2: bad spec, 1: the file could not be made). Without it: nothing, nullopt. With
// `on_device` (--device cuda or cuda-emu) the matrices are made by the device when the forward
// pass opens (SyntheticSpec::device_weights): the file holds the metadata and the norms only.
std::optional<int> resolve_synthetic(const char* command, const std::string& synthetic,
                                     bool on_device, std::string* model_path);

// The name a server gives a synthetic model ("tiny-q4_1-s1"): its written file's stem, the same
// whether the weights are written or made on the device ("" when `synthetic` does not parse).
std::string synthetic_model_name(const std::string& synthetic);

}  // namespace prima::cli
