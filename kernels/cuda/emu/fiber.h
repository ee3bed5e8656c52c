// User-level contexts for the CUDA threads of the CPU execution layer: Boost.Context's
// fcontext switches on stacks from a per-worker pool (mmap'd, a guard page below each), with
// AddressSanitizer told of every switch when the build is sanitized, so it follows each
// fiber's stack. Each worker thread has its own pool; a context never leaves its worker.
#pragma once

#include <boost/context/detail/fcontext.hpp>
#include <cstddef>

namespace prima::cudaemu::fiber {

using Context = boost::context::detail::fcontext_t;
using Transfer = boost::context::detail::transfer_t;
using Entry = void (*)(Transfer);

struct Stack {
  void* base = nullptr;  // the lowest usable byte (the guard page is below it)
  std::size_t size = 0;  // usable bytes
};

// A stack of the configured size (PRIMA_CUDA_EMU_STACK_KB, 64 by default) from this worker's
// pool; release() returns it. Throws std::bad_alloc when mmap fails.
Stack acquire();
void release(const Stack& s);

// A new context that runs entry(Transfer{the switcher's context, data}) on `s` when first
// entered. entry must never return: it leaves with finish().
Context make(const Stack& s, Entry entry);

// From the worker's own stack into a fiber on `s`; returns when the fiber leaves (suspend or
// finish), with the fiber's context to enter next time.
Transfer enter(Context to, void* data, const Stack& s);
// From a fiber back to the worker's stack (`to`); returns when the fiber is entered again.
Transfer suspend(Context to, void* data);
// From a fiber that has finished back to the worker's stack; never returns.
[[noreturn]] void finish(Context to, void* data);
// First thing a fiber's entry does (the sanitizer's bookkeeping of the switch in).
void started();

}  // namespace prima::cudaemu::fiber
