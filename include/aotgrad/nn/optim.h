// Optimizers and learning-rate schedulers (torch::optim). The declarations live in
// aotgrad/optim/; this header is kept for the code that includes it from nn/.
#pragma once

#include "aotgrad/optim/optimizer.h"
#include "aotgrad/optim/optimizers.h"
#include "aotgrad/optim/schedulers.h"
