// The block-sparse multiply's schedule as pure data (include/tessel/sparse/spgemm_plan.hpp).
#include "tessel/sparse/spgemm_plan.hpp"

#include <functional>
#include <numeric>
#include <sstream>

#include "tessel/core/error.hpp"

namespace tessel::sparse {

const char* to_string(SpAlgorithm a) { return a == SpAlgorithm::Cannon ? "cannon" : "rma25d"; }

namespace {
int mod(long long x, int m) { return static_cast<int>(((x % m) + m) % m); }

std::string list(const std::vector<int>& v) {
  std::ostringstream os;
  for (std::size_t i = 0; i < v.size(); ++i) os << (i ? ", " : "") << v[i];
  return os.str();
}
}  // namespace

std::vector<int> valid_layers(int pr, int pc) {
  std::vector<int> out{1};
  if (pr == pc) {
    for (int s = 2; s <= pr; ++s)
      if (pr % s == 0) out.push_back(s * s);  // eq. 5: PR a multiple of sqrt(L)
  } else {
    int mn = std::min(pr, pc), mx = std::max(pr, pc);
    // eq. 4: mx a multiple of mn and mx <= mn^2; L = mx / mn
    if (mx % mn == 0 && static_cast<long long>(mx) <= static_cast<long long>(mn) * mn &&
        mx / mn > 1)
      out.push_back(mx / mn);
  }
  return out;
}

namespace {
/// The L-independent part of a plan (no auto).
SpgemmPlan plan_for(SpAlgorithm alg, int pr, int pc, int L);
}  // namespace

std::vector<SpLayerPrediction> predict_layers(int pr, int pc, const SpVolumeModel& m,
                                              int max_layers) {
  std::vector<SpLayerPrediction> out;
  for (int L : valid_layers(pr, pc)) {
    if (L > std::max(1, max_layers)) continue;
    const SpgemmPlan p = plan_for(SpAlgorithm::Rma25d, pr, pc, L);
    const SpVolumeModel::Images* im = m.images_for(L);
    TESSEL_CHECK(!im || (im->v == p.v && im->a.size() == static_cast<std::size_t>(pr) * p.v &&
                         im->b.size() == static_cast<std::size_t>(p.v) * pc),
                 Error, "predict_layers: the image sizes given for L = ", L, " are not a ", pr,
                 " x ", p.v, " and a ", p.v, " x ", pc, " table");
    // predict() sums images: their real sizes where known (exact), else weight 1 each, scaled
    // below by the mean size; partial C panels always by the mean (c bounds a partial)
    auto one = [](int, int) -> std::int64_t { return 1; };
    std::function<std::int64_t(int, int)> fa = one, fb = one;
    if (im) {
      fa = [&](int mrow, int v) { return im->a[static_cast<std::size_t>(mrow) * p.v + v]; };
      fb = [&](int v, int ncol) { return im->b[static_cast<std::size_t>(v) * pc + ncol]; };
    }
    std::int64_t sum_a = 0, sum_b = 0, sum_c = 0;  // integers: the exact form is exact
    for (int i = 0; i < pr; ++i)
      for (int j = 0; j < pc; ++j) {
        const SpgemmPlan::Volume v = p.predict(i, j, fa, fb, one);
        sum_a += v.a;
        sum_b += v.b;
        sum_c += v.c;
      }
    const double n = static_cast<double>(pr) * pc;
    SpLayerPrediction x;
    x.layers = L;
    x.a = static_cast<double>(sum_a) * (im ? 1.0 : m.a / (static_cast<double>(pr) * p.v)) / n;
    x.b = static_cast<double>(sum_b) * (im ? 1.0 : m.b / (static_cast<double>(pc) * p.v)) / n;
    x.c = static_cast<double>(sum_c) * (m.c / n) / n;
    if (m.retain) x.pattern = (L - 1) * (16 + m.c_pattern / n);
    out.push_back(x);
  }
  return out;
}

int choose_layers(int pr, int pc, const SpVolumeModel& m, int max_layers, std::string* note) {
  auto pred = predict_layers(pr, pc, m, max_layers);
  std::size_t best = 0;
  for (std::size_t x = 1; x < pred.size(); ++x)
    if (pred[x].total() < pred[best].total()) best = x;
  if (note) {
    std::ostringstream os;
    os << "layers auto: L = " << pred[best].layers
       << " (smallest eq. 7 volume per rank among the valid L <= " << std::max(1, max_layers)
       << " on " << pr << "x" << pc << "; A+B from the operands, C = the product's panel);"
       << " predicted MB per rank (A, B, C = total):";
    os.setf(std::ios::fixed);
    os.precision(2);
    for (const auto& x : pred)
      os << " L=" << x.layers << ": " << x.a * 1e-6 << " + " << x.b * 1e-6 << " + " << x.c * 1e-6
         << (m.retain ? " + pattern " : "")
         << (m.retain ? std::to_string(x.pattern * 1e-6) : std::string()) << " = "
         << x.total() * 1e-6 << ";";
    *note = os.str();
  }
  return pred[best].layers;
}

SpgemmPlan make_spgemm_plan(SpAlgorithm alg, int pr, int pc, int layers,
                            const SpVolumeModel* model) {
  TESSEL_CHECK(pr >= 1 && pc >= 1, GridError, "spgemm: process grid ", pr, "x", pc,
               " (expected both >= 1)");
  TESSEL_CHECK(layers >= 0, GridError, "spgemm: layers = ", layers,
               " (expected >= 1, or 0 for auto)");
  SpgemmPlan p;
  p.algorithm = alg;
  p.pr = pr;
  p.pc = pc;
  if (alg == SpAlgorithm::Cannon) {
    TESSEL_CHECK(layers <= 1, GridError, "spgemm: layers = ", layers,
                 " but algorithm cannon is 2D (expected layers 1 or auto; use rma25d for L > 1)");
    p.v = std::lcm(pr, pc);
    p.ticks = p.v;
    p.side_r = pr;
    p.side_c = pc;
    return p;
  }
  std::vector<int> valid = valid_layers(pr, pc);
  int L = layers;
  std::string note;
  if (L == 0) {
    if (model) {
      L = choose_layers(pr, pc, *model, kAutoMaxLayers, &note);
    } else {
      L = 1;
      note = detail::concat("layers auto without panel sizes: L = 1 (valid on ", pr, "x", pc, ": ",
                            list(valid), "; multiply() chooses by eq. 7 from the sizes)");
    }
  } else {
    bool ok = false;
    for (int x : valid) ok = ok || x == L;
    TESSEL_CHECK(ok, GridError, "spgemm: layers L = ", L, " does not fit the ", pr, "x", pc,
                 " grid (",
                 pr == pc ? "square grids need L a square with PR a multiple of sqrt(L), eq. 5"
                          : "non-square grids need L = max/min with max a multiple of min and "
                            "max <= min^2, eq. 4",
                 "); valid: ", list(valid));
  }
  p = plan_for(alg, pr, pc, L);
  p.note = note;
  return p;
}

namespace {
SpgemmPlan plan_for(SpAlgorithm alg, int pr, int pc, int L) {
  SpgemmPlan p;
  p.algorithm = alg;
  p.pr = pr;
  p.pc = pc;
  p.layers = L;
  if (pr == pc) {
    int s = 1;
    while (s * s < L) ++s;
    p.lr = p.lc = s;
  } else if (pr > pc) {
    p.lr = L;
  } else {
    p.lc = L;
  }
  p.side_r = pr / p.lr;
  p.side_c = pc / p.lc;
  p.v = std::lcm(std::lcm(pr, pc), L);
  p.ticks = p.v / L;
  return p;
}
}  // namespace

int SpgemmPlan::cannon_image(int i, int j, int t) const {
  return mod(static_cast<long long>(j) * a_per_col() + static_cast<long long>(i) * b_per_row() + t,
             v);
}

int SpgemmPlan::layer_of(int i, int j) const { return (j / side_c) * lr + i / side_r; }

int SpgemmPlan::rma_image(int i, int j, int s) const {
  int ii = i % side_r, jj = j % side_c;
  long long off =
      static_cast<long long>(ii) * b_per_row() + static_cast<long long>(jj) * a_per_col();
  return mod(off + layer_of(i, j) + static_cast<long long>(layers) * s, v);
}

std::vector<std::pair<int, int>> SpgemmPlan::rma_panels(int i, int j) const {
  std::vector<std::pair<int, int>> out;
  int ii = i % side_r, jj = j % side_c;
  for (int x = 0; x < lr; ++x)
    for (int y = 0; y < lc; ++y) out.emplace_back(x * side_r + ii, y * side_c + jj);
  return out;
}

std::vector<SpRead> SpgemmPlan::reads(int i, int j) const {
  std::vector<SpRead> out;
  if (algorithm == SpAlgorithm::Cannon) {
    int a = a_per_col(), b = b_per_row();
    for (int q = 0; q < a; ++q) {
      int img = cannon_image(i, j, q);
      out.push_back({-1, 'A', img, i, rank_of(i, a_home_col(img))});
    }
    for (int q = 0; q < b; ++q) {
      int img = cannon_image(i, j, q);
      out.push_back({-1, 'B', img, j, rank_of(b_home_row(img), j)});
    }
    for (int t = 0; t < v; ++t) {
      if (t < v - a)
        out.push_back({t, 'A', cannon_image(i, j, t + a), i, rank_of(i, mod(j + 1, pc))});
      if (t < v - b)
        out.push_back({t, 'B', cannon_image(i, j, t + b), j, rank_of(mod(i + 1, pr), j)});
    }
    return out;
  }
  for (int s = 0; s < ticks; ++s) {
    int img = rma_image(i, j, s);
    for (int x = 0; x < lr; ++x) {
      int m = x * side_r + i % side_r;
      out.push_back({s, 'A', img, m, rank_of(m, a_home_col(img))});
    }
    for (int y = 0; y < lc; ++y) {
      int n = y * side_c + j % side_c;
      out.push_back({s, 'B', img, n, rank_of(b_home_row(img), n)});
    }
  }
  return out;
}

SpgemmPlan::Volume SpgemmPlan::predict(
    int i, int j, const std::function<std::int64_t(int, int)>& a_image_bytes,
    const std::function<std::int64_t(int, int)>& b_image_bytes,
    const std::function<std::int64_t(int, int)>& c_panel_bytes) const {
  Volume vol;
  int me = rank_of(i, j);
  for (const SpRead& r : reads(i, j)) {
    if (r.from == me) continue;
    if (r.matrix == 'A')
      vol.a += a_image_bytes(r.panel, r.image);
    else
      vol.b += b_image_bytes(r.image, r.panel);
  }
  if (algorithm == SpAlgorithm::Rma25d && layers > 1)
    for (auto [m, n] : rma_panels(i, j))
      if (m != i || n != j) vol.c += c_panel_bytes(m, n);
  return vol;
}

std::string SpgemmPlan::describe(int rank) const {
  std::ostringstream os;
  os << "spgemm plan: " << to_string(algorithm) << " on a " << pr << "x" << pc << " grid\n";
  if (algorithm == SpAlgorithm::Cannon) {
    os << "  V = lcm(PR, PC) = " << v << " images along k; " << ticks << " ticks\n"
       << "  pre-shift: P(i,j) starts with A images (j*" << a_per_col() << " + i*" << b_per_row()
       << " + q) mod V, q < " << a_per_col() << ", and B images q < " << b_per_row() << "\n"
       << "  tick t: multiply image (j*a + i*b + t) mod V; send it left (A) and up (B) while "
          "multiplying (A while t < V - a, B while t < V - b)\n"
       << "  buffers: " << a_per_col() + 1 << " A images, " << b_per_row() + 1
       << " B images (double-buffered shift)\n";
  } else {
    os << "  L = " << layers << " layers (" << lr << " x " << lc << "), 3D topology " << side_r
       << " x " << side_c << " x " << layers
       << (pr == pc     ? " (eq. 5)"
           : layers > 1 ? " (eq. 4)"
                        : "")
       << "\n"
       << "  V = lcm(PR, PC, L) = " << v << " images along k; " << ticks << " ticks of " << layers
       << " panel products each\n"
       << "  A/B panels: MPI_Rget under MPI_Win_lock_all from their home ranks (no pre-shift); A "
          "windows over the "
       << lr * pc << " ranks with equal i mod " << side_r << ", B windows over the " << pr * lc
       << " ranks with equal j mod " << side_c << "\n"
       << "  C: " << layers - 1 << " partial panels sent (Isend/Irecv) during the last tick\n"
       << "  buffers: " << 2 * lr << " A images, " << 2 * lc << " B images, " << layers
       << " C panels\n";
  }
  if (!note.empty()) os << "  note: " << note << "\n";
  if (rank >= 0 && rank < pr * pc) {
    int i = rank / pc, j = rank % pc;
    os << "  reads of rank " << rank << " = P(" << i << "," << j << "):";
    int last = -2;
    for (const SpRead& r : reads(i, j)) {
      if (r.tick != last)
        os << "\n    " << (r.tick < 0 ? std::string("pre-shift") : "tick " + std::to_string(r.tick))
           << ":";
      last = r.tick;
      os << " " << r.matrix << "(" << (r.matrix == 'A' ? r.panel : r.image) << ","
         << (r.matrix == 'A' ? r.image : r.panel) << ")<-" << r.from;
    }
    os << "\n";
  }
  return os.str();
}

std::vector<int> k_images(const SpgemmPlan& plan, int nk, const std::vector<int>* a_col,
                          const std::vector<int>* b_row) {
  int a = plan.a_per_col(), b = plan.b_per_row();
  std::vector<int> kv(static_cast<std::size_t>(nk));
  if (a_col && b_row) {
    bool ok = true;
    for (int kb = 0; kb < nk && ok; ++kb) {
      int c = (*a_col)[static_cast<std::size_t>(kb)], r = (*b_row)[static_cast<std::size_t>(kb)];
      int lo = std::max(c * a, r * b), hi = std::min(c * a + a, r * b + b);
      ok = lo < hi;
      kv[static_cast<std::size_t>(kb)] = lo;
    }
    if (ok) return kv;
  }
  for (int kb = 0; kb < nk; ++kb) {
    auto k = static_cast<std::size_t>(kb);
    if (a_col)
      kv[k] = (*a_col)[k] * a + kb % a;
    else if (b_row)
      kv[k] = (*b_row)[k] * b + kb % b;
    else
      kv[k] = kb % plan.v;
  }
  return kv;
}

}  // namespace tessel::sparse
