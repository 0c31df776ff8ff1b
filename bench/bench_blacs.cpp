#include "bench_blacs.hpp"

#include <algorithm>
#include <cstdio>

#include "tessel/layout/grid_shape.hpp"

namespace tessel::bench {

std::optional<std::pair<int, int>> parse_grid(const std::string& grid, int nranks) {
  int pr = 0, pc = 0;
  if (grid.empty()) return tessel::layout::most_square_grid(nranks);
  char x = 0, extra = 0;
  if (std::sscanf(grid.c_str(), "%d%c%d%c", &pr, &x, &pc, &extra) != 3 || (x != 'x' && x != 'X') ||
      pr < 1 || pc < 1 || static_cast<long>(pr) * pc > nranks)
    return std::nullopt;
  return std::pair{pr, pc};
}

BlacsGrid::BlacsGrid(int pr, int pc) {
  int me = 0, np = 0;
  Cblacs_pinfo(&me, &np);
  Cblacs_get(-1, 0, &ctxt);
  Cblacs_gridinit(&ctxt, "Row", pr, pc);
  in_grid_ = ctxt >= 0;
  if (in_grid_) Cblacs_gridinfo(ctxt, &nprow, &npcol, &myrow, &mycol);
}

void BlacsGrid::exit() {
  if (in_grid_) Cblacs_gridexit(ctxt);
  in_grid_ = false;
}

BlockCyclic::BlockCyclic(const BlacsGrid& g, int rows, int cols, int nb,
                         const std::function<double(long, long)>& entry) {
  if (!g.in_grid()) return;
  const int izero = 0;
  lr = numroc_(&rows, &nb, &g.myrow, &izero, &g.nprow);
  lc = numroc_(&cols, &nb, &g.mycol, &izero, &g.npcol);
  lld = std::max(1, lr);
  int info = 0;
  descinit_(desc, &rows, &cols, &nb, &nb, &izero, &izero, &g.ctxt, &lld, &info);
  desc_ok = info == 0;
  local.assign(std::max<std::size_t>(1, static_cast<std::size_t>(lld) * lc), 0.0);
  if (!entry) return;
  for (int lj = 0; lj < lc; ++lj) {
    const long gj = global_index(lj, nb, g.mycol, g.npcol);
    for (int li = 0; li < lr; ++li) at(li, lj) = entry(global_index(li, nb, g.myrow, g.nprow), gj);
  }
}

}  // namespace tessel::bench
