#include "partition/max_flow.h"

#include <algorithm>
#include <deque>
#include <stdexcept>

namespace aotgrad::partition {

size_t MaxFlow::add_vertex() {
  adjacency_.emplace_back();
  return adjacency_.size() - 1;
}

void MaxFlow::add_edge(size_t from, size_t to, int64_t capacity) {
  if (from >= adjacency_.size() || to >= adjacency_.size() || capacity < 0)
    throw std::logic_error("MaxFlow::add_edge: vertex out of range or negative capacity");
  adjacency_[from].push_back(edges_.size());
  edges_.push_back({to, capacity});
  adjacency_[to].push_back(edges_.size());
  edges_.push_back({from, 0});
}

bool MaxFlow::build_levels(size_t source, size_t sink) {
  level_.assign(adjacency_.size(), -1);
  std::deque<size_t> queue{source};
  level_[source] = 0;
  while (!queue.empty()) {
    size_t v = queue.front();
    queue.pop_front();
    for (size_t e : adjacency_[v]) {
      if (edges_[e].residual <= 0 || level_[edges_[e].to] >= 0) continue;
      level_[edges_[e].to] = level_[v] + 1;
      queue.push_back(edges_[e].to);
    }
  }
  return level_[sink] >= 0;
}

// One blocking flow in the level graph, by an iterative DFS (paths can be thousands of vertices
// long, deeper than a recursive DFS should go). `cursor_[v]` skips edges already found useless.
int64_t MaxFlow::push(size_t source, size_t sink, int64_t limit) {
  std::vector<size_t> path;  // edge indices from the source
  size_t v = source;
  int64_t total = 0;
  while (true) {
    if (v == sink) {
      int64_t f = limit - total;
      for (size_t e : path) f = std::min(f, edges_[e].residual);
      size_t first_saturated = path.size();
      for (size_t k = 0; k < path.size(); ++k) {
        edges_[path[k]].residual -= f;
        edges_[path[k] ^ 1].residual += f;
        if (edges_[path[k]].residual == 0 && first_saturated == path.size()) first_saturated = k;
      }
      total += f;
      if (total == limit) return total;
      path.resize(first_saturated);
      v = path.empty() ? source : edges_[path.back()].to;
      continue;
    }
    bool advanced = false;
    for (; cursor_[v] < adjacency_[v].size(); ++cursor_[v]) {
      size_t e = adjacency_[v][cursor_[v]];
      if (edges_[e].residual > 0 && level_[edges_[e].to] == level_[v] + 1) {
        path.push_back(e);
        v = edges_[e].to;
        advanced = true;
        break;
      }
    }
    if (advanced) continue;
    level_[v] = -1;  // dead end for the rest of this phase
    if (path.empty()) return total;
    size_t e = path.back();
    path.pop_back();
    v = edges_[e ^ 1].to;
    ++cursor_[v];
  }
}

int64_t MaxFlow::max_flow(size_t source, size_t sink) {
  int64_t flow = 0;
  while (build_levels(source, sink)) {
    cursor_.assign(adjacency_.size(), 0);
    int64_t f = push(source, sink, kInfinity);
    if (f >= kInfinity) {
      flow = kInfinity;
      break;
    }
    flow += f;
    if (flow >= kInfinity) break;
  }
  // The last BFS (from which the sink was unreachable) marks the source side of a minimum cut.
  build_levels(source, sink);
  reachable_.assign(adjacency_.size(), false);
  for (size_t v = 0; v < adjacency_.size(); ++v) reachable_[v] = level_[v] >= 0;
  return flow;
}

}  // namespace aotgrad::partition
