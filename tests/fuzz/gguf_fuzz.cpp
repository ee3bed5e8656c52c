// libFuzzer target for the GGUF reader: parses arbitrary bytes from memory. Either the parse
// fails with a message, or it succeeds and then (1) every tensor's bytes are read (ASan
// catches a pointer outside the input), (2) every typed accessor is called on every key,
// and (3) the file re-written by GgufWriter parses again with the same metadata, tensor
// types, dims and data. Any violation aborts.
// Single-threaded (libFuzzer calls it from one thread).
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "backends/real/gguf.h"
#include "backends/real/gguf_parse.h"

namespace {

using prima::real::GgufArray;
using prima::real::GgufFile;
using prima::real::GgufValue;

[[noreturn]] void fail(const char* what) {
  std::fprintf(stderr, "gguf_fuzz: %s\n", what);
  std::abort();
}

bool same_number(double a, double b) {
  return a == b || (std::isnan(a) && std::isnan(b));
}

bool same(const GgufValue& a, const GgufValue& b) {
  if (a.index() != b.index()) return false;
  if (const auto* d = std::get_if<double>(&a)) return same_number(*d, std::get<double>(b));
  if (const auto* x = std::get_if<GgufArray>(&a)) {
    const auto& y = std::get<GgufArray>(b);
    if (x->elem != y.elem || x->strings != y.strings || x->numbers.size() != y.numbers.size())
      return false;
    for (std::size_t i = 0; i < x->numbers.size(); ++i)
      if (!same_number(x->numbers[i], y.numbers[i])) return false;
    return true;
  }
  if (const auto* i = std::get_if<std::int64_t>(&a)) return *i == std::get<std::int64_t>(b);
  if (const auto* u = std::get_if<std::uint64_t>(&a)) return *u == std::get<std::uint64_t>(b);
  if (const auto* t = std::get_if<bool>(&a)) return *t == std::get<bool>(b);
  return std::get<std::string>(a) == std::get<std::string>(b);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  auto r = prima::real::parse_gguf(data, size, "fuzz");
  if (!r.ok()) {
    if (r.status().message().rfind("fuzz: offset ", 0) != 0) fail("error without an offset");
    return 0;
  }
  const GgufFile& f = **r;
  unsigned sum = 0;
  for (const auto& t : f.tensors())
    for (std::uint64_t i = 0; i < t.nbytes; ++i) sum += t.data[i];
  for (const auto& [key, value] : f.metadata()) {
    (void)f.get_int(key), (void)f.get_float(key), (void)f.get_bool(key);
    (void)f.get_string(key), (void)f.get_array(key);
  }

  prima::real::GgufWriter w;
  for (const auto& [key, value] : f.metadata()) w.set(key, value);
  for (const auto& t : f.tensors()) w.add_tensor(t.name, t.type, t.dims, t.data, t.nbytes);
  const auto bytes = w.bytes(f.alignment());
  if (bytes.empty()) fail("GgufWriter refused a file the reader accepted");
  auto again = prima::real::parse_gguf(bytes.data(), bytes.size(), "rewritten");
  if (!again.ok()) fail(again.status().message().c_str());
  const GgufFile& g = **again;
  if (g.alignment() != f.alignment()) fail("alignment changed");
  for (const auto& [key, value] : f.metadata()) {
    if (key == "general.alignment") continue;  // the writer records its own
    const GgufValue* v = g.find(key);
    if (!v || !same(*v, value)) fail("metadata changed in the round trip");
  }
  if (g.tensors().size() != f.tensors().size()) fail("tensor count changed");
  for (std::size_t i = 0; i < f.tensors().size(); ++i) {
    const auto& a = f.tensors()[i];
    const auto& b = g.tensors()[i];
    if (a.name != b.name || a.type != b.type || a.dims != b.dims || a.nbytes != b.nbytes ||
        std::memcmp(a.data, b.data, a.nbytes) != 0)
      fail("tensor changed in the round trip");
  }
  return static_cast<int>(sum & 0);
}
