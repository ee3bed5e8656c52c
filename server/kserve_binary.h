// The binary tensor data extension of the KServe v2 / Triton HTTP protocol, as pure functions
// over bytes (no HTTP): tritonclient sends and expects it by default.
//  - A request with the header `Inference-Header-Content-Length: N` has N bytes of JSON (the
//    inference header) followed by raw tensor bytes; each input whose "parameters" hold
//    "binary_data_size": S takes the next S bytes, in the order of "inputs", and the sizes
//    must add up to the bytes after the JSON exactly.
//  - A BYTES tensor's raw data is its elements one after another, each a 4-byte little-endian
//    length followed by that many bytes.
//  - An answer with binary outputs is the JSON header, then the outputs' raw bytes; the
//    response header `Inference-Header-Content-Length` gives the JSON's length and each such
//    output carries "parameters": {"binary_data_size": S} instead of "data".
// Every malformed body (a header length that is not a number or is beyond the body, sizes that
// do not add up, a truncated BYTES element) is an ApiError (400) naming what is wrong; nothing
// reads past the body. Pure functions; thread-safe.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "server/api_error.h"

namespace prima::server {

inline constexpr const char* kInferHeaderLength = "Inference-Header-Content-Length";

// A request body cut at the JSON header's end (views into the body).
struct BinaryBody {
  std::string_view json;
  std::string_view binary;
};

// Splits `body` at the length given by the Inference-Header-Content-Length header's value.
std::optional<ApiError> split_binary_body(std::string_view body, std::string_view header_value,
                                          BinaryBody* out);

// The elements of a BYTES tensor's raw data; `path` names the tensor in errors
// ("inputs[0]").
std::optional<ApiError> decode_bytes_elements(std::string_view raw, const std::string& path,
                                              std::vector<std::string>* out);
// The raw data of a BYTES tensor holding `elements`.
std::string encode_bytes_elements(const std::vector<std::string>& elements);

// Moves the binary data of the request's inputs into their "data": every input of `request`
// (the parsed JSON header) with "parameters.binary_data_size" takes its bytes from `binary`,
// decoded as BYTES elements (each must be valid UTF-8: the prompt is text), and loses the
// parameter; an input with binary data must not also have "data", and its datatype must be
// BYTES (the only datatype this server's model takes). Bytes left over, or sizes beyond
// `binary`, are errors.
std::optional<ApiError> inline_binary_inputs(nlohmann::json* request, std::string_view binary);

// An inference answer's body: `header` (the JSON answer, each output's "data" a list of
// strings) with every output i where binary[i] is set moved out of the JSON into raw BYTES
// data after it ("parameters.binary_data_size" in its place). *header_bytes: the JSON's
// length, for the Inference-Header-Content-Length response header.
std::string encode_binary_outputs(nlohmann::json header, const std::vector<bool>& binary,
                                  std::size_t* header_bytes);

}  // namespace prima::server
