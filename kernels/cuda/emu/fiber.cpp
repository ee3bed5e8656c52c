// Pooled fiber stacks and the annotated context switches (fiber.h).
#include "kernels/cuda/emu/fiber.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdlib>
#include <new>
#include <vector>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#define PRIMA_EMU_ASAN 1
#endif

namespace prima::cudaemu::fiber {

namespace bc = boost::context::detail;

namespace {

std::size_t page_size() {
  static const std::size_t p = std::size_t(sysconf(_SC_PAGESIZE));
  return p;
}

std::size_t stack_bytes() {
  static const std::size_t n = [] {
    const char* e = std::getenv("PRIMA_CUDA_EMU_STACK_KB");
    const long kb = e ? std::atol(e) : 64;
    const std::size_t bytes = std::size_t(kb > 16 ? kb : 16) << 10;
    return (bytes + page_size() - 1) / page_size() * page_size();
  }();
  return n;
}

// The worker's free stacks; unmapped when the worker exits.
struct Pool {
  std::vector<Stack> free;
  ~Pool() {
    for (const Stack& s : free)
      munmap(static_cast<char*>(s.base) - page_size(), s.size + page_size());
  }
};
thread_local Pool t_pool;

#if PRIMA_EMU_ASAN
// The worker's own stack, learnt when a fiber is first entered from it.
thread_local const void* t_worker_bottom = nullptr;
thread_local std::size_t t_worker_size = 0;
#endif

}  // namespace

Stack acquire() {
  if (!t_pool.free.empty()) {
    const Stack s = t_pool.free.back();
    t_pool.free.pop_back();
    return s;
  }
  const std::size_t size = stack_bytes(), guard = page_size();
  void* p = mmap(nullptr, size + guard, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) throw std::bad_alloc();
  mprotect(p, guard, PROT_NONE);  // an overflowing fiber faults here, not in its neighbour
  return {static_cast<char*>(p) + guard, size};
}

void release(const Stack& s) {
#if PRIMA_EMU_ASAN
  // A fiber abandoned mid-kernel leaves its frames' redzones poisoned.
  __asan_unpoison_memory_region(s.base, s.size);
#endif
  t_pool.free.push_back(s);
}

Context make(const Stack& s, Entry entry) {
  return bc::make_fcontext(static_cast<char*>(s.base) + s.size, s.size, entry);
}

Transfer enter(Context to, void* data, const Stack& s) {
#if PRIMA_EMU_ASAN
  void* fake = nullptr;
  __sanitizer_start_switch_fiber(&fake, s.base, s.size);
  const Transfer t = bc::jump_fcontext(to, data);
  __sanitizer_finish_switch_fiber(fake, nullptr, nullptr);
  return t;
#else
  (void)s;
  return bc::jump_fcontext(to, data);
#endif
}

Transfer suspend(Context to, void* data) {
#if PRIMA_EMU_ASAN
  void* fake = nullptr;
  __sanitizer_start_switch_fiber(&fake, t_worker_bottom, t_worker_size);
  const Transfer t = bc::jump_fcontext(to, data);
  __sanitizer_finish_switch_fiber(fake, &t_worker_bottom, &t_worker_size);
  return t;
#else
  return bc::jump_fcontext(to, data);
#endif
}

void finish(Context to, void* data) {
#if PRIMA_EMU_ASAN
  __sanitizer_start_switch_fiber(nullptr, t_worker_bottom, t_worker_size);
#endif
  bc::jump_fcontext(to, data);
  std::abort();  // a finished fiber is never entered again
}

void started() {
#if PRIMA_EMU_ASAN
  __sanitizer_finish_switch_fiber(nullptr, &t_worker_bottom, &t_worker_size);
#endif
}

}  // namespace prima::cudaemu::fiber
