#!/usr/bin/env bash
# Records the whole-model fixtures of tests/torch/torch_model_test.cpp: raw make_fx training steps
# (in-place ops, buffer updates) of small configurations of real models, with PyTorch's outputs,
# parameter gradients and updated buffers. Needs PyTorch 1.13 and torchvision (Debian
# python3-torch, python3-torchvision); the tests do not. docs/torch_oracle.md.
set -euo pipefail
cd "$(dirname "$0")/../../.."
out=tests/data/torch_models
export_graph() { /usr/bin/python3 tools/export_torch_graph.py --out "$out" "$@"; }
mnv3='{"width_mult": 0.25, "num_classes": 10}'
# Train-mode batch norm needs enough values per channel to be well conditioned (at 1x1 maps with
# a batch of 2 it is not, in PyTorch either): 8 x 64 x 64 leaves 32 per channel at the end.
export_graph --module torchvision.models.mobilenet_v3_small --kwargs "$mnv3" --input 8,3,64,64 --name mobilenet_v3_small_train
export_graph --module torchvision.models.mobilenet_v3_small --kwargs "$mnv3" --input 2,3,32,32 --eval --name mobilenet_v3_small_eval
export_graph --module torch.nn.LSTM --kwargs '{"input_size": 8, "hidden_size": 16, "num_layers": 2, "batch_first": true}' --input 2,5,8 --name lstm_train
export_graph --module torch.nn.GRU --kwargs '{"input_size": 8, "hidden_size": 12}' --input 5,2,8 --name gru_train
export_graph --module torch.nn.TransformerEncoderLayer --kwargs '{"d_model": 16, "nhead": 2, "dim_feedforward": 32, "batch_first": true}' --input 2,5,16 --name transformer_encoder_layer_train
