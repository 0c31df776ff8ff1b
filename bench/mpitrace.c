/* mpitrace.c — a per-message timeline of any MPI program (PMPI, LD_PRELOAD), so that two
 * programs (tessel and a peer such as COSMA) can be traced the same way, side by side.
 *
 *   mpirun -x LD_PRELOAD=build/bench/libmpitrace.so -x MPITRACE_OUT=/tmp/t ./prog ...
 *   python3 bench/mpitrace_report.py /tmp/t          # per rank: waits, arrivals, gaps
 *
 * Recording runs between MPI_Pcontrol(2) (clears the record and sets time 0) and
 * MPI_Pcontrol(0), resumed by MPI_Pcontrol(1) — the region commcount counts; without any
 * Pcontrol call, from MPI_Init on. At MPI_Finalize every rank writes MPITRACE_OUT.<rank>.tsv,
 * one line per event:
 *
 *   kind  t_begin  t_end  peer  bytes  what
 *
 * kind: "post" (a nonblocking send/receive posted: t_begin = t_end = the post), "done" (that
 * request completed, seen in a Wait/Test call: t_begin = its post, t_end = the return of the
 * call that completed it), "call" (a blocking call: Send, Recv, Sendrecv, a collective, a
 * one-sided synchronisation; t_begin..t_end its duration, bytes its payload from this rank's
 * side: sent for sends, received for receives (what arrived, from the status; a Sendrecv is a
 * "send" and a "recv" event), the receive buffer for collectives). peer is a
 * rank of the communicator used (-1: none or many). Times are seconds of MPI_Wtime since the
 * last MPI_Pcontrol(2). Everything between two events is the program's own work.
 *
 * Not traced: persistent requests, neighbourhood collectives, Fortran-only entry points
 * (ScaLAPACK's BLACS calls reach the C functions in Open MPI, so they are seen). A bench tool,
 * not part of the library; at most MPITRACE_MAX events (1,000,000) per rank are kept.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_EVENTS = 1000000, MAX_PENDING = 65536 };

typedef struct {
  const char* kind;
  const char* what;
  double t0, t1;
  int peer;
  long long bytes;
} Event;

typedef struct {
  MPI_Request req;
  const char* what;
  double t0;
  int peer;
  long long bytes;
} Pending;

static Event* events = NULL;
static long n_events = 0;
static Pending pending[MAX_PENDING];
static int n_pending = 0;
static int on = 1;
static double t_zero = 0.0;

static double now(void) { return PMPI_Wtime() - t_zero; }

static long long type_bytes(MPI_Datatype t, long long count) {
  int size = 0;
  PMPI_Type_size(t, &size);
  return (long long)size * count;
}

static void record(const char* kind, const char* what, double t0, double t1, int peer,
                   long long bytes) {
  if (!on || !events || n_events >= MAX_EVENTS) return;
  Event e = {kind, what, t0, t1, peer, bytes};
  events[n_events++] = e;
}

static void remember(MPI_Request req, const char* what, int peer, long long bytes) {
  if (!on) return;
  double t = now();
  record("post", what, t, t, peer, bytes);
  if (n_pending < MAX_PENDING) {
    Pending p = {req, what, t, peer, bytes};
    pending[n_pending++] = p;
  }
}

/* A request that was pending before a Wait/Test call and is now MPI_REQUEST_NULL finished. A
 * receive's bytes and peer come from its status (what arrived, also for MPI_ANY_SOURCE). */
static void complete(MPI_Request before, double t, const MPI_Status* st) {
  for (int i = 0; i < n_pending; ++i) {
    if (pending[i].req != before) continue;
    Pending x = pending[i];
    if (st && x.what[0] == 'i' && x.what[1] == 'r') {
      int got = 0;
      PMPI_Get_count(st, MPI_BYTE, &got);
      x.bytes = got;
      x.peer = st->MPI_SOURCE;
    }
    record("done", x.what, x.t0, t, x.peer, x.bytes);
    pending[i] = pending[--n_pending];
    return;
  }
}

/* Copies of the requests before a Wait/Test call, and statuses when the caller ignores them. */
typedef struct {
  MPI_Request* before;
  MPI_Status* st;
} Saved;

static Saved save(int n, const MPI_Request* reqs, MPI_Status* caller_st) {
  Saved v;
  v.before = malloc(sizeof(MPI_Request) * (n > 0 ? n : 1));
  memcpy(v.before, reqs, sizeof(MPI_Request) * (n > 0 ? n : 0));
  v.st =
      caller_st != MPI_STATUSES_IGNORE ? caller_st : malloc(sizeof(MPI_Status) * (n > 0 ? n : 1));
  return v;
}

/* Completions of an "all" call (status i for request i) or a "some/any" call (status j for
 * request indices[j]); frees what save() allocated. */
static void finish(int n, Saved v, const MPI_Request* after, MPI_Status* caller_st, int count,
                   const int* indices, double t) {
  if (indices) {
    for (int j = 0; j < count; ++j)
      if (v.before[indices[j]] != MPI_REQUEST_NULL) complete(v.before[indices[j]], t, &v.st[j]);
  } else {
    for (int i = 0; i < n; ++i)
      if (v.before[i] != MPI_REQUEST_NULL && after[i] == MPI_REQUEST_NULL)
        complete(v.before[i], t, &v.st[i]);
  }
  if (v.st != caller_st) free(v.st);
  free(v.before);
}

int MPI_Init(int* argc, char*** argv) {
  int rc = PMPI_Init(argc, argv);
  events = malloc(sizeof(Event) * MAX_EVENTS);
  t_zero = PMPI_Wtime();
  return rc;
}

int MPI_Init_thread(int* argc, char*** argv, int required, int* provided) {
  int rc = PMPI_Init_thread(argc, argv, required, provided);
  events = malloc(sizeof(Event) * MAX_EVENTS);
  t_zero = PMPI_Wtime();
  return rc;
}

int MPI_Pcontrol(const int level, ...) {
  if (level == 2) {
    n_events = 0;
    n_pending = 0;
    t_zero = PMPI_Wtime();
  }
  on = level != 0;
  return MPI_SUCCESS;
}

int MPI_Isend(const void* buf, int count, MPI_Datatype t, int dest, int tag, MPI_Comm comm,
              MPI_Request* req) {
  int rc = PMPI_Isend(buf, count, t, dest, tag, comm, req);
  remember(*req, "isend", dest, type_bytes(t, count));
  return rc;
}

int MPI_Irecv(void* buf, int count, MPI_Datatype t, int source, int tag, MPI_Comm comm,
              MPI_Request* req) {
  int rc = PMPI_Irecv(buf, count, t, source, tag, comm, req);
  remember(*req, "irecv", source, type_bytes(t, count));
  return rc;
}

int MPI_Send(const void* buf, int count, MPI_Datatype t, int dest, int tag, MPI_Comm comm) {
  double t0 = now();
  int rc = PMPI_Send(buf, count, t, dest, tag, comm);
  record("call", "send", t0, now(), dest, type_bytes(t, count));
  return rc;
}

int MPI_Recv(void* buf, int count, MPI_Datatype t, int source, int tag, MPI_Comm comm,
             MPI_Status* status) {
  MPI_Status s;
  double t0 = now();
  int rc = PMPI_Recv(buf, count, t, source, tag, comm, &s);
  int got = 0;
  PMPI_Get_count(&s, MPI_BYTE, &got);
  record("call", "recv", t0, now(), s.MPI_SOURCE, got);
  if (status != MPI_STATUS_IGNORE) *status = s;
  return rc;
}

int MPI_Sendrecv(const void* sbuf, int scount, MPI_Datatype stype, int dest, int stag, void* rbuf,
                 int rcount, MPI_Datatype rtype, int source, int rtag, MPI_Comm comm,
                 MPI_Status* status) {
  MPI_Status s;
  double t0 = now();
  int rc =
      PMPI_Sendrecv(sbuf, scount, stype, dest, stag, rbuf, rcount, rtype, source, rtag, comm, &s);
  int got = 0;
  PMPI_Get_count(&s, MPI_BYTE, &got);
  double t1 = now();
  record("call", "send", t0, t1, dest, type_bytes(stype, scount));
  record("call", "recv", t0, t1, s.MPI_SOURCE, got);
  if (status != MPI_STATUS_IGNORE) *status = s;
  return rc;
}

int MPI_Wait(MPI_Request* req, MPI_Status* status) {
  MPI_Request before = *req;
  MPI_Status s;
  double t0 = now();
  int rc = PMPI_Wait(req, &s);
  double t1 = now();
  record("call", "wait", t0, t1, -1, 0);
  if (before != MPI_REQUEST_NULL) complete(before, t1, &s);
  if (status != MPI_STATUS_IGNORE) *status = s;
  return rc;
}

int MPI_Waitall(int n, MPI_Request* reqs, MPI_Status* statuses) {
  Saved v = save(n, reqs, statuses);
  double t0 = now();
  int rc = PMPI_Waitall(n, reqs, v.st);
  double t1 = now();
  record("call", "waitall", t0, t1, -1, 0);
  finish(n, v, reqs, statuses, n, NULL, t1);
  return rc;
}

int MPI_Waitany(int n, MPI_Request* reqs, int* index, MPI_Status* status) {
  MPI_Status st;
  MPI_Request* before = malloc(sizeof(MPI_Request) * (n > 0 ? n : 1));
  memcpy(before, reqs, sizeof(MPI_Request) * (n > 0 ? n : 0));
  double t0 = now();
  int rc = PMPI_Waitany(n, reqs, index, &st);
  double t1 = now();
  record("call", "waitany", t0, t1, -1, 0);
  if (*index != MPI_UNDEFINED && before[*index] != MPI_REQUEST_NULL)
    complete(before[*index], t1, &st);
  if (status != MPI_STATUS_IGNORE) *status = st;
  free(before);
  return rc;
}

int MPI_Waitsome(int n, MPI_Request* reqs, int* outcount, int* indices, MPI_Status* statuses) {
  Saved v = save(n, reqs, statuses);
  double t0 = now();
  int rc = PMPI_Waitsome(n, reqs, outcount, indices, v.st);
  double t1 = now();
  record("call", "waitsome", t0, t1, -1, 0);
  finish(n, v, reqs, statuses, *outcount == MPI_UNDEFINED ? 0 : *outcount, indices, t1);
  return rc;
}

int MPI_Test(MPI_Request* req, int* flag, MPI_Status* status) {
  MPI_Request before = *req;
  MPI_Status s;
  int rc = PMPI_Test(req, flag, &s);
  if (*flag && before != MPI_REQUEST_NULL) complete(before, now(), &s);
  if (status != MPI_STATUS_IGNORE) *status = s;
  return rc;
}

int MPI_Testall(int n, MPI_Request* reqs, int* flag, MPI_Status* statuses) {
  Saved v = save(n, reqs, statuses);
  int rc = PMPI_Testall(n, reqs, flag, v.st);
  if (*flag) {
    finish(n, v, reqs, statuses, n, NULL, now());
  } else {
    if (v.st != statuses) free(v.st);
    free(v.before);
  }
  return rc;
}

int MPI_Testsome(int n, MPI_Request* reqs, int* outcount, int* indices, MPI_Status* statuses) {
  Saved v = save(n, reqs, statuses);
  int rc = PMPI_Testsome(n, reqs, outcount, indices, v.st);
  finish(n, v, reqs, statuses, *outcount == MPI_UNDEFINED ? 0 : *outcount, indices, now());
  return rc;
}

int MPI_Testany(int n, MPI_Request* reqs, int* index, int* flag, MPI_Status* status) {
  MPI_Status s;
  MPI_Request* before = malloc(sizeof(MPI_Request) * (n > 0 ? n : 1));
  memcpy(before, reqs, sizeof(MPI_Request) * (n > 0 ? n : 0));
  int rc = PMPI_Testany(n, reqs, index, flag, &s);
  if (*flag && *index != MPI_UNDEFINED && before[*index] != MPI_REQUEST_NULL)
    complete(before[*index], now(), &s);
  if (status != MPI_STATUS_IGNORE) *status = s;
  free(before);
  return rc;
}

/* Collectives: one "call" event, bytes = what this rank receives into its buffer. */
#define TIMED(what, peer, bytes, call)             \
  do {                                             \
    double t0_ = now();                            \
    int rc_ = (call);                              \
    record("call", what, t0_, now(), peer, bytes); \
    return rc_;                                    \
  } while (0)

static int comm_size(MPI_Comm c) {
  int n = 0;
  PMPI_Comm_size(c, &n);
  return n;
}

static long long sum_counts(MPI_Comm c, const int* counts) {
  long long s = 0;
  for (int i = 0, n = comm_size(c); i < n; ++i) s += counts[i];
  return s;
}

int MPI_Barrier(MPI_Comm c) { TIMED("barrier", -1, 0, PMPI_Barrier(c)); }

int MPI_Bcast(void* b, int n, MPI_Datatype t, int root, MPI_Comm c) {
  TIMED("bcast", root, type_bytes(t, n), PMPI_Bcast(b, n, t, root, c));
}

int MPI_Allreduce(const void* s, void* r, int n, MPI_Datatype t, MPI_Op op, MPI_Comm c) {
  TIMED("allreduce", -1, type_bytes(t, n), PMPI_Allreduce(s, r, n, t, op, c));
}

int MPI_Reduce(const void* s, void* r, int n, MPI_Datatype t, MPI_Op op, int root, MPI_Comm c) {
  TIMED("reduce", root, type_bytes(t, n), PMPI_Reduce(s, r, n, t, op, root, c));
}

int MPI_Allgather(const void* s, int sn, MPI_Datatype st, void* r, int rn, MPI_Datatype rt,
                  MPI_Comm c) {
  TIMED("allgather", -1, type_bytes(rt, (long long)rn * comm_size(c)),
        PMPI_Allgather(s, sn, st, r, rn, rt, c));
}

int MPI_Allgatherv(const void* s, int sn, MPI_Datatype st, void* r, const int* rn,
                   const int* displs, MPI_Datatype rt, MPI_Comm c) {
  TIMED("allgatherv", -1, type_bytes(rt, sum_counts(c, rn)),
        PMPI_Allgatherv(s, sn, st, r, rn, displs, rt, c));
}

int MPI_Alltoall(const void* s, int sn, MPI_Datatype st, void* r, int rn, MPI_Datatype rt,
                 MPI_Comm c) {
  TIMED("alltoall", -1, type_bytes(rt, (long long)rn * comm_size(c)),
        PMPI_Alltoall(s, sn, st, r, rn, rt, c));
}

int MPI_Alltoallv(const void* s, const int* sn, const int* sd, MPI_Datatype st, void* r,
                  const int* rn, const int* rd, MPI_Datatype rt, MPI_Comm c) {
  TIMED("alltoallv", -1, type_bytes(rt, sum_counts(c, rn)),
        PMPI_Alltoallv(s, sn, sd, st, r, rn, rd, rt, c));
}

int MPI_Reduce_scatter(const void* s, void* r, const int* rn, MPI_Datatype t, MPI_Op op,
                       MPI_Comm c) {
  int me = 0;
  PMPI_Comm_rank(c, &me);
  TIMED("reduce_scatter", -1, type_bytes(t, rn[me]), PMPI_Reduce_scatter(s, r, rn, t, op, c));
}

int MPI_Reduce_scatter_block(const void* s, void* r, int n, MPI_Datatype t, MPI_Op op, MPI_Comm c) {
  TIMED("reduce_scatter_block", -1, type_bytes(t, n), PMPI_Reduce_scatter_block(s, r, n, t, op, c));
}

int MPI_Win_fence(int assertion, MPI_Win w) {
  TIMED("win_fence", -1, 0, PMPI_Win_fence(assertion, w));
}

int MPI_Finalize(void) {
  const char* out = getenv("MPITRACE_OUT");
  if (out && events) {
    int rank = 0;
    PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
    char path[4096];
    snprintf(path, sizeof path, "%s.%d.tsv", out, rank);
    FILE* f = fopen(path, "w");
    if (!f) {
      fprintf(stderr, "mpitrace: cannot write %s\n", path);
    } else {
      fprintf(f, "# kind\tt_begin\tt_end\tpeer\tbytes\twhat\n");
      for (long i = 0; i < n_events; ++i)
        fprintf(f, "%s\t%.6f\t%.6f\t%d\t%lld\t%s\n", events[i].kind, events[i].t0, events[i].t1,
                events[i].peer, events[i].bytes, events[i].what);
      fclose(f);
    }
  }
  free(events);
  events = NULL;
  return PMPI_Finalize();
}
