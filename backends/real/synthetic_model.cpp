// Synthetic models of real shapes (see synthetic_model.h).
#include "backends/real/synthetic_model.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <thread>

#include "backends/real/gguf.h"
#include "backends/real/tokenizer_internal.h"
#include "kernels/cuda/synthetic_math.h"

namespace prima::real {
namespace {

namespace fs = std::filesystem;
using kernels::DType;

struct TypeName {
  const char* name;
  DType type;
};
constexpr TypeName kTypes[] = {{"bf16", DType::kBF16},
                               {"f16", DType::kF16},
                               {"q8_0", DType::kQ8_0},
                               {"q4_0", DType::kQ4_0},
                               {"q4_1", DType::kQ4_1}};

const char* type_name(DType t) {
  for (const auto& n : kTypes)
    if (n.type == t) return n.name;
  return "?";
}

// One weight tensor of the file: rows x cols values of `type`, uniform with standard
// deviation `stdev` around `mean`.
struct TensorPlan {
  std::string name;
  DType type;
  std::int64_t rows, cols;
  float stdev, mean;
};

std::vector<TensorPlan> tensor_plans(const SyntheticSpec& s) {
  const SyntheticShape& m = s.shape;
  const std::int64_t H = m.hidden, D = m.hidden / m.heads, F = m.ffn;
  const float ws = 1.0f / std::sqrt(static_cast<float>(H));
  const DType t = s.type;
  std::vector<TensorPlan> p;
  p.push_back({"token_embd.weight", t, m.vocab, H, 0.05f, 0.f});
  for (int l = 0; l < m.layers; ++l) {
    const std::string b = "blk." + std::to_string(l) + ".";
    p.push_back({b + "attn_norm.weight", DType::kF32, 1, H, 0.1f, 1.f});
    p.push_back({b + "attn_q.weight", t, m.heads * D, H, 2 * ws, 0.f});
    p.push_back({b + "attn_k.weight", t, m.kv_heads * D, H, 2 * ws, 0.f});
    p.push_back({b + "attn_v.weight", t, m.kv_heads * D, H, ws, 0.f});
    p.push_back({b + "attn_output.weight", t, H, m.heads * D, ws, 0.f});
    p.push_back({b + "ffn_norm.weight", DType::kF32, 1, H, 0.1f, 1.f});
    p.push_back({b + "ffn_gate.weight", t, F, H, ws, 0.f});
    p.push_back({b + "ffn_up.weight", t, F, H, ws, 0.f});
    p.push_back({b + "ffn_down.weight", t, H, F, 1.0f / std::sqrt(static_cast<float>(F)), 0.f});
  }
  p.push_back({"output_norm.weight", DType::kF32, 1, H, 0.1f, 1.f});
  if (!m.tied) p.push_back({"output.weight", t, m.vocab, H, ws, 0.f});
  return p;
}

GgufWriter metadata(const SyntheticSpec& s) {
  const SyntheticShape& m = s.shape;
  GgufWriter w;
  w.set("general.architecture", std::string("llama"));
  w.set("general.name", "synthetic " + m.name + " (" + type_name(s.type) + ", seed " +
                            std::to_string(s.seed) + ")");
  w.set_u32("llama.block_count", m.layers);
  w.set_u32("llama.embedding_length", m.hidden);
  w.set_u32("llama.feed_forward_length", m.ffn);
  w.set_u32("llama.attention.head_count", m.heads);
  w.set_u32("llama.attention.head_count_kv", m.kv_heads);
  w.set_u32("llama.context_length", m.context);
  w.set_f32("llama.attention.layer_norm_rms_epsilon", m.eps);
  w.set_f32("llama.rope.freq_base", m.rope_base);
  w.set_u32("llama.rope.dimension_count", m.hidden / m.heads);
  GgufArray toks{GgufType::kString, {}, {}};
  GgufArray types{GgufType::kI32, {}, {}};
  toks.strings.reserve(m.vocab);
  types.numbers.reserve(m.vocab);
  for (int b = 0; b < 256; ++b) {
    toks.strings.push_back(tok::utf8_encode(tok::byte_to_cp(static_cast<std::uint8_t>(b))));
    types.numbers.push_back(1);
  }
  toks.strings.push_back("<|endoftext|>");
  types.numbers.push_back(3);
  for (int i = 257; i < m.vocab; ++i) {
    toks.strings.push_back("<|synthetic_" + std::to_string(i) + "|>");
    types.numbers.push_back(1);
  }
  w.set("tokenizer.ggml.model", std::string("gpt2"));
  w.set("tokenizer.ggml.pre", std::string("gpt2"));
  w.set("tokenizer.ggml.tokens", toks);
  w.set("tokenizer.ggml.token_type", types);
  w.set("tokenizer.ggml.merges", GgufArray{GgufType::kString, {}, {}});
  w.set_u32("tokenizer.ggml.eos_token_id", 256);
  w.set_u32("tokenizer.ggml.bos_token_id", 256);
  w.set("tokenizer.ggml.add_bos_token", false);
  if (s.device_weights) {
    w.set("prima.synthetic.model", m.name);
    w.set("prima.synthetic.type", std::string(type_name(s.type)));
    w.set("prima.synthetic.seed", std::uint64_t{s.seed});
    w.set("prima.synthetic.weights", std::string("device"));
  }
  return w;
}

// Fills rows [r0, r1) of tensor `ti` at `dst` (the tensor's first byte).
void fill_rows(const SyntheticSpec& s, std::size_t ti, const TensorPlan& t, std::int64_t r0,
               std::int64_t r1, std::uint8_t* dst) {
  const std::size_t rb = kernels::row_bytes(t.type, t.cols);
  const float half_width = t.stdev * std::sqrt(3.0f);
  std::vector<float> row(t.cols);
  for (std::int64_t r = r0; r < r1; ++r) {
    const std::uint64_t st = cuda::synthetic_row_state(s.seed, ti, std::uint64_t(r));
    for (std::int64_t c = 0; c < t.cols; ++c)
      row[c] = cuda::synthetic_value(st, c, half_width, t.mean);
    kernels::quantize_row(t.type, row.data(), dst + r * rb, t.cols);
  }
}

}  // namespace

const std::vector<SyntheticShape>& synthetic_shapes() {
  static const std::vector<SyntheticShape> shapes = {
      {"llama-3-8b", 32, 4096, 32, 8, 14336, 128256, 8192, 500000.f, 1e-5f, false,
       "Meta Llama 3 / 3.1 8B"},
      {"llama-3-70b", 80, 8192, 64, 8, 28672, 128256, 8192, 500000.f, 1e-5f, false,
       "Meta Llama 3 / 3.1 / 3.3 70B"},
      {"llama-3.2-1b", 16, 2048, 32, 8, 8192, 128256, 8192, 500000.f, 1e-5f, true,
       "Meta Llama 3.2 1B"},
      {"mistral-7b", 32, 4096, 32, 8, 14336, 32000, 8192, 10000.f, 1e-5f, false,
       "Mistral 7B v0.1 (no sliding window)"},
      {"smollm2-135m", 30, 576, 9, 3, 1536, 49152, 8192, 100000.f, 1e-5f, true,
       "HuggingFace SmolLM2-135M"},
      {"tiny", 2, 256, 4, 2, 512, 512, 4096, 10000.f, 1e-5f, true, "a 2-layer test model"},
  };
  return shapes;
}

Result<SyntheticSpec> parse_synthetic(const std::string& text) {
  const auto colon = text.find(':');
  const std::string name = text.substr(0, colon);
  const std::string type = colon == std::string::npos ? "bf16" : text.substr(colon + 1);
  SyntheticSpec s;
  bool found = false;
  std::string names;
  for (const auto& sh : synthetic_shapes()) {
    names += (names.empty() ? "" : ", ") + sh.name;
    if (sh.name == name) {
      s.shape = sh;
      found = true;
    }
  }
  if (!found)
    return invalid_argument("--synthetic '" + text + "': unknown model '" + name +
                            "' (known: " + names + ")");
  std::string types;
  found = false;
  for (const auto& t : kTypes) {
    types += (types.empty() ? "" : ", ") + std::string(t.name);
    if (type == t.name) {
      s.type = t.type;
      found = true;
    }
  }
  if (!found)
    return invalid_argument("--synthetic '" + text + "': unknown weight type '" + type +
                            "' (known: " + types + ")");
  return s;
}

std::string synthetic_file_name(const SyntheticSpec& s) {
  return s.shape.name + "-" + type_name(s.type) + "-s" + std::to_string(s.seed) +
         (s.device_weights ? "-device" : "") + ".gguf";
}

std::uint64_t synthetic_params(const SyntheticSpec& s) {
  std::uint64_t n = 0;
  for (const auto& t : tensor_plans(s)) n += static_cast<std::uint64_t>(t.rows * t.cols);
  return n;
}

std::uint64_t synthetic_bytes(const SyntheticSpec& s) {
  std::uint64_t n = 0;
  for (const auto& t : tensor_plans(s)) n += kernels::row_bytes(t.type, t.cols) * t.rows;
  return n;
}

std::uint64_t synthetic_written_bytes(const SyntheticSpec& s) {
  std::uint64_t n = 0;
  for (const auto& t : tensor_plans(s))
    if (!s.device_weights || t.type == DType::kF32)
      n += kernels::row_bytes(t.type, t.cols) * t.rows;
  return n;
}

Result<SyntheticTensor> synthetic_tensor(const SyntheticSpec& s, const std::string& name) {
  const std::vector<TensorPlan> plans = tensor_plans(s);
  for (std::size_t i = 0; i < plans.size(); ++i)
    if (plans[i].name == name)
      return SyntheticTensor{i, plans[i].stdev * std::sqrt(3.0f), plans[i].mean};
  return not_found("synthetic " + s.shape.name + " has no tensor " + name);
}

Result<std::optional<SyntheticSpec>> device_synthetic_spec(const GgufFile& f) {
  if (!f.find("prima.synthetic.weights")) return std::optional<SyntheticSpec>();
  auto bad = [&](const std::string& key, const std::string& why) {
    return invalid_argument(f.path() + ": metadata " + key + ": " + why);
  };
  PRIMA_ASSIGN_OR_RETURN(std::string where, f.get_string("prima.synthetic.weights"));
  if (where != "device") return bad("prima.synthetic.weights", "'" + where + "', not 'device'");
  PRIMA_ASSIGN_OR_RETURN(std::string model, f.get_string("prima.synthetic.model"));
  PRIMA_ASSIGN_OR_RETURN(std::string type, f.get_string("prima.synthetic.type"));
  PRIMA_ASSIGN_OR_RETURN(std::int64_t seed, f.get_int("prima.synthetic.seed"));
  Result<SyntheticSpec> spec = parse_synthetic(model + ":" + type);
  if (!spec.ok()) return bad("prima.synthetic.model/type", spec.status().message());
  spec->seed = static_cast<std::uint64_t>(seed);
  spec->device_weights = true;
  return std::optional<SyntheticSpec>(*spec);
}

Status check_host_weights(const GgufFile& f) {
  PRIMA_ASSIGN_OR_RETURN(std::optional<SyntheticSpec> s, device_synthetic_spec(f));
  if (!s) return ok_status();
  return invalid_argument(f.path() + " holds no weight data: the synthetic " + s->shape.name +
                          "'s matrices are made on the device (--device cuda); on the CPU, "
                          "--synthetic " +
                          s->shape.name + ":" + type_name(s->type) +
                          " --device cpu writes them into the file");
}

Status write_synthetic(const SyntheticSpec& s, const std::string& path, int threads) {
  const std::vector<TensorPlan> plans = tensor_plans(s);
  GgufWriter w = metadata(s);
  for (const auto& t : plans) {
    if (t.rows == 1)
      w.add_tensor_shape(t.name, t.type, {t.cols});
    else
      w.add_tensor_shape(t.name, t.type, {t.cols, t.rows});
  }
  Result<GgufWriter::Layout> lay = w.layout();
  if (!lay.ok()) return lay.status();
  const std::uint64_t total = lay->header.size() + lay->data_bytes;

  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) return unavailable("cannot create " + path + ": " + std::strerror(errno));
  auto fail = [&](const std::string& what) {
    const std::string msg = what + " " + path + ": " + std::strerror(errno);
    ::close(fd);
    ::unlink(path.c_str());
    return unavailable(msg);
  };
  if (::ftruncate(fd, static_cast<off_t>(total)) != 0) return fail("cannot size");
  void* map = ::mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (map == MAP_FAILED) return fail("cannot map");
  auto* base = static_cast<std::uint8_t*>(map);
  std::memcpy(base, lay->header.data(), lay->header.size());
  std::uint8_t* data = base + lay->header.size();

  // Work items of about 4 MiB: (tensor, first row, end row).
  struct Item {
    std::size_t ti;
    std::int64_t r0, r1;
  };
  std::vector<Item> items;
  for (std::size_t i = 0; i < plans.size(); ++i) {
    if (s.device_weights && plans[i].type != DType::kF32) continue;  // left a hole
    const std::size_t rb = kernels::row_bytes(plans[i].type, plans[i].cols);
    const std::int64_t step = std::max<std::int64_t>(1, (std::int64_t{4} << 20) / rb);
    for (std::int64_t r = 0; r < plans[i].rows; r += step)
      items.push_back({i, r, std::min(plans[i].rows, r + step)});
  }
  const int n = threads > 0 ? threads : std::max(1u, std::thread::hardware_concurrency());
  std::atomic<std::size_t> next{0};
  auto work = [&] {
    for (std::size_t k; (k = next.fetch_add(1)) < items.size();) {
      const Item& it = items[k];
      fill_rows(s, it.ti, plans[it.ti], it.r0, it.r1, data + lay->offsets[it.ti]);
    }
  };
  std::vector<std::thread> pool;
  for (int i = 1; i < n; ++i) pool.emplace_back(work);
  work();
  for (auto& t : pool) t.join();
  const bool synced = ::msync(map, total, MS_SYNC) == 0;
  ::munmap(map, total);
  if (!synced) return fail("cannot write");
  if (::close(fd) != 0) {
    ::unlink(path.c_str());
    return unavailable("cannot write " + path + ": " + std::strerror(errno));
  }
  return ok_status();
}

std::string synthetic_cache_dir() {
  if (const char* d = std::getenv("PRIMA_SYNTHETIC_DIR"); d && *d) return d;
  if (const char* d = std::getenv("XDG_CACHE_HOME"); d && *d)
    return (fs::path(d) / "prima" / "synthetic").string();
  if (const char* d = std::getenv("HOME"); d && *d)
    return (fs::path(d) / ".cache" / "prima" / "synthetic").string();
  return "/tmp/prima-synthetic";
}

Result<std::string> ensure_synthetic(const SyntheticSpec& s, const std::string& dir,
                                     const std::function<void(const std::string&)>& note) {
  const fs::path path = fs::path(dir) / synthetic_file_name(s);
  std::error_code ec;
  if (fs::is_regular_file(path, ec)) return path.string();
  fs::create_directories(dir, ec);
  if (ec) return unavailable("--synthetic: cannot create " + dir + ": " + ec.message());
  const std::uint64_t need = synthetic_written_bytes(s) + (std::uint64_t{64} << 20);
  const fs::space_info sp = fs::space(dir, ec);
  if (!ec && sp.available < need)
    return unavailable("--synthetic: " + synthetic_file_name(s) + " needs " +
                       std::to_string(need >> 20) + " MiB in " + dir + ", which has " +
                       std::to_string(sp.available >> 20) +
                       " MiB free (PRIMA_SYNTHETIC_DIR names another folder)");
  const double bytes = static_cast<double>(synthetic_bytes(s));
  char size[32];
  if (bytes >= 1e9)
    std::snprintf(size, sizeof size, "%.2f GB", bytes / 1e9);
  else
    std::snprintf(size, sizeof size, "%.1f MB", bytes / 1e6);
  if (note)
    note("making synthetic " + s.shape.name + " (" + type_name(s.type) + ", " + size +
         (s.device_weights ? " of weights made on the device; the file holds the metadata" : "") +
         ") at " + path.string());
  const auto t0 = std::chrono::steady_clock::now();
  const std::string tmp = path.string() + ".tmp." + std::to_string(::getpid());
  if (Status st = write_synthetic(s, tmp); !st.ok()) return st;
  fs::rename(tmp, path, ec);
  if (ec) {
    fs::remove(tmp, ec);
    return unavailable("--synthetic: cannot rename " + tmp + ": " + ec.message());
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  char done[64];
  std::snprintf(done, sizeof done, "made in %.1f s", secs);
  if (note) note(done);
  return path.string();
}

}  // namespace prima::real
