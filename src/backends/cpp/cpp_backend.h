// The cpp backend: fuses a graph's pointwise nodes into generated C++ kernels, compiles them with
// the system compiler, loads them, and runs the schedule.
//
// Needs: a verified graph whose only in-place ops write graph inputs. Guarantees: the same results
// as the interpreter backend (bitwise for extern steps; generated kernels may differ from the eager
// ones by a few ulp in exp/tanh/log and friends, as they use the C library's functions); each value
// is released right after its last use; graph outputs are the buffers the steps wrote (no copy).
// The returned callable is reentrant. compile_cpp returns once the graph is scheduled and its
// source written: the C++ compiler runs on a thread of its own (a cached object is loaded at once),
// and the callable's first call waits for it. A compiler that cannot be run throws from
// compile_cpp; a compilation error is thrown, as std::runtime_error naming the kept source file,
// by every call of the callable.
#pragma once

#include "backends/backend.h"

namespace aotgrad::backends {

// Switches for measuring the optimizations one by one (bench/cpp_bench); the defaults are what
// the registered "cpp" compiler uses.
struct CppOptions {
  bool gemm_epilogues = true;  // products with their activation / residual add as post-ops
  bool reuse_buffers = true;   // kernels writing over an input that dies there
  bool cat_fusion = true;      // kernels writing into their slice of a cat's result
  // Convolutions with their activation / residual add as oneDNN post-ops. Off: with oneDNN 2.6
  // here the GEMM-based convolution runs post-ops slower than the separate ops (bench/conv_bench:
  // relu(conv3x3(x)) 0.78x, relu(conv3x3(x) + x) 0.54x of eager), so convolutions stay extern
  // calls followed by a generated kernel; on for re-measuring with another oneDNN.
  bool conv_epilogues = false;
  // A recomputed attention and its backward as one step computing the weights once
  // (attention_pairs.h).
  bool attention_pairs = true;
};

CompiledGraph compile_cpp(const graph::Graph& g, const CppOptions& options = {});

// What compile_cpp builds for `g`, as `aotgrad show --code` and AOTGRAD_DUMP show it: one comment
// line per step of the schedule (extern call, generated kernel, GEMM with its post-ops, and the
// buffers kernels take over), then the generated source. Compiles nothing.
std::string cpp_code(const graph::Graph& g, const CppOptions& options = {});

}  // namespace aotgrad::backends
