#include "tessel/layout/grid2d.hpp"

#include "tessel/core/error.hpp"

namespace tessel::layout {

void ProcessGrid2D::check(int pr, int pc, int nranks) {
  TESSEL_CHECK(pr >= 1 && pc >= 1, GridError, "process grid ", pr, "x", pc,
               ": both dimensions must be >= 1");
  TESSEL_CHECK(static_cast<long long>(pr) * pc == nranks, GridError, "process grid ", pr, "x",
               pc, " has ", static_cast<long long>(pr) * pc, " ranks but the communicator has ",
               nranks, " (expected PR x PC == ranks)");
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

std::string ProcessGrid2D::describe() const {
  return detail::concat(pr_, "x", pc_, " grid, P(", prow_, ",", pcol_, ")");
}

}  // namespace tessel::layout
