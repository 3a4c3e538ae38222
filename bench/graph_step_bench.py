#!/usr/bin/python3
"""Training step from a graph file, aotgrad next to PyTorch eager (issue 18 item 7).

    /usr/bin/python3 bench/graph_step_bench.py [--build build] [--steps N] [--only REGEX]

For each model: exports its raw make_fx training step with tools/export_torch_graph.py (parameters
and buffers as inputs), times PyTorch 1.13's eager step on the same module, inputs and tangents
(forward and autograd.grad of every parameter; min over N steps, after one warm-up), then runs
build/graph_step_bench on the graph (loaded once, run N + 1 times) and prints both wall-clock
steps with the ratio PyTorch / ours (above 1: we are faster), then our CPU times: the least of a
step, and the fixed costs: loading the graph (parse, functionalize), reading the .npy inputs, and
the first step (trace, partition, compile; or the artifact cache).

../shared/bench/torch_peer/run.sh cannot time another PyTorch side than its own three models, so
PyTorch is timed here, in the same invocation, in run.sh's setup when run.sh has unpacked it
(OpenBLAS with its AVX-512 kernels instead of Debian's reference BLAS, a malloc that keeps its
memory): the script re-executes itself under that environment. Both sides use --threads threads
(default 1: the least disturbed on a shared machine). Both wall-clock and CPU
times are printed: on a shared, oversubscribed machine the wall clock mostly measures the other
processes, and the CPU-time ratio (one thread each) is the one to read.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools"))
import export_torch_graph as etg  # noqa: E402

TV = "torchvision.models."
# name, module, constructor kwargs, input shape.
MODELS = [
    ("resnet18", TV + "resnet18", {"num_classes": 10}, "8,3,64,64"),
    ("mobilenet_v3_small", TV + "mobilenet_v3_small", {"num_classes": 10}, "8,3,64,64"),
    ("transformer_encoder", "torch.nn.TransformerEncoderLayer",
     {"d_model": 256, "nhead": 4, "dim_feedforward": 1024, "batch_first": True}, "8,64,256"),
]


def spec_args(module, kwargs, shape, out):
    return argparse.Namespace(module=module, kwargs=json.dumps(kwargs), input=[shape], train=True,
                              dropout=False, name=None, seed=0, rtol=1e-4, atol=1e-5, out=out)


def torch_step_ms(spec, steps):
    """PyTorch's eager step: forward, then autograd.grad of the parameters (as the exporter's
    reference); min over `steps` after one warm-up."""
    inputs = [t.detach().clone() for t in spec["inputs"]]
    grad_inputs = [i for i, t in enumerate(inputs)
                   if t.is_floating_point() and i not in spec["no_grad_inputs"]]
    times, cpu = [], []
    for k in range(steps + 1):
        t0, c0 = time.perf_counter(), time.process_time()
        etg.eager_reference(spec["fn"], inputs, grad_inputs)
        if k:
            times.append((time.perf_counter() - t0) * 1e3)
            cpu.append((time.process_time() - c0) * 1e3)
    return min(times), min(cpu)


def peer_environment():
    """run.sh's PyTorch setup (see its header), when its OpenBLAS is unpacked; else None."""
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    lib = os.path.join(cache, "torch_peer_blas", "root", "usr", "lib", "x86_64-linux-gnu",
                       "openblas-openmp")
    if not os.path.exists(os.path.join(lib, "libblas.so.3")):
        return None
    notrim = "glibc.malloc.mmap_threshold=4294967296:glibc.malloc.trim_threshold=4294967296"
    return dict(os.environ, LD_LIBRARY_PATH=lib, OPENBLAS_CORETYPE="SkylakeX",
                GLIBC_TUNABLES=notrim, GRAPH_STEP_BENCH_PEER="1")


def main():
    if "GRAPH_STEP_BENCH_PEER" not in os.environ:
        env = peer_environment()
        if env is not None:
            os.execve(sys.executable, [sys.executable] + sys.argv, env)
        print("(run.sh's OpenBLAS is not unpacked: PyTorch uses the default BLAS)")
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--only", default=None)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    ours_env = dict(os.environ, OMP_NUM_THREADS=str(args.threads))
    ours_env.pop("LD_LIBRARY_PATH", None)
    ours_env.pop("GLIBC_TUNABLES", None)
    bench = os.path.join(args.build, "graph_step_bench")
    print("torch %s, %d threads; %d steps each (ms; ratio = PyTorch / ours)"
          % (torch.__version__, torch.get_num_threads(), args.steps))
    print("%-20s %8s %8s %6s | %8s %8s %6s | %8s %8s %9s" % (
        "model", "torch", "aotgrad", "ratio", "torch", "aotgrad", "ratio", "load", "read",
        "1st step"))
    print("%-20s %24s | %24s | %s" % ("", "wall ms (min)", "CPU ms (min)", "aotgrad CPU ms"))
    table = etg.load_op_table(os.path.join(etg.DEFAULT_OUT, "op_table.txt"))
    with tempfile.TemporaryDirectory() as work:
        for name, module, kwargs, shape in MODELS:
            if args.only and not re.search(args.only, name):
                continue
            spec = etg.module_spec(spec_args(module, kwargs, shape, work))
            spec["name"] = name
            spec.pop("fn64")  # no noise floor needed here
            etg.record(etg.Exporter(table), spec, work)
            theirs, theirs_cpu = torch_step_ms(spec, args.steps)
            no_grad = ",".join(str(i) for i in spec["no_grad_inputs"]) or "-"
            p = subprocess.run([bench, os.path.join(work, name), no_grad, str(args.steps)],
                               capture_output=True, text=True, env=ours_env)
            if p.returncode != 0:
                print("%-26s failed: %s" % (name, p.stderr.strip()[:200]))
                continue
            ours = dict(kv.split("=") for kv in p.stdout.split())
            ours = {k: float(v) for k, v in ours.items()}
            print("%-20s %8.1f %8.1f %6.2f | %8.1f %8.1f %6.2f | %8.1f %8.1f %9.1f"
                  % (name[:20], theirs, ours["step_min"], theirs / ours["step_min"], theirs_cpu,
                     ours["step_cpu_min"], theirs_cpu / ours["step_cpu_min"], ours["load_cpu"],
                     ours["read_cpu"], ours["first_cpu"]), flush=True)


if __name__ == "__main__":
    main()
