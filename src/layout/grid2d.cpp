#include "tessel/layout/grid2d.hpp"

#include "tessel/core/error.hpp"

namespace tessel::layout {

void ProcessGrid2D::check(int pr, int pc, int nranks) {
  TESSEL_CHECK(pr >= 1 && pc >= 1, GridError, "process grid ", pr, "x", pc,
               ": both dimensions must be >= 1");
  TESSEL_CHECK(static_cast<long long>(pr) * pc == nranks, GridError, "process grid ", pr, "x", pc,
               " has ", static_cast<long long>(pr) * pc, " ranks but the communicator has ", nranks,
               " (expected PR x PC == ranks)");
}

ProcessGrid2D::ProcessGrid2D(const comm::Comm& c, int pr, int pc) {
  check(pr, pc, c.size());
  pr_ = pr;
  pc_ = pc;
  prow_ = c.rank() / pc;
  pcol_ = c.rank() % pc;
  row_ = c.split(prow_, pcol_);
  col_ = c.split(pcol_, prow_);
}

ProcessGrid2D::ProcessGrid2D(const comm::Comm& c, int pr, int pc, std::vector<int> placement) {
  TESSEL_CHECK(pr >= 1 && pc >= 1, GridError, "process grid ", pr, "x", pc,
               ": both dimensions must be >= 1");
  TESSEL_CHECK(static_cast<long long>(pr) * pc == static_cast<long long>(placement.size()),
               GridError, "process grid ", pr, "x", pc, ": placement of ", placement.size(),
               " ranks (expected ", static_cast<long long>(pr) * pc, ")");
  std::vector<char> seen(static_cast<std::size_t>(c.size()), 0);
  pr_ = pr;
  pc_ = pc;
  prow_ = pcol_ = -1;
  for (std::size_t k = 0; k < placement.size(); ++k) {
    const int r = placement[k];
    TESSEL_CHECK(r >= 0 && r < c.size() && !seen[static_cast<std::size_t>(r)], GridError,
                 "process grid ", pr, "x", pc, ": P(", k / static_cast<std::size_t>(pc), ",",
                 k % static_cast<std::size_t>(pc), ") is rank ", r, " (expected a rank of 0 .. ",
                 c.size() - 1, " not placed before)");
    seen[static_cast<std::size_t>(r)] = 1;
    if (r == c.rank()) {
      prow_ = static_cast<int>(k) / pc;
      pcol_ = static_cast<int>(k) % pc;
    }
  }
  placement_ = std::move(placement);
  row_ = c.split(prow_, pcol_);  // a negative colour leaves the rank out (MPI_UNDEFINED)
  col_ = c.split(pcol_, prow_);
}

std::string ProcessGrid2D::describe() const {
  return detail::concat(pr_, "x", pc_, " grid, P(", prow_, ",", pcol_, ")");
}

}  // namespace tessel::layout
