#pragma once
// 2D SUMMA directly on the caller's block-cyclic layouts (no redistribution): private to dense.
#include "tessel/dense/multiply.hpp"

namespace tessel::dense::detail {

/// Pure. True when C = op(A) op(B) can run on the caller's layouts as they are: opa = opb = N,
/// A's row partition and C's are the same, B's column partition and C's are the same, and
/// A's, B's and C's owner tables put the same rank at each (process row, process column).
bool summa_native_applies(Op opa, Op opb, const layout::Layout& a, const layout::Layout& b,
                          const layout::Layout& c);

/// Pure. Elements `rank` receives in summa_native: the A panels of its process row that
/// other process columns own, and the B panels of its process column that other rows own.
std::int64_t summa_native_recv_elems(const layout::Layout& a, const layout::Layout& b,
                                     const layout::Layout& c, int rank);

/// Pure. The k segments summa_native runs over: the common refinement of A's column and B's
/// row partitions, neighbours with the same owners and contiguous local storage joined (on
/// one rank: a single segment).
std::vector<layout::Segment> summa_native_segments(const layout::Layout& a,
                                                   const layout::Layout& b);

/// Collective over ctx (the process grid's two communicator splits, then the rings along its row
/// and column communicators). For each k segment (a column block of A meeting a row block of B): the A panel
/// goes around its process row and the B panel around its process column in a ring starting at
/// the owner (the next segment's receives are posted before this segment's GEMM), and every
/// rank accumulates its local C. Phases "gemm/summa A", "gemm/summa B".
template <class T>
void summa_native(Context& ctx, T alpha, const DistMatrix<T>& A, const DistMatrix<T>& B, T beta,
                  DistMatrix<T>& C);

}  // namespace tessel::dense::detail
