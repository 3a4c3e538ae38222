// torch::data for aotgrad: datasets, transforms, samplers and data loaders with LibTorch's names
// and semantics (docs/data.md).
#pragma once

#include "aotgrad/data/dataloader.h"
#include "aotgrad/data/datasets.h"
#include "aotgrad/data/example.h"
#include "aotgrad/data/samplers.h"
#include "aotgrad/data/transforms.h"
