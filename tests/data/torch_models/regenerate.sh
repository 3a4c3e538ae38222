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
lstm='{"input_size": 8, "hidden_size": 16, "num_layers": 2, "batch_first": true}'
export_graph --module torch.nn.LSTM --kwargs "$lstm" --input 2,5,8 --name lstm_train
export_graph --module torch.nn.LSTM --kwargs "$lstm" --input 2,5,8 --eval --name lstm_eval
export_graph --module torch.nn.GRU --kwargs '{"input_size": 8, "hidden_size": 12}' --input 5,2,8 --name gru_train
tel='{"d_model": 16, "nhead": 2, "dim_feedforward": 32, "batch_first": true}'
export_graph --module torch.nn.TransformerEncoderLayer --kwargs "$tel" --input 2,5,16 --name transformer_encoder_layer_train
export_graph --module torch.nn.TransformerEncoderLayer --kwargs "$tel" --input 2,5,16 --eval --name transformer_encoder_layer_eval
# Models whose torchvision builders take no size arguments come in small configurations from
# small_models.py: swin_t's blocks (shifted windows, relative position bias through index.Tensor)
# and lraspp_mobilenet_v3_large (bilinear upsampling), both at a fraction of their width. lraspp
# is recorded in eval mode: in train mode its batch norms over 4x4 maps make the gradients
# float32 noise in PyTorch too (its f32 and f64 gradients differ as much as ours and its f32 do).
export PYTHONPATH="$out${PYTHONPATH:+:$PYTHONPATH}"
export_graph --module small_models.swin_small --input 2,3,32,32 --name swin_small_train
export_graph --module small_models.lraspp_small --input 2,3,64,64 --eval --name lraspp_small_eval
# The rest of issue 18's list, as small configurations of the same torchvision modules
# (small_models.py), train and eval. Train mode's batch norms still see few values per channel;
# each manifest's `noise` (docs/torch_oracle.md) holds the float32 noise floor the check allows.
export_graph --module small_models.resnet18_small --input 4,3,64,64 --name resnet18_small_train
export_graph --module small_models.resnet18_small --input 2,3,32,32 --eval --name resnet18_small_eval
for m in efficientnet_b0_small densenet121_small; do
  export_graph --module small_models.$m --input 4,3,32,32 --name ${m}_train
  export_graph --module small_models.$m --input 2,3,32,32 --eval --name ${m}_eval
done
for m in convnext_tiny_small vit_small; do
  export_graph --module small_models.$m --input 2,3,32,32 --name ${m}_train
  export_graph --module small_models.$m --input 2,3,32,32 --eval --name ${m}_eval
done
# Dropout and stochastic depth on (dropout/, not compared with PyTorch's values, whose random
# streams are not ours: TorchModelDropout checks the draws themselves).
# Stochastic depth at 0.9 for the last block (torchvision scales it down for earlier ones), so a
# batch of 2 drops some branch for most seeds.
export_graph --out "$out/dropout" --module small_models.convnext_tiny_small --kwargs '{"stochastic_depth_prob": 0.9}' --input 2,3,32,32 --dropout --name convnext_tiny_small_dropout_train
export_graph --out "$out/dropout" --module small_models.vit_small --input 2,3,32,32 --dropout --name vit_small_dropout_train
