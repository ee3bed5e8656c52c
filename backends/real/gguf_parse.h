// Internals of the GGUF reader shared by gguf_*.cpp, the tests and the fuzz target: parsing
// from a byte buffer, and the ggml tensor-type table (names of every ggml type number, block
// sizes of the types prima accepts in model files).
// Stateless functions; thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "backends/real/gguf.h"

namespace prima::real {

// Parses a GGUF file held in memory. `label` names the buffer in error messages (the path
// for files). The result does not own the bytes: its tensors' data pointers point into
// [data, data + size), which must outlive it. Same checks and messages as GgufFile::open,
// without the manifest.
Result<std::unique_ptr<GgufFile>> parse_gguf(const std::uint8_t* data, std::size_t size,
                                             const std::string& label);

// The ggml name of a type number ("Q4_K"), or "unknown" for numbers ggml never assigned.
const char* ggml_type_name(std::uint32_t ggml_type);

// Block layout of a tensor type prima accepts in model files (F32, F16, BF16, Q4_0, Q4_1,
// Q8_0, Q6_K); nullptr for any other type number.
const kernels::TypeTraits* gguf_tensor_traits(std::uint32_t ggml_type);

// The GGUF name of a metadata value type ("u32", "string"); "unknown" out of range.
const char* gguf_type_name(GgufType t);

// The byte size of a scalar metadata type; 0 for string, array and unknown types.
std::size_t gguf_scalar_size(GgufType t);

}  // namespace prima::real
