// BlockRun (block.h): the cooperative scheduler of one block's fibers, its barrier and warp
// rendezvous, and the report of a block that can no longer proceed.
#include "kernels/cuda/emu/block.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <tuple>

namespace prima::cudaemu {

thread_local ThreadInfo* t_thread = nullptr;

namespace {

thread_local BlockRun* t_block = nullptr;

// Thrown from suspend() into a fiber that will never complete (its block faulted), so its
// frames unwind and free what they hold; caught in entry(). Not a std::exception, so no kernel
// code catches it.
struct Unwind {};

bool is_shuffle(WarpOp op) {
  return op == WarpOp::kShflIdx || op == WarpOp::kShflUp || op == WarpOp::kShflDown ||
         op == WarpOp::kShflXor;
}

std::string hex(unsigned v) {
  char b[16];
  std::snprintf(b, sizeof b, "0x%08x", v);
  return b;
}

std::string dim_text(unsigned x, unsigned y, unsigned z) {
  return "(" + std::to_string(x) + "," + std::to_string(y) + "," + std::to_string(z) + ")";
}

// "0-15, 32-47" of sorted thread numbers.
std::string ranges(const std::vector<int>& ids) {
  std::string out;
  for (std::size_t i = 0; i < ids.size();) {
    std::size_t j = i;
    while (j + 1 < ids.size() && ids[j + 1] == ids[j] + 1) ++j;
    if (!out.empty()) out += ", ";
    out += std::to_string(ids[i]);
    if (j > i) out += "-" + std::to_string(ids[j]);
    i = j + 1;
  }
  return out;
}

}  // namespace

const char* op_name(WarpOp op) {
  switch (op) {
    case WarpOp::kShflIdx:
      return "__shfl_sync";
    case WarpOp::kShflUp:
      return "__shfl_up_sync";
    case WarpOp::kShflDown:
      return "__shfl_down_sync";
    case WarpOp::kShflXor:
      return "__shfl_xor_sync";
    case WarpOp::kSyncwarp:
      return "__syncwarp";
    case WarpOp::kBallot:
      return "__ballot_sync";
    case WarpOp::kAny:
      return "__any_sync";
    case WarpOp::kAll:
      return "__all_sync";
  }
  return "?";
}

std::string site_text(const std::source_location& s) {
  std::string file = s.file_name();
#if defined(PRIMA_EMU_SOURCE_DIR)
  const std::string root = PRIMA_EMU_SOURCE_DIR "/";
  if (file.compare(0, root.size(), root) == 0) file = file.substr(root.size());
#endif
  return file + ":" + std::to_string(s.line()) + " (" + s.function_name() + ")";
}

std::uint64_t warp_collective(WarpOp op, unsigned mask, std::uint64_t value, int param, int width,
                              const std::source_location& site) {
  if (!t_block) {
    std::fprintf(stderr, "prima CUDA emulator: %s called outside a kernel at %s\n", op_name(op),
                 site_text(site).c_str());
    std::abort();
  }
  return t_block->warp(op, mask, value, param, width, site);
}

int block_barrier(int pred, const std::source_location& site) {
  if (!t_block) {
    std::fprintf(stderr, "prima CUDA emulator: __syncthreads called outside a kernel at %s\n",
                 site_text(site).c_str());
    std::abort();
  }
  return t_block->barrier(pred, site);
}

BlockRun::BlockRun(const Launch& launch, uint3 block_idx, unsigned char* dynamic_shared)
    : launch_(launch) {
  info_.idx = block_idx;
  info_.dim = launch.block;
  info_.grid = launch.grid;
  info_.dynamic_shared = dynamic_shared;
  const dim3 d = launch.block;
  const std::size_t n = std::size_t(d.x) * d.y * d.z;
  threads_.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    Thread& t = threads_[i];
    t.linear = int(i);
    t.idx =
        uint3{unsigned(i % d.x), unsigned(i / d.x % d.y), unsigned(i / (std::size_t(d.x) * d.y))};
    t.block = &info_;
  }
  warps_.resize((n + 31) / 32);
}

BlockRun::~BlockRun() = default;

void BlockRun::entry(fiber::Transfer tr) {
  fiber::started();
  auto* t = static_cast<Thread*>(tr.data);
  BlockRun* b = t_block;
  b->worker_ = tr.fctx;
  try {
    b->launch_.body();
  } catch (const Unwind&) {
  }
  t->state = State::kDone;
  fiber::finish(b->worker_, t);
}

void BlockRun::start(Thread& t) {
  t.stack = fiber::acquire();
  t.ctx = fiber::make(t.stack, &BlockRun::entry);
  t.state = State::kRunnable;
  resume(t);
}

void BlockRun::resume(Thread& t) {
  t_thread = &t;
  const fiber::Transfer r = fiber::enter(t.ctx, &t, t.stack);
  t.ctx = r.fctx;
  t_thread = nullptr;
  if (t.state == State::kDone) {
    fiber::release(t.stack);
    ++done_;
  }
}

void BlockRun::suspend(Thread& t) {
  const fiber::Transfer r = fiber::suspend(worker_, &t);
  worker_ = r.fctx;
  if (unwinding_) throw Unwind{};
}

void BlockRun::unwind_all() {
  unwinding_ = true;
  for (Thread& t : threads_)
    if (t.state != State::kUnstarted && t.state != State::kDone) resume(t);
}

BlockRun::Thread& BlockRun::current() {
  return *static_cast<Thread*>(t_thread);
}

void BlockRun::fault(Thread& t, const std::string& what) {
  if (fault_.empty()) fault_ = header() + ": " + what;
  t.state = State::kFaulted;
  suspend(t);  // entered again only to unwind
  std::abort();
}

std::string BlockRun::run() {
  BlockRun* const outer = t_block;
  t_block = this;
  while (fault_.empty()) {
    if (!runnable_.empty()) {
      Thread* t = runnable_.front();
      runnable_.pop_front();
      resume(*t);
    } else if (next_ < threads_.size()) {
      start(threads_[next_++]);
    } else {
      break;
    }
  }
  std::string report = !fault_.empty()           ? fault_
                       : done_ < threads_.size() ? deadlock_report()
                                                 : std::string();
  if (!report.empty()) unwind_all();
  t_block = outer;
  return report;
}

int BlockRun::barrier(int pred, const std::source_location& site) {
  Thread& t = current();
  t.site = site;
  t.value = pred != 0;
  t.state = State::kBarrier;
  if (++at_barrier_ < threads_.size()) {
    suspend(t);
    return int(t.result);
  }
  // Every thread has arrived (none returned: those never arrive): at one call site?
  std::uint64_t count = 0;
  for (const Thread& o : threads_) {
    if (o.site.line() != site.line() || std::strcmp(o.site.file_name(), site.file_name()) != 0) {
      fault_ = header() +
               ": __syncthreads reached at different places (a barrier in divergent code)" +
               waiting_list();
      t.state = State::kFaulted;
      suspend(t);
      std::abort();
    }
    count += o.value;
  }
  at_barrier_ = 0;
  for (Thread& o : threads_) {
    o.result = count;
    if (&o != &t) runnable_.push_back(&o);
    o.state = State::kRunnable;
  }
  return int(count);
}

std::uint64_t BlockRun::warp(WarpOp op, unsigned mask, std::uint64_t value, int param, int width,
                             const std::source_location& site) {
  Thread& t = current();
  const int lane = t.linear % 32, w = t.linear / 32;
  t.site = site;
  if (!(mask >> lane & 1u))
    fault(t, std::string(op_name(op)) + " with mask " + hex(mask) + " by thread " +
                 std::to_string(t.linear) + " (lane " + std::to_string(lane) + " of warp " +
                 std::to_string(w) + "), which the mask does not name, at " + site_text(site));
  if (is_shuffle(op) && (width < 1 || width > 32 || (width & (width - 1)) != 0))
    fault(t, std::string(op_name(op)) + " with width " + std::to_string(width) +
                 " (not a power of two from 1 to 32) at " + site_text(site));
  t.op = op;
  t.mask = mask;
  t.value = value;
  t.param = param;
  t.width = width;
  t.state = State::kWarp;
  std::vector<WarpGroup>& groups = warps_[std::size_t(w)];
  WarpGroup* g = nullptr;
  // Groups of different masks may be open at once (lanes 0-15 at a full-warp shuffle while
  // lanes 16-31 still reduce among themselves): each completes when its own mask has arrived.
  for (WarpGroup& x : groups)
    if (x.mask == mask) g = &x;
  if (g && g->op != op)
    fault(t, "lanes of warp " + std::to_string(w) + " with mask " + hex(mask) +
                 " are at different warp operations: " + op_name(g->op) + " and " + op_name(op) +
                 " (thread " + std::to_string(t.linear) + " at " + site_text(site) + ")");
  if (!g) {
    groups.push_back({mask, op, 0});
    g = &groups.back();
  }
  g->arrived |= 1u << lane;
  if (g->arrived != mask) {
    suspend(t);
    return t.result;
  }
  const WarpGroup done = *g;
  groups.erase(groups.begin() + (g - groups.data()));
  complete(w, done);
  t.state = State::kRunnable;
  return t.result;
}

void BlockRun::complete(int w, const WarpGroup& g) {
  Thread* lanes = threads_.data() + std::size_t(w) * 32;
  std::uint64_t ballot = 0;
  for (int l = 0; l < 32; ++l)
    if ((g.mask >> l & 1u) && lanes[l].value) ballot |= 1ull << l;
  for (int l = 0; l < 32; ++l) {
    if (!(g.mask >> l & 1u)) continue;
    Thread& x = lanes[l];
    const int seg = l & ~(x.width - 1), in_seg = l & (x.width - 1);
    int src = l;
    switch (g.op) {
      case WarpOp::kShflIdx:
        src = seg + (x.param & (x.width - 1));
        break;
      case WarpOp::kShflUp:
        src = x.param >= 0 && in_seg >= x.param ? l - x.param : l;
        break;
      case WarpOp::kShflDown:
        src = x.param >= 0 && in_seg + x.param < x.width ? l + x.param : l;
        break;
      case WarpOp::kShflXor:
        src = l ^ x.param;
        if (src < 0 || src > seg + x.width - 1) src = l;
        break;
      default:
        break;
    }
    if (is_shuffle(g.op)) {
      if (!(g.mask >> src & 1u))
        fault(current(), std::string(op_name(g.op)) + " with mask " + hex(g.mask) + ": thread " +
                             std::to_string(x.linear) + " reads lane " + std::to_string(src) +
                             ", which the mask does not name (its value is undefined), at " +
                             site_text(x.site));
      x.result = lanes[src].value;
    } else if (g.op == WarpOp::kBallot) {
      x.result = ballot;
    } else if (g.op == WarpOp::kAny) {
      x.result = ballot != 0;
    } else if (g.op == WarpOp::kAll) {
      x.result = ballot == g.mask;
    }
    if (&x != &current()) {
      x.state = State::kRunnable;
      runnable_.push_back(&x);
    }
  }
}

std::string BlockRun::header() const {
  const uint3 b = info_.idx;
  const dim3 g = info_.grid, d = info_.dim;
  return std::string("kernel ") + launch_.name + ", block " + dim_text(b.x, b.y, b.z) +
         " of grid " + dim_text(g.x, g.y, g.z) + ", " + dim_text(d.x, d.y, d.z) + " threads";
}

std::string BlockRun::deadlock_report() const {
  return header() + ": deadlock, no thread can proceed" + waiting_list();
}

std::string BlockRun::waiting_list() const {
  // Groups of waiting threads in the order of their first thread, then the returned ones.
  using Key = std::tuple<int, int, unsigned, std::string>;
  std::map<Key, std::vector<int>> waiting;
  std::vector<Key> order;
  std::vector<int> returned, unstarted;
  for (const Thread& t : threads_) {
    if (t.state == State::kDone) {
      returned.push_back(t.linear);
      continue;
    }
    if (t.state == State::kUnstarted) {
      unstarted.push_back(t.linear);
      continue;
    }
    const bool warp = t.state == State::kWarp;
    const Key k{int(t.state), warp ? int(t.op) : -1, warp ? t.mask : 0u, site_text(t.site)};
    auto& v = waiting[k];
    if (v.empty()) order.push_back(k);
    v.push_back(t.linear);
  }
  std::string out;
  for (const Key& k : order) {
    const auto& [state, op, mask, site] = k;
    out += "\n  threads " + ranges(waiting[k]) + " wait at ";
    if (State(state) == State::kWarp)
      out += std::string(op_name(WarpOp(op))) + " (mask " + hex(mask) + ")";
    else if (State(state) == State::kBarrier)
      out += "__syncthreads";
    else
      out += "a fault";
    out += " at " + site;
  }
  if (!returned.empty()) out += "\n  threads " + ranges(returned) + " have returned";
  if (!unstarted.empty()) out += "\n  threads " + ranges(unstarted) + " never started";
  return out;
}

}  // namespace prima::cudaemu
