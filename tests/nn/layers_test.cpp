// Each layer's forward (and, for parameterised layers, its gradients) against PyTorch with fixed
// weights. Inputs and weights come from pattern(); the expected values were printed by PyTorch
// 1.13 from the same pattern and pasted here:
//   def pattern(n, phase, scale): return [(((i*37 + phase) % 101) / 101.0 - 0.5) * scale for i in
//   range(n)] T(sizes, phase, scale) = torch.tensor(pattern(prod(sizes), phase, scale),
//   dtype=float64).reshape(sizes).float()
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "aotgrad/aotgrad.h"
#include "aotgrad/nn.h"
#include "testing/gradcheck.h"

namespace ag = aotgrad;
namespace nn = aotgrad::nn;
using ag::DType;
using ag::Tensor;

namespace {

Tensor pattern(const ag::IntList& sizes, int phase, double scale, DType dtype = DType::f32) {
  std::vector<double> v;
  for (int64_t i = 0; i < ag::numel_of(sizes); ++i)
    v.push_back((((i * 37 + phase) % 101) / 101.0 - 0.5) * scale);
  return ag::from_vector(v, sizes).to(dtype);
}

// Overwrites a parameter's values without recording history.
void set(Tensor& param, const Tensor& values) {
  ag::NoGradGuard no_grad;
  param.copy_(values);
}

void expect_values(const Tensor& t, const std::vector<double>& want, double tol = 1e-6) {
  std::vector<double> got = t.to_vector<double>();
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_NEAR(got[i], want[i], tol * (1 + std::abs(want[i]))) << "element " << i;
}

}  // namespace

TEST(NnLayers, LinearMatchesTorch) {
  nn::LinearImpl lin(4, 3);
  set(lin.weight, pattern({3, 4}, 1, 1.0));
  set(lin.bias, pattern({3}, 2, 0.5));
  Tensor x = pattern({2, 4}, 5, 2.0).requires_grad_();
  Tensor y = lin(x);
  expect_values(y, {0.6341290473937988, -0.30916085839271545, 0.18319281935691833,
                    -0.5605578422546387, 0.3671453893184662, -0.20020094513893127});
  y.backward(pattern({2, 3}, 7, 1.0));
  expect_values(lin.weight.grad(), {0.3781982362270355, -0.18037447333335876, -0.07558082044124603,
                                    0.22723263502120972, 0.05901382863521576, 0.03725125268101692,
                                    -0.05381825566291809, 0.05313204973936081, -0.260170578956604,
                                    0.2548770010471344, -0.03205569088459015, -0.1209685429930687});
  expect_values(lin.bias.grad(), {-0.7623761892318726, -0.02970297262072563, 0.7029702663421631});
  expect_values(x.grad(), {0.3457258939743042, -0.02698265016078949, -0.03335457667708397,
                           0.024629950523376465, 0.33837366104125977, -0.024531908333301544,
                           -0.02110087126493454, -0.052323296666145325});
  EXPECT_THROW(lin(ag::ones({2, 5})), std::invalid_argument);
  nn::LinearImpl no_bias(4, 3, false);
  EXPECT_FALSE(no_bias.bias.defined());
  EXPECT_EQ(no_bias(ag::ones({5, 2, 4})).sizes(), (ag::IntList{5, 2, 3}));
}

TEST(NnLayers, GeluBothApproximationsMatchTorch) {
  Tensor x = pattern({7}, 9, 8.0);
  expect_values(nn::GELUImpl()(x), {-0.0016637237276881933, -0.12858673930168152,
                                    2.5613274574279785, -0.015711307525634766, 0.2912069261074066,
                                    3.365054130554199, -0.07541908323764801});
  expect_values(
      nn::GELUImpl("tanh")(x),
      {-0.0013736521359533072, -0.12859156727790833, 2.5617878437042236, -0.01527311373502016,
       0.2911965847015381, 3.3653087615966797, -0.07555017620325089});
  EXPECT_THROW(nn::GELUImpl("fast"), std::invalid_argument);
}

// ---- layers that need the indexing / normalization / convolution ops ----

namespace {

double checksum(const Tensor& t) {
  return (t.detach().to(DType::f64) * pattern(t.sizes(), 13, 1.0, DType::f64)).sum().item<double>();
}

// Gives every parameter pattern values (LayerNorm weights of blocks around 1), in
// named_parameters() order, as the PyTorch script does.
void set_params(nn::Module& m) {
  auto named = m.named_parameters();
  for (size_t i = 0; i < named.size(); ++i) {
    const std::string& name = named[i].first;
    bool ln_weight = name.ends_with("ln1.weight") || name.ends_with("ln2.weight");
    set(named[i].second, pattern(named[i].second.sizes(), static_cast<int>(3 + 7 * i), 0.5) +
                             (ln_weight ? 1.0 : 0.0));
  }
}

// Backward with pattern(7) as the output gradient, then each parameter's gradient checksum.
void expect_grad_checksums(nn::Module& m, const Tensor& y,
                           const std::vector<std::pair<std::string, double>>& want) {
  y.backward(pattern(y.sizes(), 7, 1.0));
  auto named = m.named_parameters();
  ASSERT_EQ(named.size(), want.size());
  for (size_t i = 0; i < named.size(); ++i) {
    EXPECT_EQ(named[i].first, want[i].first);
    EXPECT_NEAR(checksum(named[i].second.grad()), want[i].second,
                2e-5 * (1 + std::abs(want[i].second)))
        << named[i].first;
  }
}

void expect_checksum(const Tensor& t, double want) {
  EXPECT_NEAR(checksum(t), want, 2e-5 * (1 + std::abs(want)));
}

}  // namespace

TEST(NnLayers, LayerNormMatchesTorch) {
  nn::LayerNormImpl ln({4});
  set_params(ln);
  Tensor x = pattern({2, 3, 4}, 5, 3.0).requires_grad_();
  Tensor y = ln(x);
  expect_values(
      y, {0.04772874712944031, -0.0295705683529377,  0.36612656712532043,   -0.019806141033768654,
          -0.1491575390100479, -0.08995579183101654, -0.017460346221923828, -0.19151970744132996,
          -0.5085533857345581, 0.010361101478338242, 0.23572039604187012,   0.09221383184194565,
          -0.1491575390100479, -0.08995579183101654, -0.017460346221923828, -0.19151970744132996,
          -0.5085533857345581, 0.010361101478338242, 0.23572039604187012,   0.09221383184194565,
          -0.1491575390100479, -0.08995579183101654, -0.01746036298573017,  -0.19151970744132996},
      1e-5);
  expect_grad_checksums(ln, y, {{"weight", 0.16300290262345035}, {"bias", 0.42113519356687473}});
  expect_checksum(x.grad(), -0.036431038228905574);

  nn::LayerNormImpl ln2({3, 4});
  set_params(ln2);
  Tensor x2 = pattern({2, 3, 4}, 5, 3.0).requires_grad_();
  Tensor y2 = ln2(x2);
  expect_values(
      y2, {0.13349401950836182,  -0.006174716167151928, 0.2958812117576599,   0.05218631029129028,
           0.03190261125564575,  0.45334357023239136,   0.003144816728308797, 0.10224616527557373,
           0.14307215809822083,  -0.013630440458655357, 0.20485594868659973,  0.10571371018886566,
           -0.1876998394727707,  -0.08426585793495178,  0.0302123986184597,   -0.20823180675506592,
           0.028092732653021812, 0.09408389031887054,   -0.19284740090370178, 0.004058921709656715,
           -0.30612823367118835, -0.14154663681983948,  0.006872595753520727, -0.1976306438446045},
      1e-5);
  expect_grad_checksums(ln2, y2, {{"weight", 0.7047689856574086}, {"bias", 0.6809136171152097}});
  expect_checksum(x2.grad(), 0.09684689395535406);
  EXPECT_EQ(nn::LayerNormImpl({4}, 1e-5, false).parameters().size(), 0u);
}

TEST(NnLayers, EmbeddingMatchesTorchWithPaddingIdx) {
  nn::EmbeddingImpl emb(5, 3, 2);
  for (float v : emb.weight.select(0, 2).to_vector<float>())
    EXPECT_EQ(v, 0.0f);  // padding row starts at zero
  set(emb.weight, pattern({5, 3}, 1, 1.0));
  Tensor idx = ag::from_vector(std::vector<int64_t>{0, 2, 4, 2}, {2, 2});
  Tensor y = emb(idx);
  expect_values(
      y, {-0.4900990128517151, -0.12376237660646439, 0.24257425963878632, -0.29207921028137207,
          0.07425742596387863, 0.44059404730796814, -0.09405940771102905, 0.27227723598480225,
          -0.36138615012168884, -0.29207921028137207, 0.07425742596387863, 0.44059404730796814});
  y.backward(pattern({2, 2, 3}, 7, 1.0));
  expect_values(emb.weight.grad(),
                {-0.4306930601596832, -0.06435643881559372, 0.301980197429657, 0.0, 0.0, 0.0, 0.0,
                 0.0, 0.0, 0.0, 0.0, 0.0, -0.2326732724905014, 0.1336633712053299, -0.5});
  EXPECT_THROW(emb(ag::ones({2})), std::invalid_argument);
  EXPECT_THROW(nn::EmbeddingImpl(5, 3, 5), std::invalid_argument);
  EXPECT_EQ(*nn::EmbeddingImpl(5, 3, -1).options.padding_idx(), 4);
}

TEST(NnLayers, CausalSelfAttentionMatchesTorch) {
  nn::CausalSelfAttention attn(4, 2, 6);
  EXPECT_EQ(attn.named_buffers()[0].first, "mask");
  set_params(attn);
  Tensor x = pattern({2, 3, 4}, 5, 2.0).requires_grad_();
  Tensor y = attn(x);
  expect_values(
      y, {-0.07977038621902466,  -0.020673811435699463, 0.28842276334762573, -0.022701740264892578,
          -0.059369415044784546, 0.005003973841667175,  0.3214784264564514,  -0.08763498812913895,
          -0.05337166041135788,  0.006662759929895401,  0.3254808485507965,  -0.10008372366428375,
          -0.03792363405227661,  0.033867768943309784,  0.3556591868400574,  -0.15429386496543884,
          -0.041642382740974426, 0.025353383272886276,  0.3422936201095581,  -0.13906897604465485,
          -0.039723753929138184, 0.02906331792473793,   0.3478594720363617,  -0.1450546681880951},
      1e-5);
  expect_grad_checksums(attn, y,
                        {{"qkv.weight", -0.08235959355738263},
                         {"qkv.bias", -0.09607670496325676},
                         {"proj.weight", -0.241352486958967},
                         {"proj.bias", 0.42113519356687473}});
  expect_checksum(x.grad(), -0.02407512525231969);
  EXPECT_THROW(attn(ag::ones({1, 7, 4})), std::invalid_argument);  // longer than block_size
  EXPECT_THROW(nn::CausalSelfAttention(6, 4, 8), std::invalid_argument);
}

TEST(NnLayers, TransformerBlockMatchesTorch) {
  nn::TransformerBlock block(8, 2, 6, 16);
  set_params(block);
  Tensor x = pattern({2, 5, 8}, 5, 2.0).requires_grad_();
  Tensor y = block(x);
  expect_checksum(y, 7.192535518456508);
  expect_grad_checksums(block, y,
                        {{"ln1.weight", -0.05940667718722681},
                         {"ln1.bias", -0.04563145254194588},
                         {"attn.qkv.weight", 1.6842377049491701},
                         {"attn.qkv.bias", 0.09861260479071761},
                         {"attn.proj.weight", 0.7654059865687153},
                         {"attn.proj.bias", -0.4258734521151769},
                         {"ln2.weight", 0.034699563969775},
                         {"ln2.bias", 0.11918510026344567},
                         {"mlp.fc1.weight", 0.9789688908264482},
                         {"mlp.fc1.bias", -0.00557871693560838},
                         {"mlp.fc2.weight", -1.544452462465235},
                         {"mlp.fc2.bias", -0.5014214488760669}});
  expect_checksum(x.grad(), 4.9689185524884945);
}

TEST(NnLayers, DropoutTrainEvalAndSeed) {
  nn::DropoutImpl drop(0.4);
  Tensor x = ag::ones({20000});
  ag::manual_seed(11);
  Tensor y = drop(x);
  std::vector<float> v = y.to_vector<float>();
  int64_t zeros = 0;
  for (float e : v) {
    if (e == 0.0f)
      ++zeros;
    else
      EXPECT_FLOAT_EQ(e, 1.0f / 0.6f);
  }
  EXPECT_NEAR(static_cast<double>(zeros) / 20000.0, 0.4, 0.02);
  ag::manual_seed(11);
  EXPECT_EQ(drop(x).to_vector<float>(), v);  // same seed, same mask
  drop.eval();
  EXPECT_EQ(drop(x).to_vector<float>(), x.to_vector<float>());
  drop.train();
  EXPECT_EQ(nn::DropoutImpl(0.0)(x).to_vector<float>(), x.to_vector<float>());
  EXPECT_THROW(nn::DropoutImpl(1.5), std::invalid_argument);
}

TEST(NnLayers, Conv2dMatchesTorch) {
  nn::Conv2dImpl conv(2, 3, {3}, {1}, {1});
  set_params(conv);
  Tensor x = pattern({1, 2, 4, 4}, 5, 2.0).requires_grad_();
  Tensor y = conv(x);
  expect_values(
      y, {0.037079691886901855, 0.026786595582962036,  -0.28783947229385376,  -0.39724045991897583,
          0.1993677318096161,   -0.13927558064460754,  -0.4401284456253052,   -0.22456131875514984,
          -0.07016468048095703, -0.2387266755104065,   -0.881163477897644,    0.059234388172626495,
          -0.0986422747373581,  -0.3782227635383606,   -0.6033477187156677,   -0.05869525671005249,
          0.1717233806848526,   -0.45311734080314636,  -0.057224810123443604, 0.20951375365257263,
          -0.5612930059432983,  -0.007278716191649437, 0.1932898461818695,    0.2625477612018585,
          -0.20657289028167725, -0.1307469755411148,   0.3222968280315399,    0.041883137077093124,
          0.1967209130525589,   -0.015562213957309723, 0.20250461995601654,   -0.11795412003993988,
          0.2618125379085541,   0.11153317987918854,   0.5842809677124023,    -0.18868248164653778,
          0.09883838891983032,  0.6742231249809265,    0.009876484051346779,  -0.4236104190349579,
          0.5431575179100037,   0.06139101833105087,   0.24357907474040985,   0.316611111164093,
          0.07129202783107758,  0.3322468101978302,    -0.3728311061859131,   0.20892557501792908},
      1e-5);
  expect_grad_checksums(conv, y, {{"weight", -0.531671413192802}, {"bias", 0.5752867193210243}});
  expect_checksum(x.grad(), 0.06830139580818975);

  nn::Conv2dImpl grouped(4, 2, {3, 2}, {2}, {1, 0}, {1}, /*groups=*/2, /*bias=*/false);
  EXPECT_EQ(grouped.weight.sizes(), (ag::IntList{2, 2, 3, 2}));
  set_params(grouped);
  Tensor xg = pattern({2, 4, 5, 5}, 5, 2.0).requires_grad_();
  Tensor yg = grouped(xg);
  expect_values(
      yg, {-0.37486523389816284,  0.8256053924560547,    0.7691892385482788,   -0.46779724955558777,
           -0.3355063199996948,   -0.08793257176876068,  0.05033819377422333,  0.5870012640953064,
           0.7573766708374023,    -0.53225177526474,     -0.41177335381507874, 0.09278503805398941,
           0.7971767783164978,    -0.26472893357276917,  -0.421723335981369,   -0.2082148790359497,
           -0.031075390055775642, 0.3749142289161682,    0.2300264537334442,   -0.35212233662605286,
           -0.4369179606437683,   -0.018625637516379356, 0.03396723419427872,  0.3652583062648773},
      1e-5);
  expect_grad_checksums(grouped, yg, {{"weight", 0.34673258898281817}});
  expect_checksum(xg.grad(), 0.05575967880573477);
  EXPECT_THROW(nn::Conv2dImpl(3, 4, {3}, {1}, {0}, {1}, 2), std::invalid_argument);
}

TEST(NnLayers, BatchNorm2dTrainUpdatesRunningStatsEvalUsesThem) {
  nn::BatchNorm2dImpl bn(3, 1e-5, 0.2);
  set_params(bn);
  Tensor x = pattern({4, 3, 2, 2}, 5, 3.0).requires_grad_();
  Tensor y = bn(x);
  expect_values(
      y, {0.16902999579906464,   -0.12779337167739868, -0.4246167540550232,   0.08880745619535446,
          -0.025344576686620712, -0.09219757467508316, 0.0234400425106287,    -0.0434129536151886,
          0.3814462423324585,    0.0976683720946312,   0.2617274522781372,    -0.0220504067838192,
          -0.15186013281345367,  -0.448683500289917,   0.06474070250988007,   -0.23208267986774445,
          -0.09761808812618256,  0.018019530922174454, -0.048833467066287994, 0.06680414825677872,
          0.11097045987844467,   0.2750295400619507,   -0.008748331107199192, 0.1553107500076294,
          -0.4727502763271332,   0.04067394882440567,  -0.25614944100379944,  -0.5529728531837463,
          0.012599015608429909,  -0.05425398051738739, 0.06138363853096962,   -0.005469360388815403,
          0.28833162784576416,   0.004553761333227158, 0.16861283779144287,   0.3326719403266907,
          0.01660717837512493,   -0.28021618723869324, -0.5770395398139954,   -0.0636153444647789,
          -0.059674497693777084, 0.055963125079870224, -0.010889873839914799, -0.07774287462234497,
          0.017855852842330933,  0.18191492557525635,  0.34597399830818176,   0.062196142971515656},
      1e-5);
  expect_grad_checksums(bn, y, {{"weight", -0.6467422069889486}, {"bias", -0.40402897226043266}});
  expect_checksum(x.grad(), 0.11474682146953576);
  expect_values(bn.running_mean,
                {0.0033415858633816242, -0.017450494691729546, -0.0007425731746479869}, 1e-5);
  expect_values(bn.running_var, {0.9617128372192383, 0.9557722210884094, 0.9647573828697205}, 1e-5);
  EXPECT_EQ(bn.num_batches_tracked.item<int64_t>(), 1);
  bn.eval();
  expect_checksum(bn(pattern({4, 3, 2, 2}, 9, 3.0)), -0.14118981574740413);
  EXPECT_EQ(bn.num_batches_tracked.item<int64_t>(), 1);
  EXPECT_THROW(bn(ag::ones({4, 2, 2, 2})), std::invalid_argument);
}

TEST(NnLayers, MaxPool2dMatchesTorch) {
  Tensor x = pattern({1, 2, 5, 5}, 5, 2.0).requires_grad_();
  Tensor y = nn::MaxPool2dImpl(2)(x);
  expect_values(y,
                {0.7623762488365173, 0.9603960514068604, 0.8217821717262268, 0.6237623691558838,
                 0.14851485192775726, 0.8811880946159363, 0.7425742745399475, 0.9405940771102905});
  y.backward(pattern(y.sizes(), 7, 1.0));
  expect_values(x.grad(), {0.0,
                           0.0,
                           0.0,
                           0.0,
                           0.0,
                           -0.4306930601596832,
                           0.0,
                           0.0,
                           -0.06435643881559372,
                           0.0,
                           0.0,
                           0.0,
                           0.0,
                           -0.3316831588745117,
                           0.0,
                           0.0,
                           0.301980197429657,
                           0.0,
                           0.0,
                           0.0,
                           0.0,
                           0.0,
                           0.0,
                           0.0,
                           0.0,
                           0.0,
                           0.03465346619486809,
                           0.4009900987148285,
                           0.0,
                           0.0,
                           0.0,
                           0.0,
                           0.0,
                           0.0,
                           0.0,
                           -0.2326732724905014,
                           0.0,
                           0.0,
                           0.1336633712053299,
                           0.0,
                           0.0,
                           0.0,
                           0.0,
                           0.0,
                           0.0,
                           0.0,
                           0.0,
                           0.0,
                           0.0,
                           0.0});
  expect_values(nn::MaxPool2dImpl({3}, {2}, {1}, {1}, /*ceil_mode=*/true)(x),
                {0.7623762488365173, 0.9603960514068604, 0.9603960514068604, 0.8217821717262268,
                 0.9603960514068604, 0.9603960514068604, 0.8217821717262268, 0.8217821717262268,
                 0.6831682920455933, 0.14851485192775726, 0.8811880946159363, 0.3465346395969391,
                 0.7425742745399475, 0.9405940771102905, 0.9405940771102905, 0.801980197429657,
                 0.801980197429657, 0.603960394859314});
}

TEST(NnLayers, TransformerBlockGradcheckF64) {
  ag::manual_seed(2);
  nn::TransformerBlock block(4, 2, 4, 8);
  block.to(DType::f64);
  Tensor x = ag::testing::test_input({2, 3, 4}, -1.0, 1.0, 17);
  // Parameters are checked through their slots: gradcheck perturbs the very tensors the block
  // reads.
  std::vector<Tensor> inputs = {x, block.attn->qkv->weight, block.ln1->weight,
                                block.mlp->fc2->bias};
  EXPECT_TRUE(
      ag::testing::gradcheck([&](const std::vector<Tensor>& in) { return block(in[0]); }, inputs));
}
