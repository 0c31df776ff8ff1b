#pragma once
/// @file machine_model.hpp
/// MachineModel: what the multiply planner knows about the machine (pure data, no MPI).
/// The local GEMM rate, the latency and bandwidth of a link within a node and between nodes,
/// the ranks per node and the point-to-point segment size. Loaded from a small JSON file
/// (written by `tessel calibrate`, or by hand); without one, the documented defaults below.
///
/// File format (every key optional; a missing key keeps its default; unknown keys are an
/// error, except "comment", "tessel_version" and "measured", which are informational):
///
///     {
///       "dgemm_gflops": 10.0,          // local GEMM rate per rank, double, GFLOP/s
///       "zgemm_gflops": 10.0,          // complex<double>, real GFLOP/s (8 per multiply-add)
///       "memory_bandwidth_gbs": 2.0,   // per rank, all ranks streaming at once, GB/s
///       "intra_node": {"latency_us": 1.0, "bandwidth_gbs": 10.0},
///       "inter_node": {"latency_us": 5.0, "bandwidth_gbs": 10.0},
///       "node_size": 0,                // ranks per node (consecutive ranks); 0 = unknown
///       "p2p_segment_bytes": 1048576,  // segment of pipelined p2p chains
///       "overlap": 0.5                 // fraction of a round's transfer hidden behind GEMM
///     }
///
/// Bandwidths are in GB/s (1e9 bytes per second) of payload received by one rank.
#include <cstdint>
#include <string>

namespace tessel {
class Context;  // core/context.hpp (only for resolve_machine_model(ctx, ...))
}  // namespace tessel

namespace tessel::dense {

/// One kind of link: a message of b bytes costs latency_s + b / bandwidth_bps seconds.
struct LinkModel {
  double latency_s = 5e-6;
  double bandwidth_bps = 10e9;  ///< bytes per second
  double time(double bytes, double messages) const {
    return messages * latency_s + bytes / bandwidth_bps;
  }
};

struct MachineModel {
  /// Local GEMM rate per rank in flop/s: 2 flops per real multiply-add, 8 per complex one.
  double dgemm_flops = 10e9;
  double zgemm_flops = 10e9;
  /// Memory bandwidth per rank in bytes/s with every rank streaming at once (a copy: bytes
  /// read + bytes written). A local GEMM is priced as the larger of its flops at the GEMM rate
  /// and its memory traffic at this rate (gemm_seconds): a round with a short k (a rank-k
  /// update of a large C) reads and writes C for few flops and is memory-bound.
  double mem_bandwidth_bps = 2e9;
  /// Links within a node (shared memory) and between nodes.
  LinkModel intra{1e-6, 10e9};
  LinkModel inter{5e-6, 10e9};
  /// Ranks per node (ranks r and s share a node iff r / node_size == s / node_size);
  /// 0 = unknown: every pair of ranks is priced as an inter-node link.
  int node_size = 0;
  /// Segment size in bytes of pipelined point-to-point chains (SymmSquareCube P2P).
  std::int64_t p2p_segment_bytes = 1 << 20;
  /// Fraction in [0, 1] of min(transfer, GEMM) of a round that double buffering hides behind
  /// the other (0: none, 1: perfect). Not measured by `tessel calibrate`; 0.5 by default
  /// because MPI progresses a transfer during a GEMM only in part without a progress thread.
  double overlap = 0.5;

  /// The one link every pair of ranks of a p-rank run uses (node size unknown, 1 or >= p),
  /// else nullptr.
  const LinkModel* uniform_link(int p) const {
    if (node_size >= p) return &intra;
    if (node_size <= 1) return &inter;
    return nullptr;
  }

  /// The link between ranks r and s (r != s). An inter-node link from a node of node_size > 1
  /// ranks carries 1/node_size of `inter`'s bandwidth: in every phase of a multiply all ranks
  /// of a node move data at once through its one NIC, so `inter` is the NIC's (tessel
  /// calibrate: the bandwidth per rank with every rank exchanging at once, times the node size,
  /// at most one idle pair's ping-pong). (Measured on the emulated cluster, 4 nodes x 2 ranks,
  /// 1 Gbit: priced at the full NIC per rank and with half of every transfer hidden (the
  /// default overlap; measured there: 0), 512 x 512 x 65536 from 2x4 nb 128 took a 2x2x2 plan
  /// predicted at 0.70 s that ran 2.2 s, against 1.6 s for the plan with half the bytes.)
  LinkModel link(int r, int s) const {
    if (node_size > 0 && r / node_size == s / node_size) return intra;
    if (node_size > 1) return {inter.latency_s, inter.bandwidth_bps / node_size};
    return inter;
  }
  /// Local GEMM rate (flop/s) for real (false) or complex (true) elements.
  double gemm_flops(bool complex) const { return complex ? zgemm_flops : dgemm_flops; }
  /// Seconds of one local m x n x k GEMM that accumulates into C: the larger of its flops at
  /// the GEMM rate and its memory traffic (C read and written, A and B read once) at the
  /// memory bandwidth (a roofline), plus, for k below kGemmKBlock, the part of a pass over C
  /// that a BLAS blocking k by kGemmKBlock would have shared with more k: a call with a short
  /// k pays a whole pass over C for few flops (measured: 8192 x 8192 x 256 on 8 ranks, 4 rounds
  /// of k = 64 cost ~one C pass each more than 1 round). 0 when any extent is 0.
  static constexpr double kGemmKBlock = 256;
  double gemm_seconds(bool complex, double m, double n, double k) const {
    if (m <= 0 || n <= 0 || k <= 0) return 0.0;
    const double bpw = complex ? 16.0 : 8.0;
    const double flops = (complex ? 8.0 : 2.0) * m * n * k;
    const double bytes = bpw * (2.0 * m * n + m * k + k * n);
    const double t_flops = flops / gemm_flops(complex), t_mem = bytes / mem_bandwidth_bps;
    const double short_k = k < kGemmKBlock ? 1.0 - k / kGemmKBlock : 0.0;
    return (t_flops > t_mem ? t_flops : t_mem) + short_k * bpw * 2.0 * m * n / mem_bandwidth_bps;
  }

  /// Where this model came from: "defaults", "--machine FILE", "machine file FILE" (a
  /// Context's), or what the caller sets (the `tessel` command: "TESSEL_MACHINE=FILE").
  std::string source = "defaults";
};

/// Not collective. Parses a machine file's text. Throws InputError naming the file (`what`),
/// the parameter, the value and what was expected, for malformed JSON, a value of the wrong
/// type, a non-finite or non-positive rate/bandwidth, a negative latency, node_size < 0,
/// p2p_segment_bytes < 1, or an unknown key.
MachineModel machine_model_from_json(const std::string& text, const std::string& what);
/// Not collective. Reads and parses `path` (InputError when it cannot be read).
MachineModel load_machine_model(const std::string& path);
/// Not collective. The model to use: `cli_path` if not empty (source "--machine FILE"), else
/// `machine_file` if not empty (source "machine file FILE"), else the defaults (source
/// "defaults"). Reads no environment variable.
MachineModel resolve_machine_model(const std::string& cli_path, const std::string& machine_file);
/// Not collective. As above with the Context's machine file (ContextOptions::machine_file):
/// `cli_path` > ctx.machine_file() > the defaults.
MachineModel resolve_machine_model(const Context& ctx, const std::string& cli_path = {});
/// The model as JSON text in the file format above (pretty-printed).
std::string machine_model_to_json(const MachineModel& m);
/// One line for humans: rates, links, node size.
std::string describe(const MachineModel& m);

}  // namespace tessel::dense
