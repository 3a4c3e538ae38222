// aotgrad: ahead-of-time autograd for C++. Include this header to get the whole public API.
#pragma once

#include "aotgrad/activation.h"
#include "aotgrad/autograd.h"
#include "aotgrad/conv.h"
#include "aotgrad/dtype.h"
#include "aotgrad/indexing.h"
#include "aotgrad/inplace_view.h"
#include "aotgrad/math.h"
#include "aotgrad/ops.h"
#include "aotgrad/random.h"
#include "aotgrad/scalar.h"
#include "aotgrad/aot.h"
#include "aotgrad/memory.h"
#include "aotgrad/memory_budget.h"
#include "aotgrad/nn.h"
#include "aotgrad/npy.h"
#include "aotgrad/tensor.h"
