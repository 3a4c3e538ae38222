// aotgrad::nn: modules and their holders and options, layers, losses, nn::functional,
// initialisation, optimizers and aot_module.
#pragma once

#include "aotgrad/nn/aot_module.h"
#include "aotgrad/nn/conv_layers.h"
#include "aotgrad/nn/functional.h"
#include "aotgrad/nn/holder.h"
#include "aotgrad/nn/init.h"
#include "aotgrad/nn/layers.h"
#include "aotgrad/nn/loss.h"
#include "aotgrad/nn/module.h"
#include "aotgrad/nn/optim.h"
#include "aotgrad/nn/options.h"
#include "aotgrad/nn/ordered_dict.h"
