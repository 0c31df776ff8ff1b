#pragma once
/// @file blob_reduce.hpp
/// allreduce_blob: a reduction of small byte blobs with a combination of the caller's, for
/// what MPI's predefined operations cannot express (the planner's best candidates of every
/// rank, merged). Point-to-point messages and a broadcast only: no MPI_Op_create, whose
/// function could not reach the caller's state without globals.
#include <functional>
#include <vector>

#include "tessel/comm/comm.hpp"

namespace tessel::comm {

/// Combines two ranks' blobs: inout = in (+) inout. Must be associative and commutative.
using BlobCombine = std::function<void(const unsigned char* in, unsigned char* inout)>;

/// Collective over `c`. Every rank's `blob` (the same size on every rank) is combined along a
/// binomial tree into rank 0 (rank r receives from r + 2^i for each 2^i below its lowest set
/// bit, then sends to r - its lowest set bit) and the result broadcast from rank 0: on return
/// every rank holds the same combination. ceil(log2 p) tree steps then one broadcast, all of
/// blob.size() bytes; recorded in the ledger as point-to-point and a broadcast in the current
/// phase. One rank (or a null communicator): nothing.
void allreduce_blob(const Comm& c, std::vector<unsigned char>& blob, const BlobCombine& combine);

}  // namespace tessel::comm
