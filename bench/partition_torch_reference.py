#!/usr/bin/env python3
"""What PyTorch's AOTAutograd saves for backward on the models of bench/partition_models.h.

Runs the same three models (MLP, pre-LN transformer block, 4 blocks + final LayerNorm) through
functorch's aot_function with default_partition and min_cut_rematerialization_partition and
prints, per partitioner, the saved activations: count and MiB, excluding transposes of weights
(views of graph inputs, which take no memory of their own), plus those separately. Needs
PyTorch (1.13's functorch) and networkx; CI never runs it. The figures are quoted in
bench/partition_bench.cpp's report.

    /usr/bin/python3 bench/partition_torch_reference.py
"""
import math

import torch
import torch.nn.functional as F
from functorch.compile import (aot_function, default_partition, make_boxed_func,
                               min_cut_rematerialization_partition)

MIB = 1024.0 * 1024.0


def layer_norm(x, w, b):
    mu = x.mean(-1, keepdim=True)
    xc = x - mu
    var = (xc * xc).mean(-1, keepdim=True)
    return xc * torch.rsqrt(var + 1e-5) * w + b


def block(x, p, mask, batch=8, seq=128, d=256, heads=4):
    hd = d // heads
    h = layer_norm(x, p[0], p[1])
    qkv = F.linear(h, p[2], p[3])
    qkv = qkv.view(batch, seq, 3, heads, hd).permute(2, 0, 3, 1, 4)
    q, k, v = qkv[0], qkv[1], qkv[2]
    scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hd))
    scores = torch.where(mask, torch.full((), -1e9), scores)
    attn = scores.softmax(-1) @ v
    r = x + F.linear(attn.transpose(1, 2).reshape(batch, seq, d), p[4], p[5])
    return r + F.linear(F.gelu(F.linear(layer_norm(r, p[6], p[7]), p[8], p[9])), p[10], p[11])


def block_params(d=256, hidden=1024):
    ps = [torch.ones(d), torch.zeros(d), torch.randn(3 * d, d) / 16, torch.randn(3 * d) / 16,
          torch.randn(d, d) / 16, torch.randn(d) / 16, torch.ones(d), torch.zeros(d),
          torch.randn(hidden, d) / 16, torch.randn(hidden) / 16, torch.randn(d, hidden) / 32,
          torch.randn(d) / 32]
    return [p.requires_grad_() for p in ps]


def mlp_loss(x, target, *ps):
    h = x
    for layer in range(4):
        h = F.linear(h, ps[2 * layer], ps[2 * layer + 1])
        if layer < 3:
            h = F.gelu(h)
    return F.mse_loss(h, target)


def blocks_loss(x, target, mask, *ps):
    n = len(ps) // 12
    h = x
    for b in range(n):
        h = block(h, ps[12 * b:12 * b + 12], mask)
    if n > 1:
        h = layer_norm(h, ps[-2], ps[-1])
    return F.mse_loss(h, target)


VIEW_OPS = {torch.ops.aten.t.default, torch.ops.aten.transpose.int, torch.ops.aten.view.default,
            torch.ops.aten.permute.default}


def is_input_view(node):
    """A chain of views of a graph input (a weight's transpose): aliases the input."""
    while node.op == 'call_function' and node.target in VIEW_OPS:
        node = node.args[0]
    return node.op == 'placeholder'


def saved_activations(fn, args, partition):
    captured = {}

    def fw_compiler(gm, _):
        captured['outputs'] = [n for n in gm.graph.nodes if n.op == 'output'][0].args[0]
        return make_boxed_func(gm)

    compiled = aot_function(fn, fw_compiler, lambda gm, _: make_boxed_func(gm), partition_fn=partition)
    compiled(*args).backward()
    acts, weight_views = [], []
    for node in captured['outputs'][1:]:  # the first output is the loss
        if node.op == 'placeholder' or 'tensor_meta' not in node.meta:
            continue
        meta = node.meta['tensor_meta']
        nbytes = meta.shape.numel() * torch.empty((), dtype=meta.dtype).element_size()
        (weight_views if is_input_view(node) else acts).append(nbytes)
    return acts, weight_views


def main():
    torch.manual_seed(0)
    mlp_args = [torch.randn(64, 1024), torch.randn(64, 1024)]
    for _ in range(4):
        mlp_args += [(torch.randn(1024, 1024) / 32).requires_grad_(), torch.zeros(1024).requires_grad_()]
    mask = torch.arange(128)[None, :] > torch.arange(128)[:, None]
    block_args = [torch.randn(8, 128, 256), torch.randn(8, 128, 256), mask] + block_params()
    blocks4_args = [torch.randn(8, 128, 256), torch.randn(8, 128, 256), mask]
    for _ in range(4):
        blocks4_args += block_params()
    blocks4_args += [torch.ones(256).requires_grad_(), torch.zeros(256).requires_grad_()]
    for name, fn, args in [('mlp', mlp_loss, mlp_args), ('block', blocks_loss, block_args),
                           ('4 blocks', blocks_loss, blocks4_args)]:
        for pname, part in [('default', default_partition), ('min_cut', min_cut_rematerialization_partition)]:
            acts, views = saved_activations(fn, args, part)
            print(f'{name:9s} {pname:8s} {len(acts):3d} activations {sum(acts) / MIB:8.3f} MiB'
                  f'  (+ {len(views)} weight transposes, {sum(views) / MIB:.3f} MiB)')


if __name__ == '__main__':
    main()
