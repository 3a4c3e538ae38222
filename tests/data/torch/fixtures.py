"""The PyTorch-oracle fixture list, read by tools/export_torch_graph.py (which records each entry
into a directory next to this file). Each entry: name, fn (PyTorch function of the inputs),
inputs, optional input_names, grad (record input gradients: the C++ test derives the backward
itself), joint (record PyTorch's own joint graph instead, so its backward ops load and run),
rtol / atol (per-fixture tolerances; see docs/torch_oracle.md), no_grad_inputs, tangents.

Shapes are tiny on purpose: all fixtures together stay well under a few MB.
"""
import torch
import torch.nn.functional as F

F32 = dict(rtol=1e-5, atol=1e-6)
F64 = dict(rtol=1e-10, atol=1e-12)
MODEL = dict(rtol=1e-4, atol=1e-5)


def r(*shape, dtype=torch.float32, positive=False):
    t = torch.randn(*shape, dtype=dtype)
    return t.abs() + 0.5 if positive else t


def op(name, fn, inputs, grad=True, tol=F32, **kw):
    d = dict(name=name, fn=fn, inputs=inputs, grad=grad, **tol)
    d.update(kw)
    return d


def pointwise():
    d = torch.float64
    return [
        op("add_broadcast", lambda x, y: torch.add(x, y, alpha=2), [r(3, 1, 4), r(2, 1)]),
        op("add_scalar_f64", lambda x: x + 1.5, [r(2, 3, dtype=d)], tol=F64),
        op("sub_transposed", lambda x, y: x.t() - y, [r(4, 3), r(3, 4)]),
        op("mul_size1_dims", lambda x, y: x * y, [r(1, 3, 1), r(2, 1, 5)]),
        op("mul_scalar_neg", lambda x: x * -0.25, [r(5)]),
        op("div_f64", lambda x, y: x / y, [r(3, 4, dtype=d), r(4, dtype=d, positive=True)], tol=F64),
        op("neg_exp_log", lambda x: torch.log(torch.exp(-x) + x.abs()), [r(2, 3)]),
        op("sqrt_rsqrt", lambda x: torch.sqrt(x) + torch.rsqrt(x), [r(3, 4, positive=True)]),
        op("sin_cos_transposed", lambda x: torch.sin(x.t()) * torch.cos(x.t()), [r(3, 5)]),
        op("tanh_sigmoid", lambda x: torch.tanh(x) + torch.sigmoid(x), [r(4, 4, dtype=d)], tol=F64,
           tangents=[r(4, 4, dtype=d)]),
        op("relu", lambda x: F.relu(x), [r(3, 7)]),
        op("gelu_none", lambda x: F.gelu(x), [r(4, 6)]),
        op("gelu_tanh", lambda x: F.gelu(x, approximate="tanh"), [r(4, 6, dtype=d)], tol=F64),
        op("pow_scalar", lambda x: x.pow(3) + x.pow(0.5), [r(3, 3, positive=True)]),
        op("abs_sign", lambda x: x.abs() * 2 + x.sign(), [r(3, 4)]),
        op("clamp_both", lambda x: torch.clamp(x, -0.5, 0.7), [r(4, 5)]),
        op("clamp_min_only", lambda x: torch.clamp(x, min=0.1), [r(6, dtype=d)], tol=F64),
        op("where_broadcast", lambda c, x, y: torch.where(c, x, y),
           [torch.rand(3, 4) > 0.5, r(3, 4), r(4)], no_grad_inputs=[0]),
        op("compare", lambda x, y: (x > y, x < 0.0, x == y), [r(3, 4), r(4)], grad=False),
        op("masked_fill_scalar", lambda x, m: x.masked_fill(m, -1e9),
           [r(2, 3, 3), torch.ones(3, 3).triu(1).bool()]),
        op("to_copy_f64", lambda x: (x.to(torch.float64) * 2).sum(), [r(3, 4)]),
        op("empty_dim", lambda x, y: (x + y) * 2, [r(0, 3), r(3)]),
        # f16 / bf16 storage, computed in f32: PyTorch rounds each result to the storage type too.
        op("to_copy_f16", lambda x: (x.to(torch.float16) * 3).to(torch.float32), [r(3, 4)],
           tol=dict(rtol=1e-3, atol=1e-3)),
        op("to_copy_bf16", lambda x: (x.to(torch.bfloat16) + 1).to(torch.float32), [r(3, 4)],
           tol=dict(rtol=1e-2, atol=1e-2)),
        op("f16_output", lambda x: x.to(torch.float16), [r(2, 5)], grad=False, tol=dict(rtol=0, atol=0)),
    ]


def reductions():
    d = torch.float64
    return [
        op("sum_all", lambda x: x.sum(), [r(3, 4)]),
        op("sum_dims_keepdim", lambda x: x.sum(dim=(-1, 0), keepdim=True), [r(2, 3, 4)]),
        op("sum_empty", lambda x: x.sum(0), [r(0, 3)]),
        op("mean_dim_neg", lambda x: x.mean(dim=-2), [r(2, 5, 3)]),
        op("mean_all_f64", lambda x: x.mean(), [r(4, 3, dtype=d)], tol=F64),
        op("amax_dim", lambda x: torch.amax(x, dim=1), [r(3, 5)]),
        op("max_dim", lambda x: torch.max(x, dim=-1), [r(3, 5)]),
        op("min_dim_keepdim", lambda x: torch.min(x, dim=0, keepdim=True), [r(4, 2)]),
        op("argmax", lambda x: torch.argmax(x, dim=1), [r(3, 6)], grad=False),
        op("var_std", lambda x: x.var(dim=1) + x.std(dim=0).sum(), [r(4, 5, dtype=d)], tol=F64),
        op("var_unbiased_false", lambda x: x.var(dim=-1, unbiased=False, keepdim=True), [r(3, 6)]),
        op("logsumexp", lambda x: torch.logsumexp(x, dim=-1), [r(3, 5)]),
        op("cumsum_neg_dim", lambda x: torch.cumsum(x, dim=-1), [r(2, 3, 4)]),
        op("softmax", lambda x: torch.softmax(x, dim=-1), [r(3, 5)]),
        op("log_softmax_dim0", lambda x: torch.log_softmax(x, dim=0), [r(4, 3, dtype=d)], tol=F64),
        op("mse_loss", lambda x, y: F.mse_loss(x, y), [r(3, 4), r(3, 4)]),
        op("cross_entropy", lambda x, t: F.cross_entropy(x, t), [r(5, 7), torch.randint(0, 7, (5,))]),
    ]


def linalg_and_views():
    return [
        op("mm", lambda a, b: a @ b, [r(3, 4), r(4, 5)]),
        op("mm_transposed", lambda a, b: a.t() @ b.t(), [r(4, 3), r(5, 4)]),
        op("bmm", lambda a, b: torch.bmm(a, b), [r(2, 3, 4), r(2, 4, 5)]),
        op("bmm_transposed", lambda a, b: torch.bmm(a, b.transpose(1, 2)), [r(2, 3, 4), r(2, 5, 4)]),
        op("linear_addmm", lambda x, w, b: F.linear(x, w, b), [r(3, 4), r(5, 4), r(5)]),
        op("linear_3d", lambda x, w, b: F.linear(x, w, b), [r(2, 3, 4), r(5, 4), r(5)]),
        op("view_permute", lambda x: x.view(2, 3, 4).permute(1, 2, 0).reshape(3, 8) * 2, [r(6, 4)]),
        op("unsqueeze_squeeze_expand", lambda x: x.unsqueeze(1).expand(3, 4, 2).squeeze(-1).sum(1) +
           x.unsqueeze(0).squeeze(0).sum(), [r(3, 2)]),
        op("slice_select", lambda x: x[:, 1:3] * 2 + x[1].sum(), [r(4, 5)]),
        op("split_chunk", lambda x: tuple(a * (i + 1) for i, a in enumerate(torch.split(x, 2, dim=-1))),
           [r(3, 5)]),
        op("split_with_sizes", lambda x: tuple(torch.split(x, [1, 3], dim=0)), [r(4, 2)]),
        op("chunk", lambda x: torch.chunk(x, 3, dim=1)[2] * 3, [r(2, 6)]),
        op("unbind", lambda x: tuple(a * 2 for a in torch.unbind(x, dim=1)), [r(2, 3)]),
        op("cat_neg_dim", lambda a, b: torch.cat([a, b, a], dim=-1), [r(2, 3), r(2, 1)]),
        op("cat_empty", lambda a, b: torch.cat([a, b]), [r(0, 3), r(2, 3)]),
        op("stack", lambda a, b: torch.stack([a, b], dim=1), [r(2, 3), r(2, 3)]),
        op("tril_triu", lambda x: torch.tril(x) + torch.triu(x, 1) * 2, [r(4, 4)]),
    ]


def indexing():
    return [
        op("index_select", lambda x, i: torch.index_select(x, 1, i), [r(3, 5), torch.tensor([4, 0, 4])]),
        op("gather", lambda x, i: torch.gather(x, 1, i), [r(3, 4), torch.randint(0, 4, (3, 2))]),
        op("scatter_add", lambda x, i, s: x.scatter_add(0, i, s),
           [r(3, 4), torch.randint(0, 3, (2, 4)), r(2, 4)]),
        op("index_add", lambda x, i, s: x.index_add(1, i, s, alpha=2),
           [r(3, 4), torch.tensor([0, 3, 0]), r(3, 3)]),
        op("embedding", lambda w, i: F.embedding(i, w) * 2, [r(10, 4), torch.tensor([[1, 3], [3, 9]])],
           input_names=["weight", "idx"]),
    ]


def nn_ops():
    return [
        op("layer_norm", lambda x, w, b: F.layer_norm(x, (4,), w, b), [r(2, 3, 4), r(4), r(4)], tol=MODEL),
        op("layer_norm_no_affine", lambda x: F.layer_norm(x, (3, 4)), [r(2, 3, 4)], tol=MODEL),
        op("conv2d", lambda x, w, b: F.conv2d(x, w, b, stride=2, padding=1), [r(2, 3, 7, 7), r(4, 3, 3, 3), r(4)],
           tol=MODEL),
        op("conv2d_groups_nobias", lambda x, w: F.conv2d(x, w, groups=2, dilation=2), [r(1, 4, 6, 6), r(2, 2, 3, 3)],
           tol=MODEL),
        op("batch_norm_eval", lambda x, w, b, rm, rv: F.batch_norm(x, rm, rv, w, b, training=False),
           [r(4, 3, 2, 2), r(3), r(3), r(3), r(3, positive=True)], no_grad_inputs=[3, 4], tol=MODEL),
        op("batch_norm_train", lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True),
           [r(4, 3, 2, 2), r(3), r(3)], tol=MODEL),
        op("max_pool2d", lambda x: F.max_pool2d(x, 2), [r(1, 2, 4, 6)]),
        op("max_pool2d_pad_stride", lambda x: F.max_pool2d(x, 3, stride=2, padding=1), [r(2, 1, 5, 5)]),
        op("adaptive_avg_pool2d", lambda x: F.adaptive_avg_pool2d(x, (1, 1)), [r(2, 3, 4, 4)]),
        op("adaptive_avg_pool2d_uneven", lambda x: F.adaptive_avg_pool2d(x, (2, 3)), [r(1, 2, 5, 7)]),
        op("dropout_eval", lambda x: F.dropout(x, 0.5, training=False) * 2, [r(3, 4)]),
        # p = 0 in training draws random numbers but keeps everything: streams need not agree.
        op("native_dropout_p0", lambda x: torch.native_dropout(x, 0.0, True)[0] * 2, [r(3, 4)]),
    ]


def backward_graphs():
    """PyTorch's own joint graphs: the backward ops load and run."""
    j = dict(joint=True)
    return [
        op("bw_layer_norm", lambda x, w, b: F.layer_norm(x, (4,), w, b), [r(2, 3, 4), r(4), r(4)], tol=MODEL, **j),
        op("bw_conv2d", lambda x, w, b: F.conv2d(x, w, b, padding=1), [r(2, 3, 5, 5), r(4, 3, 3, 3), r(4)],
           tol=MODEL, **j),
        op("bw_conv2d_nobias", lambda x, w: F.conv2d(x, w, stride=2), [r(1, 2, 5, 5), r(3, 2, 3, 3)], tol=MODEL, **j),
        op("bw_softmax", lambda x: torch.softmax(x, -1), [r(3, 5)], **j),
        op("bw_log_softmax_ce", lambda x, t: F.cross_entropy(x, t), [r(4, 6), torch.randint(0, 6, (4,))], **j),
        op("bw_relu", lambda x: F.relu(x) * 2, [r(3, 4)], **j),
        op("bw_embedding", lambda w, i: F.embedding(i, w), [r(6, 3), torch.tensor([[0, 2], [2, 5]])], **j),
        op("bw_batch_norm_train", lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True),
           [r(4, 3, 2, 2), r(3), r(3)], tol=MODEL, **j),
        op("bw_batch_norm_eval", lambda x, w, b, rm, rv: F.batch_norm(x, rm, rv, w, b, training=False),
           [r(4, 3, 2, 2), r(3), r(3), r(3), r(3, positive=True)], no_grad_inputs=[3, 4], tol=MODEL, **j),
        op("bw_gelu", lambda x: F.gelu(x), [r(3, 4)], **j),
        op("bw_gelu_tanh", lambda x: F.gelu(x, approximate="tanh"), [r(3, 4)], **j),
        op("bw_tanh_sigmoid", lambda x: torch.tanh(x) * torch.sigmoid(x), [r(3, 4)], **j),
        op("bw_max_pool_adaptive", lambda x: F.adaptive_avg_pool2d(F.max_pool2d(x, 2), (1, 1)), [r(1, 2, 4, 4)],
           **j),
        op("bw_mse", lambda x, y: F.mse_loss(x, y), [r(3, 4), r(3, 4)], no_grad_inputs=[1], **j),
        op("bw_native_dropout_p0", lambda x: torch.native_dropout(x, 0.0, True)[0].tanh(), [r(3, 4)], **j),
        op("bw_slice_select", lambda x: x[:, 1:3].sum() + x[1].sum(), [r(4, 5)], **j),
    ]


# ---- whole models ----

def mlp(x, w1, b1, w2, b2, w3, b3, y):
    h = F.gelu(F.linear(x, w1, b1))
    h = torch.tanh(F.linear(h, w2, b2))
    return F.mse_loss(F.linear(h, w3, b3), y)


def attention(x, wqkv, bqkv, wo, bo, heads):
    b, t, c = x.shape
    q, k, v = F.linear(x, wqkv, bqkv).split(c, dim=-1)
    q = q.view(b, t, heads, c // heads).transpose(1, 2).reshape(b * heads, t, c // heads)
    k = k.view(b, t, heads, c // heads).transpose(1, 2).reshape(b * heads, t, c // heads)
    v = v.view(b, t, heads, c // heads).transpose(1, 2).reshape(b * heads, t, c // heads)
    att = torch.bmm(q, k.transpose(1, 2)) / (c // heads) ** 0.5
    mask = torch.ones(t, t).triu(1).bool()
    att = torch.softmax(att.masked_fill(mask, float("-inf")), dim=-1)
    y = torch.bmm(att, v).view(b, heads, t, c // heads).transpose(1, 2).reshape(b, t, c)
    return F.linear(y, wo, bo)


def block(x, p, heads=2, approximate="none"):
    ln1w, ln1b, wqkv, bqkv, wo, bo, ln2w, ln2b, w1, b1, w2, b2 = p
    c = x.shape[-1]
    x = x + attention(F.layer_norm(x, (c,), ln1w, ln1b), wqkv, bqkv, wo, bo, heads)
    h = F.gelu(F.linear(F.layer_norm(x, (c,), ln2w, ln2b), w1, b1), approximate=approximate)
    return x + F.dropout(F.linear(h, w2, b2), 0.1, training=False)


def block_params(c, hidden):
    return [1 + 0.1 * r(c), 0.1 * r(c), 0.3 * r(3 * c, c), 0.1 * r(3 * c), 0.3 * r(c, c), 0.1 * r(c),
            1 + 0.1 * r(c), 0.1 * r(c), 0.3 * r(hidden, c), 0.1 * r(hidden), 0.3 * r(c, hidden), 0.1 * r(c)]


BLOCK_NAMES = ["ln1.weight", "ln1.bias", "attn.qkv.weight", "attn.qkv.bias", "attn.proj.weight",
               "attn.proj.bias", "ln2.weight", "ln2.bias", "mlp.fc1.weight", "mlp.fc1.bias",
               "mlp.fc2.weight", "mlp.fc2.bias"]


def gpt2(tokens, targets, wte, wpe, *rest):
    t = tokens.shape[1]
    x = F.embedding(tokens, wte) + F.embedding(torch.arange(0, t, 1), wpe)  # arange.default: not ours
    x = block(x, rest[:12], approximate="tanh")
    x = block(x, rest[12:24])
    x = F.layer_norm(x, (x.shape[-1],), rest[24], rest[25])
    logits = F.linear(x, wte)
    return F.cross_entropy(logits.view(-1, logits.shape[-1]), targets.view(-1))


def basic_block(train):
    def fn(x, w1, g1, b1, rm1, rv1, w2, g2, b2, rm2, rv2):
        def bn(h, g, b, rm, rv):
            if not train:
                return F.batch_norm(h, rm, rv, g, b, training=False), rm, rv
            rm, rv = rm.clone(), rv.clone()  # PyTorch updates them in place; outputs here
            return F.batch_norm(h, rm, rv, g, b, training=True, momentum=0.1), rm, rv
        h, rm1, rv1 = bn(F.conv2d(x, w1, padding=1), g1, b1, rm1, rv1)
        h, rm2, rv2 = bn(F.conv2d(F.relu(h), w2, padding=1), g2, b2, rm2, rv2)
        out = F.relu(h + x)
        pooled = F.adaptive_avg_pool2d(F.max_pool2d(out, 2), (1, 1)).flatten(1)
        return (pooled.sum(),) + ((rm1, rv1, rm2, rv2) if train else ())
    return fn


# aten._reshape_alias (reshape that is a view, and the backward of view) is not in our table yet:
# these fixtures record PyTorch's decomposition of it into view.
RESHAPE = dict(decompose=["_reshape_alias"])


def models():
    c, hidden, vocab, t = 8, 16, 11, 5
    mlp_in = [r(4, 6), 0.4 * r(10, 6), 0.1 * r(10), 0.4 * r(10, 10), 0.1 * r(10), 0.4 * r(3, 10), 0.1 * r(3),
              r(4, 3)]
    mlp_names = ["x", "fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias", "fc3.weight", "fc3.bias", "y"]
    blk = [r(2, t, c)] + block_params(c, hidden)
    gpt = [torch.randint(0, vocab, (2, t)), torch.randint(0, vocab, (2, t)), 0.3 * r(vocab, c), 0.1 * r(t, c)]
    gpt += block_params(c, hidden) + block_params(c, hidden) + [1 + 0.1 * r(c), 0.1 * r(c)]
    gpt_names = ["tokens", "targets", "wte", "wpe"] + ["h0." + n for n in BLOCK_NAMES] + \
        ["h1." + n for n in BLOCK_NAMES] + ["ln_f.weight", "ln_f.bias"]

    def bb_inputs():
        return [r(2, 4, 4, 4), 0.3 * r(4, 4, 3, 3), 1 + 0.1 * r(4), 0.1 * r(4), 0.1 * r(4), r(4, positive=True),
                0.3 * r(4, 4, 3, 3), 1 + 0.1 * r(4), 0.1 * r(4), 0.1 * r(4), r(4, positive=True)]
    bb_names = ["x", "conv1.weight", "bn1.weight", "bn1.bias", "bn1.running_mean", "bn1.running_var",
                "conv2.weight", "bn2.weight", "bn2.bias", "bn2.running_mean", "bn2.running_var"]
    return [
        op("model_mlp", mlp, mlp_in, input_names=mlp_names, tol=MODEL),
        op("model_mlp_joint", mlp, mlp_in, input_names=mlp_names, tol=MODEL, joint=True, **RESHAPE),
        op("model_gpt_block", lambda x, *p: block(x, p), blk, input_names=["x"] + BLOCK_NAMES, tol=MODEL),
        op("model_gpt_block_tanh_joint", lambda x, *p: block(x, p, approximate="tanh"), blk,
           input_names=["x"] + BLOCK_NAMES, tol=MODEL, joint=True, **RESHAPE),
        op("model_gpt2", gpt2, gpt, input_names=gpt_names, tol=MODEL, **RESHAPE),
        op("model_gpt2_joint", gpt2, gpt, input_names=gpt_names, tol=MODEL, joint=True, **RESHAPE),
        op("model_resnet_block_train", basic_block(True), bb_inputs(), input_names=bb_names, tol=MODEL,
           no_grad_inputs=[4, 5, 9, 10], **RESHAPE),
        op("model_resnet_block_eval", basic_block(False), bb_inputs(), input_names=bb_names, tol=MODEL,
           no_grad_inputs=[4, 5, 9, 10], **RESHAPE),
        op("model_resnet_block_train_joint", basic_block(True), bb_inputs(), input_names=bb_names, tol=MODEL,
           no_grad_inputs=[4, 5, 9, 10], joint=True, **RESHAPE),
    ]


def activations():
    """The activations of mobile and efficient CNNs (issue 18), with exact branch points in the
    inputs: PyTorch's boundary rules (x == -3, x == 3, x == min_val) must be followed exactly."""
    d = torch.float64
    j = dict(joint=True)
    edges = torch.tensor([[-4.0, -3.0, -1.0, 0.0, 1.0], [3.0, 4.0, 0.5, -0.5, 2.0]])
    return [
        op("hardtanh_bounds", lambda x: F.hardtanh(x, -0.5, 0.7) + F.hardtanh(x), [3 * r(4, 5)]),
        op("hardtanh_edges", lambda x: F.relu6(x) + F.hardtanh(x), [edges.clone()]),
        op("hardswish_hardsigmoid", lambda x: F.hardswish(x) * F.hardsigmoid(x), [4 * r(3, 6, dtype=d)],
           tol=F64),
        op("hard_edges", lambda x: F.hardswish(x) + 2 * F.hardsigmoid(x), [edges.clone()]),
        op("silu", lambda x: F.silu(x) * 2, [3 * r(4, 4)]),
        op("bw_hardswish", lambda x: F.hardswish(x) * 2, [edges.clone()], **j),
        op("bw_hardsigmoid", lambda x: F.hardsigmoid(x) * 3, [4 * r(3, 4)], **j),
        op("bw_hardtanh", lambda x: F.hardtanh(x, -1.0, 2.0) * 3, [edges.clone()], **j),
    ]


def model_ops():
    """Ops torchvision and nn models record beyond the core families (issue 18)."""
    j = dict(joint=True)
    return [
        op("constant_pad", lambda x: F.pad(x, (1, -1, 2, 0), value=-0.5) * 2, [r(2, 3, 4)]),
        op("roll_dims", lambda x: torch.roll(x, (1, -2), (0, 2)) + torch.roll(x, 5), [r(2, 3, 4)]),
        op("ne_ge_le", lambda x, y: (x != y, x >= 0.1, x <= y, x != 0.0), [r(3, 4), r(4)], grad=False),
        op("new_zeros_fill", lambda x, v: x.new_zeros(2, 4) + torch.ops.aten.fill.Tensor(x, v) * x,
           [r(2, 4), r(())]),
        op("unsafe_split", lambda x: sum(p * (i + 1) for i, p in enumerate(torch.ops.aten.unsafe_split(x, 2, 1))),
           [r(3, 4)]),
        op("avg_pool", lambda x: F.avg_pool2d(x, 3, 2, 1) + F.avg_pool2d(x, 3, 2, 1, ceil_mode=True,
                                                                         count_include_pad=False),
           [r(2, 3, 7, 7)]),
        op("bw_avg_pool", lambda x: F.avg_pool2d(x, 2, ceil_mode=True, divisor_override=3).sin(),
           [r(1, 2, 5, 5)], **j),
        op("bw_pad_roll", lambda x: torch.roll(F.pad(x, (1, 1)), 1, 1).tanh(), [r(2, 3)], **j),
        # Advanced indexing: None entries, negative and broadcast indices, index dims adjacent
        # (result in place) and separated (result first).
        op("index_tensor", lambda x, i, k: (x[i] * 2, x[:, k, i[:2]], x[i[:2], :, k[:2]], x[..., k]),
           [r(3, 4, 5), torch.tensor([2, 0, -1]), torch.tensor([[1], [3]])]),
        op("index_put", lambda x, i, k, v, w: (
            torch.ops.aten.index_put(x, [None, k.view(-1)], v, True) * 2,
            x.index_put((i[:2],), w)),
           [r(3, 4, 5), torch.tensor([2, 0, -1]), torch.tensor([[1], [3]]), r(2, 5), r(5)]),
        op("upsample_bilinear", lambda x: (F.interpolate(x, size=(5, 7), mode="bilinear", align_corners=False),
                                           F.interpolate(x, scale_factor=1.5, mode="bilinear", align_corners=True),
                                           F.interpolate(x, scale_factor=(0.7, 2.3), mode="bilinear")),
           [r(2, 3, 4, 6)]),
        op("bw_upsample_bilinear", lambda x: F.interpolate(x.sin(), size=(3, 9), mode="bilinear").exp(),
           [r(1, 2, 4, 5)], **j),
    ]


def random_ops():
    """Dropout with p > 0 in training. PyTorch's CPU stream is not Philox, so no mask agrees; these
    record outputs that do not depend on the stream: out * (1 - p) - x * mask is zero for any mask
    (out = x * mask / (1 - p)), and so is its gradient. They check that PyTorch's dropout graphs
    (forward, and its own joint with native_dropout_backward) load and run, and that out and mask
    are consistent in both implementations."""
    def consistent(x):
        out, mask = torch.native_dropout(x, 0.3, True)
        return out * 0.7 - x * mask
    return [
        op("native_dropout_consistent", consistent, [r(4, 5)]),
        op("bw_native_dropout_consistent", consistent, [r(4, 5)], joint=True),
    ]


def libtorch_ops():
    """Ops LibTorch's example programs use (issue 17): leaky_relu, the BCE / smooth-L1 / Huber / L1
    losses, transposed convolution, norm, all / any, argmin. Branch points are in the inputs
    (x == 0 for leaky_relu, |x - t| == beta); the joint fixtures load PyTorch's backward ops."""
    d = torch.float64
    j = dict(joint=True)
    edges = torch.tensor([[-2.0, -0.5, 0.0, 0.5, 1.0], [3.0, -1.0, 0.25, -0.25, 2.0]])
    prob = lambda *s: torch.rand(*s) * 0.9 + 0.05
    return [
        op("leaky_relu", lambda x: F.leaky_relu(x, 0.2) + F.leaky_relu(x), [edges.clone()]),
        op("bw_leaky_relu", lambda x: F.leaky_relu(x, 0.1) * 3, [edges.clone()], **j),
        op("bce_weighted", lambda p, t, w: (F.binary_cross_entropy(p, t, w),
                                            F.binary_cross_entropy(p, t, reduction="none")),
           [prob(3, 4), torch.rand(3, 4), r(4, positive=True)], no_grad_inputs=[2]),
        op("bw_bce", lambda p, t: F.binary_cross_entropy(p, t, reduction="sum"), [prob(2, 5), torch.rand(2, 5)],
           no_grad_inputs=[1], **j),
        op("bce_with_logits", lambda x, t, w, pw: (
            F.binary_cross_entropy_with_logits(x, t, w, pos_weight=pw),
            F.binary_cross_entropy_with_logits(x, t, reduction="none")),
           [3 * r(3, 4, dtype=d), torch.rand(3, 4, dtype=d), r(4, dtype=d, positive=True),
            r(4, dtype=d, positive=True)], no_grad_inputs=[2, 3], tol=F64),
        op("smooth_l1_huber", lambda x, y: (F.smooth_l1_loss(x, y, beta=0.5),
                                            F.huber_loss(x, y, reduction="sum", delta=0.7),
                                            F.smooth_l1_loss(x, y, reduction="none")),
           [r(3, 4), r(3, 4)]),
        op("bw_smooth_l1", lambda x, y: F.smooth_l1_loss(x, y, beta=0.5), [r(3, 4), r(3, 4)], **j),
        op("bw_huber", lambda x, y: F.huber_loss(x, y, delta=0.7), [r(3, 4), r(3, 4)], **j),
        op("l1_loss", lambda x, y: F.l1_loss(x, y), [r(3, 4), r(3, 4)]),
        op("norm", lambda x: (torch.norm(x), torch.norm(x, 1, 1, True), torch.norm(x, float("inf"), 0),
                              torch.norm(x, 3, (0, 1)), torch.norm(x, "fro", 1)),
           [r(3, 4, dtype=d)], tol=F64),
        op("all_any_argmin", lambda x: ((x > 0).all(), (x > -1).all(1), (x > 1).any(0, True), (x > 0).any(),
                                        x.argmin(), x.argmin(1, True)), [r(3, 4)], grad=False),
        op("conv_transpose2d", lambda x, w, b: F.conv_transpose2d(x, w, b, stride=2, padding=1, output_padding=1),
           [r(2, 4, 3, 3), r(4, 3, 3, 3), r(3)], tol=MODEL),
        op("conv_transpose2d_groups", lambda x, w: F.conv_transpose2d(x, w, stride=(1, 2), groups=2, dilation=2),
           [r(1, 4, 3, 4), r(4, 2, 2, 3)], tol=MODEL),
        op("conv_transpose1d", lambda x, w, b: F.conv_transpose1d(x, w, b, stride=3, padding=1, output_padding=2),
           [r(2, 3, 5), r(3, 2, 4), r(2)], tol=MODEL),
        op("bw_conv_transpose2d", lambda x, w, b: F.conv_transpose2d(x, w, b, stride=2, padding=1),
           [r(2, 3, 4, 4), r(3, 2, 3, 3), r(2)], tol=MODEL, **j),
    ]


def fixtures():
    torch.manual_seed(0)
    return (pointwise() + reductions() + linalg_and_views() + indexing() + nn_ops() + backward_graphs() + models()
            + activations() + model_ops() + random_ops() + libtorch_ops())
