#!/usr/bin/python3
"""Records PyTorch as an oracle for aotgrad: traces functions with make_fx into aotgrad's graph
text format (docs/ir.md) and saves inputs, outputs and input gradients as .npy, one directory per
fixture with a manifest.json. Runs only where PyTorch is installed (Debian python3-torch 1.13 and
python3-numpy work); the C++ tests read the files and never need PyTorch. docs/torch_oracle.md
says how to regenerate and what the fixtures cover.

Reading guide: `Exporter.graph_text` walks a make_fx graph and prints each node against OUR schema
(tests/data/torch/op_table.txt, written by the TorchOpTable test), so an op aotgrad lacks, or an
argument our schema lacks, stops the export with the op named. `record` runs PyTorch eagerly for
the reference values. The fixture list lives with the fixtures, in tests/data/torch/fixtures.py.
"""
import argparse
import copy
import json
import math
import operator
import os
import re
import shutil
import sys

import numpy as np
import torch
from torch._decomp import get_decompositions
from torch.fx.experimental.proxy_tensor import make_fx

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_OUT = os.path.join(ROOT, "tests", "data", "torch")

DTYPES = {torch.float32: "f32", torch.float64: "f64", torch.int64: "i64", torch.bool: "b8",
          torch.float16: "f16", torch.bfloat16: "bf16"}


# Nodes PyTorch 1.13 records that compute nothing a graph output needs: autograd's shape checks
# (is_same_size returns a bool, not a tensor), batch norm's unused uint8 `reserve` buffer, and what
# autograd saves when the traced inputs require grad (detached results; clones of values an
# in-place op is about to overwrite). They are left out when nothing uses them; any other op must
# be in our table.
DROP_IF_UNUSED = {"aten::is_same_size", "aten::empty", "aten::detach", "aten::clone"}


class ExportError(Exception):
    pass


def upsample_vec(given, result, values):
    """upsample_*.vec(input, output_size?, align_corners, scale_factors?) is what ATen turns into
    the default overload: the output size (given, or the input size times each scale factor,
    rounded down; here read off the result) and the scale factors as per-dim scales."""
    scales = given.get("scale_factors") or [None, None]
    return "aten.upsample_bilinear2d.default", {
        "self": given["input"], "output_size": list(result.shape[-2:]),
        "align_corners": given["align_corners"], "scales_h": scales[0], "scales_w": scales[1]}


def upsample_backward_vec(given, result, values):
    """upsample_*_backward.vec, likewise: the output size is grad_output's."""
    scales = given.get("scale_factors") or [None, None]
    return "aten.upsample_bilinear2d_backward.default", {
        "grad_output": given["grad_output"],
        "output_size": list(values[given["grad_output"]].shape[-2:]),
        "input_size": list(given["input_size"]), "align_corners": given["align_corners"],
        "scales_h": scales[0], "scales_w": scales[1]}


def lift_fresh_copy(given, result, values):
    """lift_fresh_copy (a tensor literal made inside forward, copied) is a clone."""
    return "aten.clone.default", {"self": given["self"]}


# PyTorch ops written as one of ours that means the same: upsample's .vec overload (float[]?
# lists our schemas do not take) and lift_fresh_copy.
VEC_OVERLOADS = {"aten.upsample_bilinear2d.vec": upsample_vec,
                 "aten.upsample_bilinear2d_backward.vec": upsample_backward_vec,
                 "aten.lift_fresh_copy.default": lift_fresh_copy}


# ---- our schemas ----

class Arg:
    def __init__(self, text, kwarg_only):
        # `Tensor?[] indices` (index, index_put): a list whose entries may be None.
        m = re.match(r"^(\w+)(\([^)]*\))?(\?)?(\[\d*\])?(\?)?\s+(\w+)(?:=(.*))?$", text.strip())
        if not m:
            raise ExportError("cannot read schema argument '%s'" % text)
        base, _alias, opt_elements, lst, opt, self_name, default = m.groups()
        self.optional_elements = opt_elements is not None
        self.name = self_name
        self.base = base
        self.is_list = lst is not None
        self.list_size = int(lst[1:-1]) if lst and len(lst) > 2 else 0
        self.optional = opt is not None
        self.default = default
        self.kwarg_only = kwarg_only
        self.is_tensor = base == "Tensor"

    def type_text(self):
        return (self.base + ("?" if self.optional_elements else "") + ("[]" if self.is_list else "") +
                ("?" if self.optional else ""))


def split_top(text):
    """Splits on commas not nested in brackets or parentheses."""
    out, depth, cur = [], 0, ""
    for c in text:
        if c in "([":
            depth += 1
        elif c in ")]":
            depth -= 1
        if c == "," and depth == 0:
            out.append(cur)
            cur = ""
        else:
            cur += c
    if cur.strip():
        out.append(cur)
    return out


class Schema:
    def __init__(self, text):
        self.text = text
        open_ = text.index("(")
        depth, close = 0, None
        for i in range(open_, len(text)):
            if text[i] == "(":
                depth += 1
            elif text[i] == ")":
                depth -= 1
                if depth == 0:
                    close = i
                    break
        self.args, kwarg_only = [], False
        for part in split_top(text[open_ + 1:close]):
            if part.strip() == "*":
                kwarg_only = True
                continue
            self.args.append(Arg(part, kwarg_only))
        self.returns_list = text[close:].strip().endswith("[]")


def load_op_table(path):
    table = {}
    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            if line and not line.startswith("#"):
                name, schema = line.split("\t", 1)
                table[name] = Schema(schema)
    return table


# ---- constants in the text format ----

def float_text(x):
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    r = repr(float(x))  # shortest round-trip text: '1e-05', '0.1', '1.0'
    return r if ("." in r or "e" in r) else r + ".0"


def string_text(s):
    out = '"'
    for c in s:
        if c in '"\\':
            out += "\\" + c
        elif c == "\n":
            out += "\\n"
        elif c == "\t":
            out += "\\t"
        elif c == "\r":
            out += "\\r"
        elif ord(c) < 32:
            out += "\\x%02x" % ord(c)
        else:
            out += c
    return out + '"'


def value_name(name):
    return name if re.match(r"^[A-Za-z0-9_.]+$", name) else string_text(name)


def type_text(t):
    if t.dtype not in DTYPES:
        raise ExportError("dtype %s has no aotgrad equivalent" % t.dtype)
    sizes = list(t.shape)
    text = "%s[%s]" % (DTYPES[t.dtype], ",".join(str(s) for s in sizes))
    contiguous, expect = [], 1
    for s in reversed(sizes):
        contiguous.insert(0, expect)
        expect *= max(s, 1)
    if list(t.stride()) != contiguous and t.numel() > 0:
        text += "{%s}" % ",".join(str(s) for s in t.stride())
    if t.storage_offset() != 0:
        text += "@%d" % t.storage_offset()
    return text


# ---- make_fx graph -> text ----

class Exporter:
    def __init__(self, op_table):
        self.table = op_table

    def constant(self, v, arg, names, where):
        if isinstance(v, torch.fx.Node):
            if v not in names:
                raise ExportError("%s: argument '%s' uses %s, which has no value" % (where, arg.name, v))
            return "%" + value_name(names[v])
        if v is None:
            return "none"
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, int):
            return float_text(v) if arg.base == "float" else str(v)
        if isinstance(v, float):
            return float_text(v)
        if isinstance(v, (list, tuple)):
            return "[" + ", ".join(self.constant(x, arg, names, where) for x in v) + "]"
        if isinstance(v, torch.dtype):
            if v not in DTYPES:
                raise ExportError("%s: dtype %s has no aotgrad equivalent" % (where, v))
            return DTYPES[v]
        if isinstance(v, torch.device):
            return string_text(str(v))
        if isinstance(v, (torch.layout, torch.memory_format)):
            return string_text(str(v).replace("torch.", ""))
        if isinstance(v, str):
            return string_text(v)
        raise ExportError("%s: argument '%s' holds %r, which the text format cannot write"
                          % (where, arg.name, v))

    @staticmethod
    def is_default(v, arg):
        """Whether `v` equals our schema default (ops::normalize's reading of it)."""
        d = arg.default
        if d is None:
            return v is None and arg.optional
        if d == "None":
            return v is None
        if isinstance(v, bool):
            return d == ("True" if v else "False")
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            try:
                dv = float(d)
            except ValueError:
                return False
            # `alpha=1` stays an int for Scalar: a float 1.0 is not the default (docs/ir.md).
            if arg.base == "Scalar" and (isinstance(v, float) != ("." in d or "e" in d)):
                return False
            return dv == v
        if isinstance(v, (list, tuple)) and arg.is_list:
            if d.startswith("["):
                items = [x for x in d[1:-1].split(",") if x.strip()]
                return [int(x) for x in items] == [int(x) for x in v]
            return all(int(x) == int(d) for x in v) and len(v) == (arg.list_size or len(v))
        if isinstance(v, str):
            return d.strip("'\"") == v
        return False

    @staticmethod
    def torch_args(node):
        """PyTorch's arguments by name, defaults filled from PyTorch's schema."""
        given = {}
        for i, a in enumerate(node.target._schema.arguments):
            if i < len(node.args):
                given[a.name] = node.args[i]
            elif a.name in node.kwargs:
                given[a.name] = node.kwargs[a.name]
            elif a.has_default_value():
                given[a.name] = a.default_value
            else:
                given[a.name] = None
        return given

    def unwrap_numbers(self, opname, given, node):
        """make_fx records `x * 2` as aten.mul.Tensor(x, 2): a Python number where the schema says
        Tensor (ATen wraps it in a 0-dim "wrapped number" tensor, which promotes like a Scalar).
        Our graphs hold only tensor values there, so such a call becomes the op's `.Scalar`
        overload, which ATen defines to mean the same; without one the export stops."""
        numbers = [a.name for a in node.target._schema.arguments
                   if str(a.type) == "Tensor" and isinstance(given.get(a.name), (int, float))]
        if not numbers:
            return opname
        scalar = opname.rsplit(".", 1)[0] + ".Scalar"
        if scalar not in self.table or opname.rsplit(".", 1)[1] != "Tensor":
            raise ExportError("%s (node %s) passes the number %r for Tensor argument '%s', and "
                              "aotgrad has no %s to take it" % (opname, node.name, given[numbers[0]],
                                                                 numbers[0], scalar))
        return scalar

    def call_text(self, node, names):
        op = node.target
        sname = op._schema.name.replace("aten::", "")
        overload = op._schema.overload_name or "default"
        opname = "aten.%s.%s" % (sname, overload)
        given = self.torch_args(node)
        opname = self.unwrap_numbers(opname, given, node)
        if opname in VEC_OVERLOADS:
            opname, given = VEC_OVERLOADS[opname](given, self.values[node], self.values)
        ours = self.table.get(opname)
        if ours is None:
            raise ExportError("op %s (schema: %s) is not in aotgrad's op table" % (opname, op._schema))
        where = "%s (node %s)" % (opname, node.name)
        known = {a.name for a in ours.args}
        for name, v in given.items():
            if name not in known and v is not None:
                raise ExportError("%s: PyTorch passes argument '%s' = %r, which our schema (%s) lacks"
                                  % (where, name, v, ours.text))
        positional, named = [], []
        for i, a in enumerate(ours.args):
            v = given.get(a.name, None)
            if a.is_tensor:
                positional.append(self.constant(v, a, names, where))
                continue
            tensor_follows = any(b.is_tensor for b in ours.args[i + 1:])
            if not tensor_follows and self.is_default(v, a):
                continue
            if v is None and not (a.optional or a.base == "Generator"):
                raise ExportError("%s: required argument '%s' is missing" % (where, a.name))
            named.append("%s=%s" % (a.name, self.constant(v, a, names, where)))
        return "%s(%s)" % (opname, ", ".join(positional + named)), ours

    def graph_text(self, gm, values, graph_name, input_names):
        """`values`: node -> the tensor (or tuple of tensors) it computed on the recorded inputs."""
        self.values = values
        names, lines, sig = {}, [], []
        getitems = {}
        for node in gm.graph.nodes:
            if node.op == "call_function" and node.target is operator.getitem:
                getitems.setdefault(node.args[0], {})[node.args[1]] = node
        used = set()

        def fresh(base):
            n, k = base, 1
            while n in used:
                n, k = "%s_%d" % (base, k), k + 1
            used.add(n)
            return n

        inputs = [n for n in gm.graph.nodes if n.op == "placeholder"]
        for node, name in zip(inputs, input_names):
            names[node] = fresh(name)
            sig.append("%%%s: %s" % (value_name(names[node]), type_text(values[node])))
        for node in gm.graph.nodes:
            if node.op == "placeholder" or node.target is operator.getitem:
                continue
            if node.op == "output":
                flat = torch.utils._pytree.tree_flatten(node.args[0])[0]
                outs = ", ".join("%" + value_name(names[n]) for n in flat)
                lines.append("  return (%s)" % outs)
                continue
            if node.op != "call_function" or not isinstance(node.target, torch._ops.OpOverload):
                raise ExportError("node %s: %s %s is not an ATen op" % (node.name, node.op, node.target))
            if not node.users and node.target._schema.name in DROP_IF_UNUSED:
                continue
            call, ours = self.call_text(node, names)
            v = values[node]
            if isinstance(v, (tuple, list)):
                binds = []
                for i, t in enumerate(v):
                    if t is None:  # a masked-out backward result: ours is an empty [0] tensor
                        t = torch.empty(0, dtype=next(x for x in v if x is not None).dtype)
                    item = getitems.get(node, {}).get(i)
                    n = fresh(item.name if item is not None else "%s_%d" % (node.name, i))
                    if item is not None:
                        names[item] = n
                    binds.append("%%%s: %s" % (value_name(n), type_text(t)))
                lines.append("  %s = %s" % (", ".join(binds), call))
            elif v is None:
                lines.append("  %s" % call)
            else:
                names[node] = fresh(node.name)
                lines.append("  %%%s: %s = %s" % (value_name(names[node]), type_text(v), call))
        return "graph %s(%s) {\n%s\n}\n" % (value_name(graph_name), ", ".join(sig), "\n".join(lines))


def lift_constants(gm):
    """Turns each get_attr node (a tensor constant created inside forward) into a graph input
    named `const.<attr>`, appended after the other inputs; returns [(name, tensor)] in order.
    Our graphs hold no tensor data, so constants travel as named inputs (.npy beside the graph)."""
    consts, lifted = [], {}
    last_input = [n for n in gm.graph.nodes if n.op == "placeholder"][-1]
    for node in list(gm.graph.nodes):
        if node.op != "get_attr":
            continue
        if node.target not in lifted:  # one input per attribute, however often it is read
            value = getattr(gm, node.target)
            if not isinstance(value, torch.Tensor):
                raise ExportError("get_attr %s is a %s, not a tensor" % (node.target, type(value).__name__))
            with gm.graph.inserting_after(last_input):
                lifted[node.target] = last_input = gm.graph.placeholder("const_" + node.target)
            consts.append(("const." + node.target, value.detach().clone()))
        node.replace_all_uses_with(lifted[node.target])
        gm.graph.erase_node(node)
    gm.recompile()
    return consts


def run_recording(gm, inputs):
    """Runs `gm` on real inputs; returns node -> value for every node."""
    values = {}

    class Recorder(torch.fx.Interpreter):
        def run_node(self, n):
            r = super().run_node(n)
            values[n] = r
            return r

    with torch.no_grad():
        Recorder(gm).run(*inputs)
    return values


# ---- fixtures ----

def save(path, t):
    t = t.detach()
    if t.dtype == torch.bfloat16:
        t = t.to(torch.float32)
    np.save(path, t.contiguous().numpy())


def flat_outputs(out):
    """Every tensor of a (possibly nested) result, in order: LSTM returns (out, (h, c))."""
    return [t for t in torch.utils._pytree.tree_flatten(out)[0] if isinstance(t, torch.Tensor)]


def eager_reference(fn, inputs, grad_inputs, given=None, tangents=None):
    """Runs `fn` eagerly with autograd on copies of `inputs`: returns (leaves, as the step left
    them; flat outputs; [(index, output)] of the differentiable outputs; the tangents used (`given`
    per output, else ones); the gradients of the inputs `grad_inputs`, zeros where unused)."""
    leaves = [t.clone().requires_grad_(i in grad_inputs) for i, t in enumerate(inputs)]
    outs = flat_outputs(fn(*leaves))
    if not grad_inputs:
        return leaves, outs, [], [], []
    diff = [(k, o) for k, o in enumerate(outs) if o.requires_grad]
    if tangents is None:
        tangents = [given[k] if given is not None else torch.ones_like(o) for k, o in diff]
    grads = torch.autograd.grad([o for _, o in diff], [leaves[i] for i in grad_inputs], tangents,
                                allow_unused=True)
    grads = [g if g is not None else torch.zeros_like(leaves[i]) for g, i in zip(grads, grad_inputs)]
    return leaves, outs, diff, tangents, grads


def named_results(outs, grads, grad_inputs, leaves, mutated):
    """The reference tensors by the file name the fixture stores them under."""
    named = {"output%d.npy" % k: o for k, o in enumerate(outs)}
    named.update({"grad%d.npy" % i: g for g, i in zip(grads, grad_inputs)})
    named.update({"mutated%d.npy" % i: leaves[i] for i in mutated})
    return named


def nudged(t, generator):
    """`t` with every element moved by one float32 ulp, up or down at random."""
    if not t.is_floating_point():
        return t
    up = torch.rand(t.shape, generator=generator) < 0.5
    toward = torch.where(up, torch.tensor(math.inf, dtype=t.dtype), torch.tensor(-math.inf, dtype=t.dtype))
    return torch.nextafter(t, toward)


def noise_floor(spec, inputs, grad_inputs, tangents, mutated, reference):
    """Per reference tensor, how far float32 alone moves it: the largest of |f32 - f64| (the same
    step run in float64, `spec["fn64"]`) and |f32 - f32 on inputs moved by one ulp|, over
    `spec["nudges"]` (default 1) independently nudged runs. A train-mode batch norm over 1x1 maps
    can make a gradient pure noise in PyTorch itself; this says so per tensor, and the checks allow
    a multiple of it (docs/torch_oracle.md, "Tolerances"). One nudge can miss a discrete effect: a
    ReLU whose input lies within float32 noise of 0 passes or blocks its gradient depending on
    the rounding (resnet50 train, docs/torch_models.md), which a few more nudges do catch."""
    def wide(t):
        return t.double() if t.is_floating_point() else t
    runs = [(spec["fn64"], [wide(t) for t in inputs], [wide(t) for t in tangents])]
    g = torch.Generator().manual_seed(1)
    for _ in range(max(1, spec.get("nudges", 1))):
        runs.append((spec["fn"], [nudged(t, g) for t in inputs], tangents))
    noise = {f: 0.0 for f in reference}
    for fn, xs, ts in runs:
        leaves, outs, _, _, grads = eager_reference(fn, xs, grad_inputs, tangents=ts)
        for f, t in named_results(outs, grads, grad_inputs, leaves, mutated).items():
            if not reference[f].is_floating_point() or reference[f].numel() == 0:
                continue
            d = (t.detach().double() - reference[f].detach().double()).abs().max().item()
            noise[f] = max(noise[f], d)
    return noise


def record(exporter, spec, out_dir):
    """spec: name, fn, inputs (list of tensors), input_names, grad (bool), joint (bool),
    rtol, atol, tangents (optional list)."""
    name = spec["name"]
    fn, inputs = spec["fn"], [t.detach().clone() for t in spec["inputs"]]
    input_names = spec.get("input_names") or ["x%d" % i for i in range(len(inputs))]
    d = os.path.join(out_dir, name)
    if os.path.isdir(d):
        shutil.rmtree(d)
    os.makedirs(d)
    grad_inputs = [i for i, t in enumerate(inputs) if t.is_floating_point()] if spec.get("grad") else []
    for i in spec.get("no_grad_inputs", []):
        if i in grad_inputs:
            grad_inputs.remove(i)

    # Reference values: PyTorch eager, with autograd.
    leaves, outs, diff, tangents, grads = eager_reference(fn, inputs, grad_inputs,
                                                          given=spec.get("tangents"))
    # Inputs the step wrote into (batch norm's running statistics, num_batches_tracked): their
    # values after the step, which aotgrad returns as mutated inputs.
    mutated = [i for i, (a, b) in enumerate(zip(leaves, inputs))
               if a.shape == b.shape and not torch.equal(a.detach(), b)]
    manifest = {"name": name, "rtol": spec.get("rtol", 1e-5), "atol": spec.get("atol", 1e-6),
                "inputs": [], "outputs": [], "tangents": [], "grads": [], "mode": "forward"}
    if grad_inputs:
        manifest["tangent_of_output"] = [k for k, _ in diff]

    # Ops aotgrad lacks are decomposed only where a fixture asks by name (recorded in the
    # manifest); any other missing op stops the export.
    decomp = get_decompositions([getattr(torch.ops.aten, n.split(".")[0]) for n in spec.get("decompose", [])])
    manifest["decomposed"] = spec.get("decompose", [])
    if spec.get("joint"):
        # PyTorch's own joint graph: (inputs..., tangents...) -> (outputs..., grads...).
        def joint(*args):
            prim = [a.clone().requires_grad_(i in grad_inputs) if a.is_floating_point() else a
                    for i, a in enumerate(args[:len(inputs)])]
            o = flat_outputs(fn(*prim))
            diff = [x for x in o if x.requires_grad]
            g = torch.autograd.grad(diff, [prim[i] for i in grad_inputs], list(args[len(inputs):]),
                                    allow_unused=True)
            return tuple(x.detach() for x in o) + tuple(g)
        gm = make_fx(joint, decomposition_table=decomp)(*[t.clone() for t in inputs], *tangents)
        graph_inputs = inputs + tangents
        graph_names = input_names + ["tangent%d" % k for k in range(len(tangents))]
        manifest["mode"] = "backward_graph"
    else:
        # On copies: a step that updates buffers would otherwise leave its writes in the inputs
        # saved below.
        # The inputs PyTorch differentiates require grad while tracing too, as in a training
        # step: in eval mode, MultiheadAttention and TransformerEncoderLayer otherwise take their
        # inference-only fused paths (_native_multi_head_attention), which have no backward.
        gm = make_fx(fn, decomposition_table=decomp)(
            *[t.clone().requires_grad_(i in grad_inputs) for i, t in enumerate(inputs)])
        graph_inputs, graph_names = inputs, input_names
    consts = lift_constants(gm)
    if consts:
        manifest["constants"] = [{"input": len(graph_inputs) + k, "name": n} for k, (n, _) in enumerate(consts)]
        graph_inputs = graph_inputs + [t for _, t in consts]
        graph_names = graph_names + [n for n, _ in consts]
    values = run_recording(gm, [t.clone() for t in graph_inputs])
    text = exporter.graph_text(gm, values, name, graph_names)
    with open(os.path.join(d, "graph.txt"), "w") as f:
        f.write(text)

    for i, t in enumerate(graph_inputs):
        save(os.path.join(d, "input%d.npy" % i), t)
        manifest["inputs"].append("input%d.npy" % i)
    ref_outs = [o for o in outs] + (list(grads) if spec.get("joint") else [])
    for k, o in enumerate(ref_outs):
        save(os.path.join(d, "output%d.npy" % k), o)
        manifest["outputs"].append("output%d.npy" % k)
    if mutated and not spec.get("joint"):
        manifest["mutated"] = []
        for i in mutated:
            save(os.path.join(d, "mutated%d.npy" % i), leaves[i])
            manifest["mutated"].append({"input": i, "file": "mutated%d.npy" % i})
    if not spec.get("joint"):
        for k, t in enumerate(tangents):
            save(os.path.join(d, "tangent%d.npy" % k), t)
            manifest["tangents"].append("tangent%d.npy" % k)
        for g, i in zip(grads, grad_inputs):
            save(os.path.join(d, "grad%d.npy" % i), g)
            manifest["grads"].append({"input": i, "file": "grad%d.npy" % i})
    if spec.get("fn64") and not spec.get("joint"):
        reference = named_results(outs, grads, grad_inputs, leaves, mutated)
        manifest["noise"] = noise_floor(spec, inputs, grad_inputs, tangents, mutated, reference)
    with open(os.path.join(d, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)
        f.write("\n")
    return text


# ---- any module: its training step ----

def import_dotted(path):
    mod_name, _, attr = path.rpartition(".")
    if not mod_name:
        raise ExportError("--module %s: expected a dotted path such as torchvision.models.resnet18" % path)
    import importlib
    try:
        return getattr(importlib.import_module(mod_name), attr)
    except (ImportError, AttributeError) as e:
        raise ExportError("--module %s: %s" % (path, e))


def parse_shape(text):
    try:
        shape = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        shape = []
    if not shape or any(s < 0 for s in shape):
        raise ExportError("--input %r: expected sizes separated by commas, such as 2,3,64,64" % text)
    return shape


def training_step(model, names, n_state):
    """The function make_fx traces: (state..., inputs...) -> the model's outputs, with the
    parameters and buffers named `names` (the first `n_state` arguments) standing in for the
    model's own."""
    from torch.nn.utils.stateless import functional_call, _reparametrize_module
    rnns = [m for m in model.modules() if isinstance(m, torch.nn.RNNBase)]

    def refresh(m):
        m._flat_weights = [getattr(m, n) if hasattr(m, n) else None for n in m._flat_weights_names]

    def step(*flat):
        tensors = dict(zip(names, flat[:n_state]))
        if not rnns:
            return functional_call(model, tensors, tuple(flat[n_state:]))
        # RNNs read a cached list of their weights (_flat_weights) that functional_call leaves
        # pointing at the real parameters (which would be traced as constants): refresh it while
        # the graph's inputs stand in, and again after.
        try:
            with _reparametrize_module(model, tensors):
                for m in rnns:
                    refresh(m)
                return model(*flat[n_state:])
        finally:
            for m in rnns:
                refresh(m)
    return step


def module_spec(args):
    """A training step of `args.module` as a fixture spec: parameters and buffers first, named by
    their fully-qualified names, then the inputs; gradients of every parameter that requires grad
    and of every floating input, from random tangents."""
    ctor = import_dotted(args.module)
    kwargs = json.loads(args.kwargs) if args.kwargs else {}
    torch.manual_seed(args.seed)
    model = ctor(**kwargs)
    model.train(args.train)
    if not args.dropout:
        # Dropout off (and torchvision's stochastic depth), so PyTorch's random streams, which
        # ours do not reproduce, leave the reference values alone.
        for m in model.modules():
            if isinstance(m, torch.nn.modules.dropout._DropoutNd) or type(m).__name__ == "StochasticDepth":
                m.p = 0.0
            if isinstance(m, (torch.nn.MultiheadAttention, torch.nn.RNNBase)):
                m.dropout = 0.0  # attention weights' dropout; dropout between RNN layers
    params = dict(model.named_parameters())
    buffers = dict(model.named_buffers())
    names = list(params) + list(buffers)
    state = [t.detach().clone() for t in list(params.values()) + list(buffers.values())]
    shapes = [parse_shape(t) for t in args.input]
    inputs = [torch.randn(*shape) for shape in shapes]
    n_state = len(state)

    step = training_step(model, names, n_state)
    # The same step in float64, on a copy: its results are the truth the float32 noise floor is
    # measured against (noise_floor). Not with dropout on: its masks would differ.
    step64 = training_step(copy.deepcopy(model).double(), names, n_state)

    grad_params = [i for i, n in enumerate(names) if n in params]
    no_grad = [i for i in range(n_state) if i not in grad_params]
    name = args.name or "%s@%s" % (args.module.rpartition(".")[2], "train" if args.train else "eval")
    return dict(name=name, fn=step, inputs=state + inputs, grad=True, no_grad_inputs=no_grad,
                input_names=names + ["input%d" % i for i in range(len(inputs))],
                rtol=args.rtol, atol=args.atol, module=args.module, train=args.train,
                dropout=args.dropout, fn64=None if args.dropout else step64, nudges=args.nudges)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", default=DEFAULT_OUT, help="fixture directory (default tests/data/torch)")
    p.add_argument("--op-table", default=os.path.join(DEFAULT_OUT, "op_table.txt"))
    p.add_argument("--only", default=None, help="regex: record only fixtures whose name matches")
    p.add_argument("--list", action="store_true", help="list fixture names and exit")
    p.add_argument("--print", action="store_true", help="print each graph as it is recorded")
    p.add_argument("--module", default=None,
                   help="export one module's training step instead of the fixture list: a dotted "
                        "constructor such as torchvision.models.resnet18 or torch.nn.LSTM")
    p.add_argument("--kwargs", default=None, help="JSON keyword arguments for the constructor")
    p.add_argument("--input", action="append", default=[], help="input sizes, e.g. 2,3,64,64 (repeat)")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--train", dest="train", action="store_true", default=True, help="train mode (default)")
    mode.add_argument("--eval", dest="train", action="store_false", help="eval mode")
    p.add_argument("--dropout", action="store_true", help="keep dropout and stochastic depth on")
    p.add_argument("--name", default=None, help="graph and directory name (default MODEL@train|eval)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--rtol", type=float, default=1e-4)
    p.add_argument("--atol", type=float, default=1e-5)
    p.add_argument("--nudges", type=int, default=1,
                   help="--module: float32 runs on inputs nudged by one ulp that the noise floor "
                        "takes the largest deviation of (default 1)")
    args = p.parse_args()
    if args.module:
        if not args.input:
            p.error("--module needs at least one --input")
        try:
            spec = module_spec(args)
            text = record(Exporter(load_op_table(args.op_table)), spec, args.out)
        except ExportError as e:
            print("FAILED %s: %s" % (args.module, e), file=sys.stderr)
            return 1
        if args.print:
            print(text)
        print("recorded %s in %s" % (spec["name"], os.path.join(args.out, spec["name"])))
        return 0
    sys.dont_write_bytecode = True  # no __pycache__ among the fixtures
    sys.path.insert(0, DEFAULT_OUT)
    from fixtures import fixtures  # noqa: E402 (tests/data/torch/fixtures.py)
    specs = fixtures()
    if args.only:
        specs = [s for s in specs if re.search(args.only, s["name"])]
    if args.list:
        print("\n".join(s["name"] for s in specs))
        return 0
    exporter = Exporter(load_op_table(args.op_table))
    failed = []
    for s in specs:
        try:
            text = record(exporter, s, args.out)
            if args.print:
                print(text)
        except ExportError as e:
            failed.append(s["name"])
            print("FAILED %s: %s" % (s["name"], e), file=sys.stderr)
            shutil.rmtree(os.path.join(args.out, s["name"]), ignore_errors=True)
    print("recorded %d fixture(s), %d failed%s" % (len(specs) - len(failed), len(failed),
                                                    (": " + ", ".join(failed)) if failed else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
