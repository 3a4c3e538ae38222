// Maximum flow / minimum s-t cut on a small directed graph with integer capacities.
//
// Dinic's algorithm (BFS level graph + blocking flow by DFS with per-vertex edge cursors), written
// here rather than taken from Boost.Graph: our flow graphs are small (the joint graph of 4
// transformer blocks gives ~1000 vertices) and are solved a few times per compilation, and on
// them Dinic, construction included, beats boost::boykov_kolmogorov_max_flow and
// push_relabel_max_flow by 1.4-2.7x (figures in min_cut.cpp's header comment).
//
// Needs: capacities >= 0; `kInfinity` for uncuttable edges; the total finite capacity must stay
// below kInfinity (callers scale their weights so that it does).
// Guarantees: max_flow() returns the value of a maximum flow; afterwards source_side() names the
// vertices reachable from the source in the residual graph, so the edges from the source side to
// the sink side form a minimum cut (and are all saturated).
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

namespace aotgrad::partition {

class MaxFlow {
 public:
  static constexpr int64_t kInfinity = std::numeric_limits<int64_t>::max() / 4;

  explicit MaxFlow(size_t num_vertices) : adjacency_(num_vertices) {}

  size_t add_vertex();
  void add_edge(size_t from, size_t to, int64_t capacity);
  size_t num_vertices() const { return adjacency_.size(); }
  size_t num_edges() const { return edges_.size() / 2; }

  int64_t max_flow(size_t source, size_t sink);
  // After max_flow: true for the vertices on the source side of a minimum cut.
  const std::vector<bool>& source_side() const { return reachable_; }

 private:
  struct Edge {
    size_t to;
    int64_t residual;
  };

  bool build_levels(size_t source, size_t sink);
  int64_t push(size_t source, size_t sink, int64_t limit);

  std::vector<Edge> edges_;  // edge 2k and its reverse 2k+1
  std::vector<std::vector<size_t>> adjacency_;
  std::vector<int> level_;
  std::vector<size_t> cursor_;
  std::vector<bool> reachable_;
};

}  // namespace aotgrad::partition
