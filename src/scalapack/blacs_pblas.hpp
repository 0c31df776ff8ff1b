#pragma once
// Private: the BLACS and PBLAS routines of the ScaLAPACK library tessel_scalapack links
// (Debian: libscalapack-<mpi>.so, 32-bit Int). The PBLAS tools are used, not re-written, so
// tessel's p?gemm_ checks its arguments with ScaLAPACK's own code (PB_Cchkmat), prints
// ScaLAPACK's messages (PB_Cwarn) and reports through ScaLAPACK's handler (PB_Cabort), which
// an application may replace (PBLAS's tester does, to read every error code): all are
// resolved by the dynamic linker, so the application's definition wins.
#include <mpi.h>

extern "C" {
void Cblacs_gridinfo(int ctxt, int* nprow, int* npcol, int* myrow, int* mycol);
void Cblacs_get(int ctxt, int what, int* val);
int Cblacs_pnum(int ctxt, int prow, int pcol);
void Cblacs_abort(int ctxt, int errornum);
MPI_Comm Cblacs2sys_handle(int sysctxt);

/// PBLAS: Fortran (IA, JA, DESC) of type 1 or 2 -> 0-based (IA, JA) and an 11-entry descriptor.
void PB_CargFtoC(int IF, int JF, const int* DESCIN, int* IC, int* JC, int* DESCOUT);
/// PBLAS: checks sub(A) = A(IA:IA+M-1, JA:JA+N-1) (0-based IA, JA; 11-entry DESCA), folding
/// the first error into INFO as ScaLAPACK orders them; prints each problem with PB_Cwarn.
void PB_Cchkmat(int ICTXT, const char* ROUT, const char* MNAME, int M, int MPOS0, int N, int NPOS0,
                int IA, int JA, const int* DESCA, int DPOS0, int* INFO);
void PB_Cwarn(int ICTXT, int LINE, const char* ROUT, const char* FORM, ...);
/// PBLAS's error handler: prints "Parameter number ... had an illegal value", then
/// Cblacs_abort (PBLAS's tester replaces it to record INFO and return).
void PB_Cabort(int ICTXT, const char* ROUT, int INFO);
}

namespace tessel::scalapack::pblas {
// Entries of an 11-integer (type 2, BLOCK_CYCLIC_2D_INB) descriptor, 0-based (PBtools.h).
enum Entry { DTYPE = 0, CTXT, M, N, IMB, INB, MB, NB, RSRC, CSRC, LLD, DLEN };
}  // namespace tessel::scalapack::pblas
