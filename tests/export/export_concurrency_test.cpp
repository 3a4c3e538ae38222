// Export from several threads at once, of one module: each trace swaps its stand-ins into the
// module's slots under aot_module's slot lock, so every thread gets the serial result and the
// module is left holding its own tensors. Run under ThreadSanitizer (suite name Concurrency*).
#include <gtest/gtest.h>

#include <thread>

#include "aotgrad/export.h"
#include "export/export_net.h"

namespace ag = aotgrad;

TEST(ConcurrencyExport, OneModuleFromSeveralThreads) {
  auto net = ag::testing::make_export_net();
  ag::Tensor x = ag::testing::export_net_input();
  ag::ExportOptions joint{.trace_joint = true, .output_loss_index = 0};
  ag::ExportedGraph serial = ag::aot_export_module(net, std::tuple{x}, joint);
  constexpr int kThreads = 4;
  std::vector<ag::ExportedGraph> got(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      got[t] = ag::aot_export_module(net, std::tuple{x}, t % 2 ? joint : ag::ExportOptions{});
    });
  for (std::thread& t : threads) t.join();
  ag::ExportedGraph forward = ag::aot_export_module(net, std::tuple{x});
  for (int t = 0; t < kThreads; ++t) {
    const ag::ExportedGraph& want = t % 2 ? serial : forward;
    EXPECT_EQ(got[t].graph, want.graph) << t;
    EXPECT_EQ(got[t].signature, want.signature) << t;
  }
  EXPECT_FALSE(net->fc->weight.is_fake());
  EXPECT_EQ(net->bn->num_batches_tracked.item<int64_t>(), 0);
}
