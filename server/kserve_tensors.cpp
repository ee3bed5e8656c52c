// The served model's v2 tensors: metadata, Triton config, request checks (see kserve_tensors.h).
#include "server/kserve_tensors.h"

#include <fmt/format.h>

#include "server/json_body.h"

namespace prima::server {
namespace {

using nlohmann::json;

// `valid` as the list errors quote: ["text_input"].
std::string valid_names(const char* name) {
  return json::array({name}).dump();
}

// Refuses the shared-memory extension (this server reads tensors from the body only).
std::optional<ApiError> refuse_shared_memory(const json& params, const std::string& path) {
  for (const char* key :
       {"shared_memory_region", "shared_memory_byte_size", "shared_memory_offset"})
    if (params.contains(key))
      return bad_field(path + ".parameters." + key,
                       fmt::format("'{}.parameters.{}': shared memory is not supported; send the "
                                   "tensor in \"data\" or as binary data",
                                   path, key));
  return std::nullopt;
}

std::optional<ApiError> check_input(const json& t, const std::string& path) {
  if (!t.is_object()) return std::nullopt;  // the request parser names it
  auto name = t.find("name");
  if (name == t.end() || !name->is_string())
    return bad_field(path + ".name", fmt::format("'{}.name' must be a string, one of {}", path,
                                                 valid_names(kTextInput)));
  if (name->get<std::string>() != kTextInput)
    return bad_field(path + ".name",
                     fmt::format("'{}.name' is \"{}\": this model has no such input; its inputs "
                                 "are {}",
                                 path, name->get<std::string>(), valid_names(kTextInput)));
  if (auto p = t.find("parameters"); p != t.end() && p->is_object())
    if (auto e = refuse_shared_memory(*p, path)) return e;
  auto shape = t.find("shape");
  auto data = t.find("data");
  if (shape == t.end() || !shape->is_array() || data == t.end() || !data->is_array())
    return std::nullopt;  // the request parser names what is missing
  std::uint64_t elements = 1;
  for (std::size_t d = 0; d < shape->size(); ++d) {
    const json& dim = (*shape)[d];
    // Parsed JSON makes non-negative integers unsigned; built JSON may hold them signed.
    if (!dim.is_number_integer() || dim.get<long long>() < 0 || dim.get<long long>() > (1ll << 31))
      return bad_field(path + ".shape",
                       fmt::format("'{}.shape[{}]' must be an integer in 0..2^31, got {}", path, d,
                                   config::brief(dim)));
    elements *= dim.get<std::uint64_t>();
    if (elements > (1u << 31)) elements = (1u << 31) + 1ull;  // more than any body holds
  }
  if (elements != data->size())
    return bad_field(path + ".shape",
                     fmt::format("'{}.shape' holds {} elements, but the tensor's data holds {}",
                                 path, elements, data->size()));
  return std::nullopt;
}

std::optional<ApiError> check_output(const json& o, const std::string& path, bool* binary) {
  if (!o.is_object()) return bad_field(path, fmt::format("'{}' must be an object", path));
  auto name = o.find("name");
  if (name == o.end() || !name->is_string())
    return bad_field(path + ".name", fmt::format("'{}.name' must be a string, one of {}", path,
                                                 valid_names(kTextOutput)));
  if (name->get<std::string>() != kTextOutput)
    return bad_field(path + ".name",
                     fmt::format("'{}.name' is \"{}\": this model has no such output; its "
                                 "outputs are {}",
                                 path, name->get<std::string>(), valid_names(kTextOutput)));
  auto p = o.find("parameters");
  if (p == o.end() || p->is_null()) return std::nullopt;
  if (!p->is_object())
    return bad_field(path + ".parameters", fmt::format("'{}.parameters' must be an object", path));
  if (auto e = refuse_shared_memory(*p, path)) return e;
  if (p->contains("classification"))
    return bad_field(path + ".parameters.classification",
                     fmt::format("'{}.parameters.classification': the classification extension "
                                 "is not supported (text_output is text, not scores)",
                                 path));
  *binary =
      config::JsonReader::request_body(*p, path + ".parameters").boolean("binary_data", *binary);
  return std::nullopt;
}

std::optional<ApiError> check_tensors(json* request, InferOutputs* out) {
  if (!request->is_object()) return std::nullopt;  // the request parser names it
  if (auto in = request->find("inputs"); in != request->end() && in->is_array())
    for (std::size_t i = 0; i < in->size(); ++i)
      if (auto e = check_input((*in)[i], fmt::format("inputs[{}]", i))) return e;

  bool binary_default = false;
  if (auto p = request->find("parameters"); p != request->end() && p->is_object()) {
    binary_default = config::JsonReader::request_body(*p, "parameters")
                         .boolean("binary_data_output", binary_default);
    p->erase("binary_data_output");
  }
  out->binary = binary_default;
  if (auto outs = request->find("outputs"); outs != request->end()) {
    if (!outs->is_null() && !outs->is_array())
      return bad_field("outputs", fmt::format("'outputs' must be a list of requested outputs "
                                              "(objects with a \"name\" from {})",
                                              valid_names(kTextOutput)));
    if (outs->is_array()) {
      for (std::size_t i = 0; i < outs->size(); ++i)
        if (auto e = check_output((*outs)[i], fmt::format("outputs[{}]", i), &out->binary))
          return e;
      if (outs->size() > 1)  // every name is text_output by now
        return bad_field("outputs[1].name",
                         "'outputs[1].name': \"text_output\" is asked for twice; list each output "
                         "once");
    }
    request->erase(outs);
  }
  return std::nullopt;
}

}  // namespace

json kserve_model_metadata(const std::string& model, const std::string& backend) {
  json t_in{{"name", kTextInput}, {"datatype", "BYTES"}, {"shape", json::array({1})}};
  json t_out{{"name", kTextOutput}, {"datatype", "BYTES"}, {"shape", json::array({1})}};
  return {{"name", model},
          {"versions", json::array({kKServeVersion})},
          {"platform", "prima-" + backend},
          {"inputs", json::array({t_in})},
          {"outputs", json::array({t_out})}};
}

json kserve_model_config(const std::string& model, const std::string& backend, int max_model_len) {
  json in{{"name", kTextInput},       {"data_type", "TYPE_STRING"}, {"format", "FORMAT_NONE"},
          {"dims", json::array({1})}, {"is_shape_tensor", false},   {"allow_ragged_batch", false},
          {"optional", false}};
  json out{{"name", kTextOutput},
           {"data_type", "TYPE_STRING"},
           {"dims", json::array({1})},
           {"label_filename", ""},
           {"is_shape_tensor", false}};
  return {{"name", model},
          {"platform", "prima-" + backend},
          {"backend", "prima"},
          {"version_policy", {{"specific", {{"versions", json::array({1})}}}}},
          {"max_batch_size", 0},
          {"input", json::array({in})},
          {"output", json::array({out})},
          {"model_transaction_policy", {{"decoupled", false}}},
          {"parameters", {{"max_model_len", {{"string_value", std::to_string(max_model_len)}}}}}};
}

std::optional<ApiError> check_infer_tensors(json* request, InferOutputs* out) {
  return field_errors([&] { return check_tensors(request, out); });
}

}  // namespace prima::server
