// Samples of op-table rows for the sweeps over every row (tests/autograd/gradgrad_sweep_test.cpp,
// tests/aot/op_sweep_test.cpp): small f64 inputs built from a row's schema, or a hand-written
// sample where the schema alone cannot say what is valid (index tensors, convolution shapes).
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "aotgrad/aotgrad.h"
#include "ops/op.h"
#include "testing/gradcheck.h"

namespace aotgrad::testing::op_samples {

namespace ag = aotgrad;
namespace ops = ag::ops;
using ag::Tensor;

// One call of a row: its arguments, with the checked (f64, requires-grad) tensors listed.
struct Sample {
  ops::OpArgs args;
  std::vector<Tensor> inputs;  // the tensors of `args` gradgradcheck perturbs
  // The checked value from the row's results; null: result 0.
  std::function<Tensor(const std::vector<Tensor>&)> pick = nullptr;
};

// A sweep's list of rows for a failure message: one indented line each.
inline std::string join(const std::vector<std::string>& v) {
  std::string out;
  for (const std::string& s : v) out += "\n  " + s;
  return out;
}

// All results flattened into one vector, so every one of them is checked.
inline Tensor all_results(const std::vector<Tensor>& r) {
  std::vector<Tensor> flat;
  for (const Tensor& t : r) flat.push_back(t.reshape({t.numel()}));
  return ag::cat(flat);
}

inline Tensor input(const ag::IntList& sizes, uint64_t seed) {
  return ag::testing::test_input(sizes, 0.5, 1.5, seed);
}

inline Tensor indices(std::vector<int64_t> v, ag::IntList sizes) {
  return ag::from_vector(v, sizes);
}

// A value for a schema argument without a default, for every tensor of shape `shape`.
inline std::optional<ops::Arg> generic_arg(const ops::ArgSchema& a, const ag::IntList& shape,
                                           Sample& s) {
  switch (a.type) {
    case ops::ArgType::tensor: {
      Tensor t = input(shape, s.inputs.size() + 1);
      s.inputs.push_back(t);
      return t;
    }
    case ops::ArgType::tensor_list: {
      ops::TensorList l;
      for (int i = 0; i < 2; ++i) {
        l.push_back(input(shape, s.inputs.size() + 1));
        s.inputs.push_back(l.back());
      }
      return l;
    }
    case ops::ArgType::scalar:
      return ag::Scalar(1.25);
    case ops::ArgType::int_:
      return int64_t{1};
    case ops::ArgType::float_:
      return 0.75;
    case ops::ArgType::bool_:
      return false;
    case ops::ArgType::int_list:
      if (a.name.find("size") != std::string::npos || a.name.find("shape") != std::string::npos)
        return shape;
      return ag::IntList{1};
    default:
      return std::nullopt;
  }
}

// Arguments for `op` from its schema, with every tensor of shape `shape`; nullopt when an
// argument has no value here or the row rejects the call.
// (floating_result: nullopt too when result 0 is not floating, as a gradient check needs.)
inline std::optional<Sample> generic_sample(const ops::OpDef& op, const ag::IntList& shape,
                                            bool floating_result = true) {
  Sample s;
  for (const ops::ArgSchema& a : op.parsed_schema().args) {
    if (a.default_text || a.optional) break;  // normalize fills the rest
    std::optional<ops::Arg> v = generic_arg(a, shape, s);
    if (!v) return std::nullopt;
    s.args.push_back(*v);
  }
  try {
    ops::normalize(op, s.args);
    ag::NoGradGuard no_grad;
    std::vector<Tensor> out = ops::dispatch(op, s.args);
    if (out.empty() || (floating_result && !ag::is_floating(out[0].dtype()))) return std::nullopt;
  } catch (const std::exception&) {
    return std::nullopt;
  }
  return s;
}

using Samples = std::map<std::string, std::function<Sample()>>;

// A tensor gradgradcheck does not perturb (a mask, a target, running statistics).
inline Tensor constant(const ag::IntList& sizes, uint64_t seed, double lo = 0.5, double hi = 1.5) {
  return ag::testing::test_input(sizes, lo, hi, seed, /*requires_grad=*/false);
}

inline Tensor mask(std::vector<int64_t> v, ag::IntList sizes) {
  return indices(std::move(v), sizes).ne(ag::Scalar(0));
}

// Views, scatters, masks and the backward rows of views.
inline void add_selection_samples(Samples& m) {
  m["aten.where.self"] = [] {
    Tensor a = input({2, 2}, 1), b = input({2, 2}, 2);
    return Sample{{mask({1, 0, 0, 1}, {2, 2}), a, b}, {a, b}};
  };
  m["aten.permute.default"] = [] {
    Tensor x = input({2, 3, 2}, 1);
    return Sample{{x, ag::IntList{2, 0, 1}}, {x}};
  };
  m["aten.select_backward.default"] = [] {
    Tensor g = input({2, 3}, 1);
    return Sample{{g, ag::IntList{2, 4, 3}, int64_t{1}, int64_t{2}}, {g}};
  };
  m["aten.slice_backward.default"] = [] {
    Tensor g = input({2, 2}, 1);
    return Sample{{g, ag::IntList{2, 5}, int64_t{1}, int64_t{1}, int64_t{5}, int64_t{2}}, {g}};
  };
  m["aten.fill.Tensor"] = [] {
    Tensor x = input({2, 2}, 1), v = input({}, 2);
    return Sample{{x, v}, {x, v}};
  };
  m["aten.select_scatter.default"] = [] {
    Tensor x = input({2, 3}, 1), src = input({2}, 2);
    return Sample{{x, src, int64_t{1}, int64_t{1}}, {x, src}};
  };
  m["aten.clamp.default"] = [] {
    Tensor x = input({2, 3}, 1);
    return Sample{{x, ag::Scalar(0.7), ag::Scalar(1.3)}, {x}};
  };
  m["aten.index_add.default"] = [] {
    Tensor x = input({3, 2}, 1), src = input({3, 2}, 2);
    return Sample{{x, int64_t{0}, indices({1, 0, 1}, {3}), src}, {x, src}};
  };
  m["aten.scatter_add.default"] = [] {
    Tensor x = input({2, 3}, 1), src = input({2, 2}, 2);
    return Sample{{x, int64_t{1}, indices({0, 2, 1, 1}, {2, 2}), src}, {x, src}};
  };
  m["aten.masked_fill.Scalar"] = [] {
    Tensor x = input({2, 2}, 1);
    return Sample{{x, mask({0, 1, 1, 0}, {2, 2}), ag::Scalar(0.5)}, {x}};
  };
  m["aten.masked_fill.Tensor"] = [] {
    Tensor x = input({2, 2}, 1), v = input({}, 2);
    return Sample{{x, mask({0, 1, 1, 0}, {2, 2}), v}, {x, v}};
  };
  m["aten.constant_pad_nd.default"] = [] {
    Tensor x = input({2, 2}, 1);
    return Sample{{x, ag::IntList{1, 0, 0, 2}, ag::Scalar(0.25)}, {x}};
  };
  m["aten.index.Tensor"] = [] {
    Tensor x = input({3, 2}, 1);
    return Sample{{x, ops::TensorList{indices({2, 0, 2}, {3})}}, {x}};
  };
  m["aten.index_put.default"] = [] {
    Tensor x = input({3, 2}, 1), v = input({2, 2}, 2);
    return Sample{{x, ops::TensorList{indices({2, 0}, {2})}, v, false}, {x, v}};
  };
  m["aten.embedding_dense_backward.default"] = [] {
    Tensor g = input({4, 3}, 1);
    return Sample{{g, indices({0, 2, 2, 3}, {4}), int64_t{5}, int64_t{-1}, false}, {g}};
  };
}

// Normalization, pooling, resampling, dropout and losses.
inline void add_nn_samples(Samples& m) {
  m["aten.native_layer_norm.default"] = [] {
    Tensor x = input({2, 3}, 1), w = input({3}, 2), b = input({3}, 3);
    return Sample{{x, ag::IntList{3}, w, b, 1e-5}, {x, w, b}};
  };
  m["aten._native_batch_norm_legit_functional.default"] = [] {
    Tensor x = input({3, 2}, 1), w = input({2}, 2), b = input({2}, 3);
    return Sample{{x, w, b, constant({2}, 4), constant({2}, 5), true, 0.1, 1e-5}, {x, w, b}};
  };
  m["aten.native_dropout_backward.default"] = [] {
    Tensor g = input({2, 2}, 1);
    return Sample{{g, mask({1, 0, 1, 1}, {2, 2}), 2.0}, {g}};
  };
  m["aten.avg_pool2d_backward.default"] = [] {
    Tensor g = input({1, 1, 2, 2}, 1), x = input({1, 1, 4, 4}, 2);
    return Sample{{g, x, ag::IntList{2, 2}, ag::IntList{2, 2}, ag::IntList{0, 0}, false, true,
                   std::monostate{}},
                  {g, x}};
  };
  m["aten._adaptive_avg_pool2d.default"] = [] {
    Tensor x = input({1, 3, 4}, 1);
    return Sample{{x, ag::IntList{2, 3}}, {x}};
  };
  m["aten._adaptive_avg_pool2d_backward.default"] = [] {
    Tensor g = input({1, 2, 3}, 1), x = input({1, 3, 4}, 2);
    return Sample{{g, x}, {g, x}};
  };
  m["aten.upsample_bilinear2d.default"] = [] {
    Tensor x = input({1, 1, 2, 3}, 1);
    return Sample{{x, ag::IntList{3, 4}, false}, {x}};
  };
  m["aten.upsample_bilinear2d_backward.default"] = [] {
    Tensor g = input({1, 1, 3, 4}, 1);
    return Sample{{g, ag::IntList{3, 4}, ag::IntList{1, 1, 2, 3}, true}, {g}};
  };
  m["aten.binary_cross_entropy.default"] = [] {
    Tensor x = ag::testing::test_input({2, 2}, 0.2, 0.8, 1);
    return Sample{{x, constant({2, 2}, 2, 0.0, 1.0)}, {x}};
  };
  m["aten.binary_cross_entropy_backward.default"] = [] {
    Tensor g = input({}, 1), x = ag::testing::test_input({2, 2}, 0.2, 0.8, 2);
    return Sample{{g, x, constant({2, 2}, 3, 0.0, 1.0)}, {g, x}};
  };
  m["aten.smooth_l1_loss_backward.default"] = [] {
    Tensor g = input({2, 2}, 1), x = input({2, 2}, 2), t = input({2, 2}, 3);
    return Sample{{g, x, t, int64_t{0}, 1.0}, {g, x, t}};
  };
  m["aten.huber_loss_backward.default"] = [] {
    Tensor g = input({}, 1), x = input({2, 2}, 2), t = input({2, 2}, 3);
    return Sample{{g, x, t, int64_t{2}, 1.0}, {g, x, t}};
  };
  m["aten.norm.ScalarOpt_dim"] = [] {
    Tensor x = input({2, 3}, 1);
    return Sample{{x, ag::Scalar(2.0), ag::IntList{1}}, {x}};
  };
}

// Rows whose valid arguments the schema does not tell (index tensors, geometry).
inline Samples hand_written() {
  Samples m;
  add_selection_samples(m);
  add_nn_samples(m);
  m["aten.convolution.default"] = [] {
    Tensor x = input({1, 2, 4, 4}, 1), w = input({2, 2, 3, 3}, 2), b = input({2}, 3);
    return Sample{{x, w, b, ag::IntList{1, 1}, ag::IntList{1, 1}, ag::IntList{1, 1}, false,
                   ag::IntList{0, 0}, int64_t{1}},
                  {x, w, b}};
  };
  m["aten.convolution_backward.default"] = [] {
    // Stride 2 over 6 padded columns with a dilated 3-wide kernel leaves the last one unread.
    Tensor g = input({1, 2, 2, 2}, 1), x = input({1, 2, 4, 4}, 2), w = input({2, 1, 2, 2}, 3);
    return Sample{{g, x, w, ag::IntList{2}, ag::IntList{2, 2}, ag::IntList{1, 1}, ag::IntList{2, 2},
                   false, ag::IntList{0, 0}, int64_t{2}, ag::IntList{1, 1, 1}},
                  {g, x, w},
                  all_results};
  };
  m["aten._softmax_backward_data.default"] = [] {
    Tensor g = input({2, 3}, 1), y = ag::softmax(input({2, 3}, 2), 1).detach().requires_grad_();
    return Sample{{g, y, int64_t{1}, ag::DType::f64}, {g, y}};
  };
  m["aten._log_softmax_backward_data.default"] = [] {
    Tensor g = input({2, 3}, 1);
    Tensor y = ag::log_softmax(input({2, 3}, 2), 0).detach().requires_grad_();
    return Sample{{g, y, int64_t{0}, ag::DType::f64}, {g, y}};
  };
  m["aten.nll_loss_backward.default"] = [] {
    Tensor g = input({}, 1), x = input({3, 4}, 2);
    Tensor w = ag::from_vector(std::vector<double>{0.5, 1.0, 2.0, 1.5}, {4});
    Tensor total = ag::from_vector(std::vector<double>{2.0}, {});
    return Sample{{g, x, indices({1, 0, 3}, {3}), w, int64_t{1}, int64_t{0}, total}, {g, x}};
  };
  m["aten.mse_loss_backward.default"] = [] {
    Tensor g = input({2, 3}, 1), x = input({2, 3}, 2), t = input({3}, 3);
    return Sample{{g, x, t, int64_t{0}}, {g, x, t}};
  };
  m["aten.max_pool2d_with_indices_backward.default"] = [] {
    Tensor g = input({1, 2, 2}, 1), x = input({1, 4, 4}, 2);
    Tensor idx = std::get<1>(ag::max_pool2d_with_indices(x.detach(), {2, 2}));
    return Sample{{g, x, ag::IntList{2, 2}, ag::IntList{2, 2}, ag::IntList{0, 0}, ag::IntList{1, 1},
                   false, idx},
                  {g, x}};
  };
  m["aten.embedding.default"] = [] {
    Tensor w = input({4, 3}, 1);
    return Sample{{w, indices({0, 2, 2, 3}, {4})}, {w}};
  };
  m["aten.index_select.default"] = [] {
    Tensor x = input({3, 2}, 1);
    return Sample{{x, int64_t{0}, indices({2, 0, 2}, {3})}, {x}};
  };
  m["aten.gather.default"] = [] {
    Tensor x = input({2, 3}, 1);
    return Sample{{x, int64_t{1}, indices({0, 2, 1, 1}, {2, 2})}, {x}};
  };
  m["aten.nll_loss_forward.default"] = [] {
    Tensor x = ag::log_softmax(input({3, 4}, 1), 1).detach().requires_grad_();
    return Sample{{x, indices({1, 0, 3}, {3}), ag::Tensor(), int64_t{1}, int64_t{-100}}, {x}};
  };
  m["aten.max_pool2d_with_indices.default"] = [] {
    Tensor x = input({1, 1, 4, 4}, 1);
    return Sample{{x, ag::IntList{2, 2}}, {x}};
  };
  m["aten.avg_pool2d.default"] = [] {
    Tensor x = input({1, 1, 4, 4}, 1);
    return Sample{{x, ag::IntList{2, 2}}, {x}};
  };
  return m;
}

}  // namespace aotgrad::testing::op_samples
