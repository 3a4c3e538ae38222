// Schema defaults are read once per op row (OpDef::Derived::omitted), for the built-in rows and
// for custom ops registered at run time, and normalize fills omitted arguments from there.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "aotgrad/custom_op.h"
#include "ops/op.h"

namespace aotgrad::ops {
namespace {

template <typename T>
const T& omitted_as(const OpDef& op, size_t i) {
  const std::optional<Arg>& a = op.derived->omitted.at(i);
  EXPECT_TRUE(a.has_value()) << op.name << " argument " << i;
  return std::get<T>(*a);
}

TEST(OmittedDefaults, BuiltInRowsCarryTypedDefaults) {
  const OpDef& pool = lookup("aten.max_pool2d_with_indices.default");
  ASSERT_EQ(pool.derived->omitted.size(), pool.parsed_schema().args.size());
  EXPECT_FALSE(pool.derived->omitted[0].has_value());  // self: must be given
  EXPECT_FALSE(pool.derived->omitted[1].has_value());  // kernel_size: must be given
  EXPECT_EQ(omitted_as<IntList>(pool, 2), IntList{});
  EXPECT_EQ(omitted_as<IntList>(pool, 3), (IntList{0, 0}));
  EXPECT_EQ(omitted_as<IntList>(pool, 4), (IntList{1, 1}));
  EXPECT_EQ(omitted_as<bool>(pool, 5), false);

  const OpDef& add = lookup("aten.add.Tensor");
  EXPECT_TRUE(omitted_as<Scalar>(add, 2).is_integral());
  EXPECT_EQ(omitted_as<Scalar>(add, 2).to_int(), 1);

  // normalize fills them in, typed, and still refuses a missing required argument.
  OpArgs args{Tensor(), IntList{2, 2}};
  normalize(pool, args);
  ASSERT_EQ(args.size(), 6u);
  EXPECT_EQ(std::get<IntList>(args[4]), (IntList{1, 1}));
  EXPECT_EQ(std::get<bool>(args[5]), false);
  OpArgs too_few{Tensor()};
  EXPECT_THROW(normalize(pool, too_few), std::invalid_argument);
}

std::vector<TensorSpec> same_spec(const aotgrad::OpArgs& a) {
  const Tensor& x = std::get<Tensor>(a[0]);
  return {{x.dtype(), x.sizes()}};
}
std::vector<Tensor> identity(const aotgrad::OpArgs& a) {
  return {std::get<Tensor>(a[0])};
}

TEST(OmittedDefaults, RunTimeRowsToo) {
  // A dtype default other than None does not read as its type: the row still registers, a call
  // that gives the argument works, one that omits it names the argument.
  const std::string name =
      register_op({.schema = "omitted_test::f(Tensor x, int k=3, float? s=None, "
                             "ScalarType dt=float32) -> Tensor",
                   .meta = same_spec,
                   .kernel = identity});
  const OpDef& f = lookup(name);
  ASSERT_EQ(f.derived->omitted.size(), 4u);
  EXPECT_EQ(omitted_as<int64_t>(f, 1), 3);
  EXPECT_TRUE(std::holds_alternative<std::monostate>(*f.derived->omitted[2]));
  EXPECT_FALSE(f.derived->omitted[3].has_value());

  OpArgs given{Tensor(), int64_t{5}, std::monostate{}, DType::f64};
  normalize(f, given);
  EXPECT_EQ(std::get<int64_t>(given[1]), 5);
  OpArgs omits{Tensor()};
  try {
    normalize(f, omits);
    FAIL() << "an unreadable default was filled in";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("argument 'dt'"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace aotgrad::ops
