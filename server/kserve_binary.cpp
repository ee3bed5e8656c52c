// The binary tensor data extension of the v2 protocol (see kserve_binary.h).
#include "server/kserve_binary.h"

#include <fmt/format.h>

#include <cstdint>

#include "server/json_body.h"
#include "server/text_decoder.h"

namespace prima::server {

using nlohmann::json;

std::optional<ApiError> split_binary_body(std::string_view body, std::string_view header_value,
                                          BinaryBody* out) {
  const std::string field = kInferHeaderLength;
  // A decimal byte count; 19 digits keep it below 2^63 (more cannot be a body's length).
  bool digits = !header_value.empty() && header_value.size() <= 19;
  for (char c : header_value) digits = digits && c >= '0' && c <= '9';
  if (!digits)
    return bad_field(field, fmt::format("the {} header must be a byte count (decimal digits), "
                                        "got \"{}\"",
                                        field, header_value.substr(0, 40)));
  const std::uint64_t n = std::stoull(std::string(header_value));
  if (n == 0)
    return bad_field(field, fmt::format("the {} header is 0: the body must begin with "
                                        "the JSON inference header",
                                        field));
  if (n > body.size())
    return bad_field(field, fmt::format("the {} header says the JSON header is {} bytes, but the "
                                        "body is only {} bytes",
                                        field, n, body.size()));
  out->json = body.substr(0, n);
  out->binary = body.substr(n);
  return std::nullopt;
}

std::optional<ApiError> decode_bytes_elements(std::string_view raw, const std::string& path,
                                              std::vector<std::string>* out) {
  std::size_t at = 0;
  while (at < raw.size()) {
    const std::size_t i = out->size();
    if (raw.size() - at < 4)
      return bad_field(path, fmt::format("'{}': BYTES element {} is truncated: {} bytes left where "
                                         "its 4-byte length should be",
                                         path, i, raw.size() - at));
    const auto* p = reinterpret_cast<const unsigned char*>(raw.data() + at);
    const std::uint32_t len =
        static_cast<std::uint32_t>(p[0]) | static_cast<std::uint32_t>(p[1]) << 8 |
        static_cast<std::uint32_t>(p[2]) << 16 | static_cast<std::uint32_t>(p[3]) << 24;
    at += 4;
    if (len > raw.size() - at)
      return bad_field(path,
                       fmt::format("'{}': BYTES element {} says it is {} bytes long, but only "
                                   "{} bytes of the tensor's data are left",
                                   path, i, len, raw.size() - at));
    out->emplace_back(raw.substr(at, len));
    at += len;
  }
  return std::nullopt;
}

std::string encode_bytes_elements(const std::vector<std::string>& elements) {
  std::string out;
  for (const auto& e : elements) {
    const auto len = static_cast<std::uint32_t>(e.size());
    for (int b = 0; b < 4; ++b) out.push_back(static_cast<char>((len >> (8 * b)) & 0xff));
    out += e;
  }
  return out;
}

std::optional<ApiError> inline_binary_inputs(json* request, std::string_view binary) {
  std::size_t at = 0;  // next unread byte of `binary`
  auto inputs = request->find("inputs");
  if (inputs != request->end() && inputs->is_array()) {
    for (std::size_t i = 0; i < inputs->size(); ++i) {
      json& t = (*inputs)[i];
      const std::string path = fmt::format("inputs[{}]", i);
      if (!t.is_object()) continue;  // the request parser names it
      auto params = t.find("parameters");
      if (params == t.end() || !params->is_object()) continue;
      auto size = params->find("binary_data_size");
      if (size == params->end()) continue;
      const std::string spath = path + ".parameters.binary_data_size";
      if (!size->is_number_integer() || size->get<long long>() < 0)
        return bad_field(spath, fmt::format("'{}' must be a byte count (an integer >= 0), got {}",
                                            spath, config::brief(*size)));
      const std::uint64_t n = size->get<std::uint64_t>();
      if (n > binary.size() - at)
        return bad_field(spath, fmt::format("'{}' is {} bytes, but only {} bytes of binary data "
                                            "are left for it (after the JSON header and the "
                                            "binary data of the inputs before it){}",
                                            spath, n, binary.size() - at,
                                            binary.empty() ? "; binary data needs the "
                                                             "Inference-Header-Content-Length "
                                                             "header"
                                                           : ""));
      if (t.contains("data"))
        return bad_field(path + ".data", fmt::format("'{}' has both \"data\" and binary data "
                                                     "(parameters.binary_data_size): send one",
                                                     path));
      auto dt = t.find("datatype");
      if (dt == t.end() || !dt->is_string() || dt->get<std::string>() != "BYTES")
        return bad_field(path + ".datatype",
                         fmt::format("'{}.datatype' must be \"BYTES\" (the model's input is text), "
                                     "got {}",
                                     path, dt == t.end() ? "nothing" : config::brief(*dt)));
      std::vector<std::string> elements;
      if (auto e = decode_bytes_elements(binary.substr(at, n), path, &elements)) return e;
      at += n;
      json data = json::array();
      for (std::size_t k = 0; k < elements.size(); ++k) {
        if (valid_utf8(elements[k]) != elements[k])
          return bad_field(path, fmt::format("'{}': BYTES element {} is not valid UTF-8 (the "
                                             "prompt must be text)",
                                             path, k));
        data.push_back(std::move(elements[k]));
      }
      t["data"] = std::move(data);
      params->erase("binary_data_size");
      if (params->empty()) t.erase("parameters");
    }
  }
  if (at != binary.size())
    return bad_field(kInferHeaderLength,
                     fmt::format("{} bytes follow the JSON header, but the inputs' "
                                 "parameters.binary_data_size add up to {}",
                                 binary.size(), at));
  return std::nullopt;
}

std::string encode_binary_outputs(json header, const std::vector<bool>& binary,
                                  std::size_t* header_bytes) {
  std::string raw;
  auto outputs = header.find("outputs");
  if (outputs != header.end() && outputs->is_array()) {
    for (std::size_t i = 0; i < outputs->size() && i < binary.size(); ++i) {
      json& o = (*outputs)[i];
      if (!binary[i] || !o.contains("data")) continue;
      std::vector<std::string> elements;
      for (const auto& d : o["data"]) elements.push_back(d.is_string() ? d.get<std::string>() : "");
      const std::string bytes = encode_bytes_elements(elements);
      o.erase("data");
      o["parameters"]["binary_data_size"] = bytes.size();
      raw += bytes;
    }
  }
  std::string body = header.dump();
  *header_bytes = body.size();
  return body + raw;
}

}  // namespace prima::server
