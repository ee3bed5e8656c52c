// thread_for: the CLI's ParallelFor (engine/core/parallel.h) on `threads` threads (the calling
// thread and threads - 1 more, started per call), taking the items in order from a shared
// counter. The engine starts no threads; commands that offer --threads pass this.
#pragma once

#include "engine/core/parallel.h"

namespace prima::cli {

ParallelFor thread_for(int threads);

}  // namespace prima::cli
