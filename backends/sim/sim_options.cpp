#include "backends/sim/sim_options.h"
