#pragma once
// Private to src/comm: the one polled wait of tessel. MPICH's ch4 busy-polls inside every
// blocking call (MPI_Wait, MPI_Barrier, MPI_Win_fence, ...), which costs oversubscribed ranks
// their core (docs/mpich.md); every wait in comm/ therefore tests its requests and, while
// nothing completes, backs off with back_off() (RequestSet, wait_polled, the exchangers, the
// collective MPI-IO transfers).
#include <mpi.h>

namespace tessel::comm {

/// Not collective. The back-off after `idle_tests` consecutive tests that completed nothing:
/// up to 64 it returns at once (spin, for latency), up to 1024 it yields the core (a peer on
/// it runs at once, as Open MPI's yield_when_idle does), beyond that it sleeps 50 us (many
/// waiting ranks do not take turns burning the cores).
void back_off(int idle_tests);

/// Not collective. MPI_Wait(&r, st) by MPI_Test and back_off(); returns MPI_Test's error code
/// (does not throw), like MPI_Wait. A null request returns at once.
int wait_polled(MPI_Request& r, MPI_Status* st) noexcept;

/// Collective over `c` (null: no-op): a polled arrival barrier, PMPI_Ibarrier waited for by a
/// RequestSet (no failure-notice check: `c` may be the caller's own communicator, so like the
/// blocking call after it, it waits for a peer that left). Called right before a blocking
/// collective that has no nonblocking form and waits for the last rank (communicator and
/// window creation, MPI_File_open/close/set_view): under MPICH such a call busy-polls while it
/// waits; once every rank has arrived it completes at once. Not recorded in the ledger and
/// posted through PMPI_, so a profiler (commcount) does not count it either: it is
/// synchronisation inside one call, like the MPI library's own. `watch` = true checks `c` for
/// failure notices while waiting (RequestSet::watch) and throws PeerFailure on one: for a
/// communicator of tessel's own (free_window: a window's communicator).
void arrive(MPI_Comm c, bool watch = false);

}  // namespace tessel::comm
