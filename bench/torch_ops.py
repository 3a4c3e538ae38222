#!/usr/bin/python3
"""PyTorch 1.13 eager time of each op the reference models run, at the models' shapes.

usage: /usr/bin/python3 bench/torch_ops.py [--out FILE.json] [--samples N]
Writes {"<op>": {"ms_min": .., "ms_median": ..}, ...}: milliseconds per call, min and median over
N samples, each sample timing enough back-to-back calls to fill about 2 ms. build/ops_bench runs
the same ops under the same names and prints its times as ratios to these (TORCH_OPS_JSON).
Run it through bench/ops_peer.sh, which picks PyTorch's fastest CPU setup (as run.sh does).
Threads: BENCH_THREADS (default 2). Needs Debian's python3-torch; CI never runs it.
"""
import argparse, json, os, statistics, time, warnings
warnings.filterwarnings("ignore")
import torch
import torch.nn.functional as F

torch.set_num_threads(int(os.environ.get("BENCH_THREADS", "2")))
aten = torch.ops.aten


def cases():
    """(name, callable) in the order of bench/ops_bench.cpp; shapes of torch_models.py."""
    torch.manual_seed(0)
    r = torch.randn
    # MLP: 4 x Linear(1024, 1024), batch 64.
    x, w, b, g = r(64, 1024), r(1024, 1024), r(1024), r(64, 1024)
    yield "mlp.linear", lambda: F.linear(x, w, b)
    yield "mlp.mm_grad_input", lambda: torch.mm(g, w)
    yield "mlp.mm_grad_weight", lambda: torch.mm(g.t(), x)
    yield "mlp.sum_bias_grad", lambda: g.sum(0)
    yield "mlp.gelu", lambda: F.gelu(x)
    yield "mlp.gelu_backward", lambda: aten.gelu_backward(g, x)
    yield "mlp.mse_loss", lambda: F.mse_loss(x, g)
    one = torch.ones(())
    yield "mlp.mse_loss_backward", lambda: aten.mse_loss_backward(one, x, g, 1)
    # Transformer block: tokens 8 x 128, d 256, 4 heads of 64, MLP 1024.
    x3, lw, lb = r(8, 128, 256), r(256), r(256)
    _, mean, rstd = aten.native_layer_norm(x3, [256], lw, lb, 1e-5)
    g3 = r(8, 128, 256)
    yield "block.layer_norm", lambda: aten.native_layer_norm(x3, [256], lw, lb, 1e-5)
    yield "block.layer_norm_backward", lambda: aten.native_layer_norm_backward(
        g3, x3, [256], mean, rstd, lw, lb, [True, True, True])
    for name, n_in, n_out in (("qkv", 256, 768), ("proj", 256, 256), ("fc1", 256, 1024),
                              ("fc2", 1024, 256)):
        xi, wi, bi, gi = r(1024, n_in), r(n_out, n_in), r(n_out), r(1024, n_out)
        yield f"block.linear_{name}", lambda xi=xi, wi=wi, bi=bi: F.linear(xi, wi, bi)
        yield f"block.mm_grad_input_{name}", lambda gi=gi, wi=wi: torch.mm(gi, wi)
        yield f"block.mm_grad_weight_{name}", lambda gi=gi, xi=xi: torch.mm(gi.t(), xi)
    gq = r(1024, 768)
    yield "block.sum_bias_grad", lambda: gq.sum(0)
    qkv = r(8, 128, 768)
    q = qkv.split(256, 2)[0].view(8, 128, 4, 64).transpose(1, 2)
    yield "block.heads_copy", lambda: q.contiguous()
    yield "block.heads_t_copy", lambda: q.transpose(-2, -1).contiguous()
    qc, kc = r(32, 128, 64), r(32, 64, 128)
    yield "block.bmm_qk", lambda: torch.bmm(qc, kc)
    att, mask = r(8, 4, 128, 128), torch.ones(128, 128, dtype=torch.bool).triu(1)
    yield "block.mul_scale", lambda: att * 0.125
    yield "block.masked_fill", lambda: att.masked_fill(mask, float("-inf"))
    p = torch.softmax(att.masked_fill(mask, float("-inf")), -1)
    ga = r(8, 4, 128, 128)
    yield "block.softmax", lambda: torch.softmax(att, -1)
    yield "block.softmax_backward", lambda: aten._softmax_backward_data(ga, p, -1, torch.float32)
    pc, vc = r(32, 128, 128), r(32, 128, 64)
    yield "block.bmm_av", lambda: torch.bmm(pc, vc)
    y = r(8, 4, 128, 64)
    yield "block.merge_heads_copy", lambda: y.transpose(1, 2).contiguous()
    yield "block.add_residual", lambda: x3 + g3
    h, gh = r(1024, 1024), r(1024, 1024)
    yield "block.gelu", lambda: F.gelu(h)
    yield "block.gelu_backward", lambda: aten.gelu_backward(gh, h)
    # Copies and reductions of issues 11.3 and 11.4 beyond the models.
    yield "copy.transpose_1024", lambda: w.t().contiguous()
    yield "copy.contiguous_1024", lambda: w.clone()
    yield "reduce.sum_rows_1024", lambda: h.sum(-1)
    yield "reduce.sum_cols_1024", lambda: h.sum(0)
    yield "reduce.sum_all_1024", lambda: h.sum()
    yield "reduce.amax_rows_1024", lambda: h.amax(-1)
    yield "reduce.var_rows_1024", lambda: h.var(-1)
    yield "nn.log_softmax_1024", lambda: torch.log_softmax(h, -1)
    tgt = torch.randint(0, 1024, (1024,))
    yield "nn.cross_entropy_1024", lambda: F.cross_entropy(h, tgt)


def time_ms(fn, samples):
    fn()
    t0 = time.perf_counter(); fn(); once = time.perf_counter() - t0
    inner = max(1, int(2e-3 / max(once, 1e-7)))
    times = []
    for _ in range(samples):
        t0 = time.perf_counter()
        for _ in range(inner):
            fn()
        times.append((time.perf_counter() - t0) * 1e3 / inner)
    return min(times), statistics.median(times)


ap = argparse.ArgumentParser()
ap.add_argument("--out", default=os.path.join(os.environ.get("TMPDIR", "/tmp"), "torch_ops.json"))
ap.add_argument("--samples", type=int, default=15)
args = ap.parse_args()
result = {}
with torch.no_grad():
    for name, fn in cases():
        lo, med = time_ms(fn, args.samples)
        result[name] = dict(ms_min=lo, ms_median=med)
json.dump(result, open(args.out, "w"), indent=1)
print(f"PyTorch op times ({len(result)} ops): {args.out}")
