// The served model as the KServe v2 / Triton protocol sees it: one version ("1"), one input
// tensor "text_input" (BYTES, shape [1]: the prompt) and one output tensor "text_output"
// (BYTES, shape [1]: the generated text). From that: the model metadata answer
// (GET /v2/models/{m}), Triton's model configuration (GET /v2/models/{m}/config), and the
// check of an inference request's tensors against them (names, shapes, the outputs asked
// for, binary data asked for). Pure functions; thread-safe.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "server/api_error.h"

namespace prima::server {

inline constexpr const char* kKServeVersion = "1";
inline constexpr const char* kTextInput = "text_input";
inline constexpr const char* kTextOutput = "text_output";

// GET /v2/models/{m}[/versions/1]: name, versions, platform, inputs, outputs.
nlohmann::json kserve_model_metadata(const std::string& model, const std::string& backend);

// GET /v2/models/{m}[/versions/1]/config: Triton's model configuration (name, platform,
// backend, version policy, max_batch_size 0 = no batch dimension, input and output with
// TYPE_STRING and dims, parameters.max_model_len).
nlohmann::json kserve_model_config(const std::string& model, const std::string& backend,
                                   int max_model_len);

// What the request asked of its output.
struct InferOutputs {
  bool binary = false;  // text_output as binary data (the extension), not JSON "data"
};

// Checks `request` (an inference request's JSON, after inline_binary_inputs) against the
// model's tensors, and consumes what this layer handles so the request parser sees only the
// prompt and its parameters:
//  - every input names "text_input" (else 400 naming inputs[i].name and the valid names); its
//    shape's element count matches its data; shared memory is refused;
//  - "outputs", when given, name only "text_output" (else 400 naming outputs[i].name and the
//    valid names); "parameters.binary_data" (boolean) asks for binary output;
//    "classification" and shared memory are refused; "outputs" is then removed;
//  - "parameters.binary_data_output" (boolean) asks for binary output where an output does
//    not say; it is removed.
std::optional<ApiError> check_infer_tensors(nlohmann::json* request, InferOutputs* out);

}  // namespace prima::server
