// aotgrad::nn: modules, layers, initialisation, optimizers and aot_module.
#pragma once

#include "aotgrad/nn/aot_module.h"
#include "aotgrad/nn/init.h"
#include "aotgrad/nn/layers.h"
#include "aotgrad/nn/module.h"
#include "aotgrad/nn/optim.h"
