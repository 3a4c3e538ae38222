// The public graph IR (aotgrad/compiler.h): GraphView reads a graph's inputs, nodes, arguments,
// outputs and descriptors; GraphBuilder builds graphs for passes and reports mistakes in one line
// naming the op and argument; a pass that rewrites mul(x, 2) into add(x, x), run as a compiler,
// still matches eager.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "aotgrad/aotgrad.h"
#include "testing/gradcheck.h"
#include "testing/values.h"

namespace ag = aotgrad;
using ag::Tensor;

namespace {

constexpr const char* kMlp = R"(graph forward(%x: f32[4,3], %w: f32[3,2], %b: f32[2]) {
  %mm: f32[4,2] = aten.mm.default(%x, %w)
  %h: f32[4,2] = aten.add.Tensor(%mm, %b, alpha=2)
  %t: f32[4,2] = aten.tanh.default(%h)
  %loss: f32[] = aten.sum.default(%t)
  return (%loss, %t)
}
)";

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

TEST(GraphView, ReadsInputsNodesArgumentsAndOutputs) {
  ag::GraphView g = ag::GraphView::parse(kMlp);
  EXPECT_EQ(g.name(), "forward");
  ASSERT_EQ(g.num_inputs(), 3u);
  EXPECT_EQ(g.input(1).name(), "w");
  EXPECT_EQ(g.input(1).info().sizes, (ag::IntList{3, 2}));
  EXPECT_EQ(g.input(1).dtype(), ag::DType::f32);
  EXPECT_TRUE(g.input(2).is_input());
  EXPECT_EQ(g.input(2).input_index(), 2u);
  EXPECT_FALSE(g.input(0).producer().has_value());

  ASSERT_EQ(g.num_nodes(), 4u);
  ag::NodeView add = g.node(1);
  EXPECT_EQ(add.op(), "aten.add.Tensor");
  ASSERT_EQ(add.num_args(), 3u);  // defaults filled in
  EXPECT_EQ(add.arg_name(2), "alpha");
  EXPECT_EQ(std::get<ag::ValueView>(add.arg(0)).name(), "mm");
  EXPECT_EQ(std::get<ag::Scalar>(add.arg("alpha")).to_double(), 2.0);
  EXPECT_EQ(add.output().name(), "h");
  EXPECT_EQ(add.output().sizes(), (ag::IntList{4, 2}));
  EXPECT_EQ(g.node(2).output().producer()->index(), 2u);

  ASSERT_EQ(g.num_outputs(), 2u);
  EXPECT_EQ(g.output(0).name(), "loss");
  EXPECT_EQ(g.output(0).dtype(), ag::DType::f32);
  EXPECT_EQ(g.to_text(), kMlp);
  EXPECT_NE(error_of([&] { (void)add.arg("beta"); }).find("has no argument 'beta'"),
            std::string::npos);
}

TEST(GraphView, CarriesDescriptorsAndOrigins) {
  ag::GraphView seen_bw = ag::GraphView::parse(kMlp);
  ag::AotConfig cfg;
  cfg.bw_compiler_fn = [&seen_bw](const ag::GraphView& g) {
    seen_bw = g;
    return ag::compile_with("interpreter", g);
  };
  auto h =
      ag::aot_function([](const Tensor& x, const Tensor& w) { return (x * w).tanh().sum(); }, cfg);
  Tensor x = ag::testing::test_input({3}, -1, 1, 1, true);
  Tensor w = ag::testing::test_input({3}, -1, 1, 2, true);
  h(x, w).backward();
  ASSERT_EQ(seen_bw.name(), "backward");
  EXPECT_EQ(seen_bw.input_descriptor(seen_bw.num_inputs() - 1).to_string(), "tangent(output(0))");
  EXPECT_EQ(seen_bw.output_descriptor(0).to_string(), "grad(input(0))");
  bool any_origin = false;
  for (const ag::NodeView& n : seen_bw.nodes()) any_origin = any_origin || !n.origin().empty();
  EXPECT_TRUE(any_origin);
}

TEST(GraphBuilder, BuildsAGraphFromScratchWithMetasFromTheOps) {
  ag::GraphBuilder b("scratch");
  ag::ValueRef x = b.add_input("x", {ag::DType::f32, {2, 3}}, ag::Descriptor::input(0));
  ag::ValueRef w = b.add_input("w", {ag::DType::f32, {3, 4}}, ag::Descriptor::input(1));
  ag::ValueRef mm = b.add_node("aten.mm.default", {x, w})[0];
  ag::ValueRef scaled = b.add_node("aten.mul.Tensor", {mm, mm}, "sq")[0];
  ag::ValueRef s = b.add_node("aten.sum.dim_IntList", {scaled, ag::IntList{1}})[0];
  EXPECT_EQ(b.info(mm).sizes, (ag::IntList{2, 4}));
  EXPECT_EQ(b.info(s).sizes, (ag::IntList{2}));
  b.set_outputs({s}, {ag::Descriptor::output(0)});
  ag::GraphView g = b.build();
  EXPECT_EQ(g.num_nodes(), 3u);
  EXPECT_EQ(g.node(1).output().name(), "sq");
  EXPECT_EQ(g.output_descriptor(0).to_string(), "output(0)");
  // The built graph runs: sum over rows of (x @ w)^2.
  Tensor xv = ag::testing::iota({2, 3});
  Tensor wv = ag::testing::iota({3, 4});
  std::vector<Tensor> out = ag::compile_with("interpreter", g)({xv, wv});
  Tensor mmv = ag::mm(xv, wv);
  EXPECT_TRUE(ag::testing::allclose(out.at(0), ag::sum(mmv * mmv, {1}), 0, 0));
}

TEST(GraphBuilder, MistakesAreOneLineNamingTheOpAndArgument) {
  ag::GraphBuilder b("g");
  ag::ValueRef x = b.add_input("x", {ag::DType::f32, {2, 3}});
  auto msg = [&](std::vector<ag::BuilderArg> args, std::string op = "aten.mm.default") {
    return error_of([&] { b.add_node(op, std::move(args)); });
  };
  EXPECT_NE(msg({x}, "aten.nope.default").find("unknown op 'aten.nope.default'"),
            std::string::npos);
  EXPECT_NE(msg({x}).find("aten.mm.default: missing argument 'mat2'"), std::string::npos);
  EXPECT_NE(msg({x, 2.0}).find("argument 'mat2' (1) should be Tensor but is float"),
            std::string::npos);
  std::string shape = msg({x, x});
  EXPECT_NE(shape.find("GraphBuilder::add_node: "), std::string::npos) << shape;
  EXPECT_NE(shape.find("mm"), std::string::npos) << shape;
  EXPECT_NE(msg({x, ag::ValueRef{99}}).find("value id 99 is not a value of graph g"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              b.add_input("bad", {ag::DType::f32, {2, 3}, {1}});
            }).find("GraphBuilder::add_input: input 'bad'"),
            std::string::npos);
  // A use before the definition (a replacement placed after its new readers) fails build().
  ag::ValueRef t = b.add_node("aten.tanh.default", {x})[0];
  ag::ValueRef e = b.add_node("aten.exp.default", {t})[0];
  ag::ValueRef late = b.add_node("aten.neg.default", {x})[0];
  b.replace_all_uses(t, late);
  b.set_outputs({e});
  std::string order = error_of([&] { b.build(); });
  EXPECT_NE(order.find("verify_graph: node %exp"), std::string::npos) << order;
  for (const std::string& m : {shape, order}) EXPECT_EQ(m.find('\n'), std::string::npos) << m;
}

// The pass a user would write: every mul(x, 2) becomes add(x, x), placed where the mul was.
ag::GraphView mul_by_two_to_add(const ag::GraphView& g) {
  ag::GraphBuilder b(g);
  for (const ag::NodeView& n : g.nodes()) {
    if (n.op() != "aten.mul.Scalar") continue;
    ag::ArgView factor = n.arg(1);
    const auto* k = std::get_if<ag::Scalar>(&factor);
    if (!k || k->to_double() != 2.0) continue;
    ag::ValueRef x = std::get<ag::ValueView>(n.arg(0)).ref();
    b.insert_before(n);
    ag::ValueRef sum = b.add_node("aten.add.Tensor", {x, x})[0];
    b.replace_all_uses(n.output().ref(), sum);
  }
  b.insert_at_end();
  b.eliminate_dead_code();
  return b.build();
}

TEST(GraphBuilder, RewritePassAsACompilerMatchesEager) {
  auto texts = std::make_shared<std::vector<std::string>>();
  ag::AotConfig cfg;
  cfg.fw_compiler_fn = [texts](const ag::GraphView& g) {
    ag::GraphView rewritten = mul_by_two_to_add(g);
    texts->push_back(rewritten.to_text());
    return ag::compile_with("interpreter", rewritten);
  };
  auto fn = [](const Tensor& x, const Tensor& w) { return ((x * 2.0).tanh() * w * 2.0).sum(); };
  auto f = ag::aot_function(fn, cfg);
  Tensor x = ag::testing::test_input({3, 4}, -1, 1, 3, true);
  Tensor w = ag::testing::test_input({3, 4}, -1, 1, 4, true);
  Tensor xe = x.detach().requires_grad_(), we = w.detach().requires_grad_();
  Tensor loss = f(x, w);
  loss.backward();
  Tensor eager = fn(xe, we);
  eager.backward();
  ASSERT_EQ(texts->size(), 2u);  // forward and backward, through the same compiler
  EXPECT_NE(f.graphs().forward.find("aten.mul.Scalar"), std::string::npos);
  EXPECT_EQ((*texts)[0].find("aten.mul.Scalar"), std::string::npos) << (*texts)[0];
  EXPECT_NE((*texts)[0].find("aten.add.Tensor"), std::string::npos) << (*texts)[0];
  EXPECT_TRUE(ag::testing::allclose(loss, eager, 1e-6, 1e-6));
  EXPECT_TRUE(ag::testing::allclose(x.grad(), xe.grad(), 1e-6, 1e-6));
  EXPECT_TRUE(ag::testing::allclose(w.grad(), we.grad(), 1e-6, 1e-6));
}

}  // namespace
