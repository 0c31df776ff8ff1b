// The block-sparse multiply's plan (pure): layer validation (eqs. 4, 5), Cannon's and rma25d's
// schedules simulated independently, predicted volumes on small hand-checked cases.
#include <gtest/gtest.h>

#include <map>
#include <numeric>
#include <set>

#include "tessel/core/error.hpp"
#include "tessel/sparse/spgemm_plan.hpp"

using namespace tessel;
using namespace tessel::sparse;

TEST(SpgemmPlan, ValidLayers) {
  EXPECT_EQ(valid_layers(1, 1), (std::vector<int>{1}));
  EXPECT_EQ(valid_layers(2, 2), (std::vector<int>{1, 4}));
  EXPECT_EQ(valid_layers(3, 3), (std::vector<int>{1, 9}));
  EXPECT_EQ(valid_layers(4, 4), (std::vector<int>{1, 4, 16}));
  EXPECT_EQ(valid_layers(6, 6), (std::vector<int>{1, 4, 9, 36}));
  EXPECT_EQ(valid_layers(2, 4), (std::vector<int>{1, 2}));
  EXPECT_EQ(valid_layers(4, 2), (std::vector<int>{1, 2}));
  EXPECT_EQ(valid_layers(3, 9), (std::vector<int>{1, 3}));
  EXPECT_EQ(valid_layers(2, 3), (std::vector<int>{1}));  // 3 not a multiple of 2
  EXPECT_EQ(valid_layers(2, 8), (std::vector<int>{1}));  // 8 > 2^2
  EXPECT_EQ(valid_layers(1, 4), (std::vector<int>{1}));
}

TEST(SpgemmPlan, LayerErrors) {
  EXPECT_THROW(make_spgemm_plan(SpAlgorithm::Rma25d, 3, 3, 4), GridError);
  EXPECT_THROW(make_spgemm_plan(SpAlgorithm::Rma25d, 2, 2, 2), GridError);
  EXPECT_THROW(make_spgemm_plan(SpAlgorithm::Rma25d, 2, 3, 2), GridError);
  EXPECT_THROW(make_spgemm_plan(SpAlgorithm::Rma25d, 2, 8, 4), GridError);
  EXPECT_THROW(make_spgemm_plan(SpAlgorithm::Cannon, 2, 2, 4), GridError);
  EXPECT_THROW(make_spgemm_plan(SpAlgorithm::Cannon, 0, 2, 1), GridError);
  EXPECT_THROW(make_spgemm_plan(SpAlgorithm::Rma25d, 2, 2, -1), GridError);
  try {
    make_spgemm_plan(SpAlgorithm::Rma25d, 3, 3, 4);
  } catch (const GridError& e) {
    std::string w = e.what();
    EXPECT_NE(w.find("L = 4"), std::string::npos) << w;
    EXPECT_NE(w.find("3x3"), std::string::npos) << w;
    EXPECT_NE(w.find("valid: 1, 9"), std::string::npos) << w;
  }
}

TEST(SpgemmPlan, AutoLayers) {
  auto p = make_spgemm_plan(SpAlgorithm::Rma25d, 2, 2, 0);  // no sizes: L = 1, with a note
  EXPECT_EQ(p.layers, 1);
  EXPECT_FALSE(p.note.empty());
  SpVolumeModel small_c{1e6, 1e6, 1.0};  // C negligible: the largest valid L <= 4
  EXPECT_EQ(make_spgemm_plan(SpAlgorithm::Rma25d, 2, 2, 0, &small_c).layers, 4);
  EXPECT_EQ(make_spgemm_plan(SpAlgorithm::Rma25d, 3, 3, 0, &small_c).layers, 1);
  EXPECT_EQ(make_spgemm_plan(SpAlgorithm::Rma25d, 2, 4, 0, &small_c).layers, 2);
  EXPECT_EQ(make_spgemm_plan(SpAlgorithm::Rma25d, 4, 4, 0, &small_c).layers, 4);
  EXPECT_EQ(make_spgemm_plan(SpAlgorithm::Cannon, 2, 3, 0, &small_c).layers, 1);
  auto n = make_spgemm_plan(SpAlgorithm::Rma25d, 2, 2, 0, &small_c);
  EXPECT_NE(n.note.find("L=1:"), std::string::npos) << n.note;
  EXPECT_NE(n.note.find("L=4:"), std::string::npos) << n.note;
  auto q = make_spgemm_plan(SpAlgorithm::Rma25d, 4, 2, 2);
  EXPECT_EQ(q.lr, 2);
  EXPECT_EQ(q.lc, 1);
  EXPECT_EQ(q.side_r, 2);
  EXPECT_EQ(q.v, 4);
  EXPECT_EQ(q.ticks, 2);
}

namespace {
std::vector<std::pair<int, int>> all_grids() {
  std::vector<std::pair<int, int>> g;
  for (int pr = 1; pr <= 6; ++pr)
    for (int pc = 1; pc <= 6; ++pc) g.emplace_back(pr, pc);
  g.emplace_back(3, 9);
  g.emplace_back(9, 3);
  return g;
}
}  // namespace

// Simulates Cannon's buffers: a rank holds the images it got (pre-shift, then one per tick);
// at tick t it must hold the image it multiplies, the sender must be multiplying the image it
// sends, and every image is multiplied once.
TEST(SpgemmPlan, CannonScheduleIsConsistent) {
  for (auto [pr, pc] : all_grids()) {
    auto p = make_spgemm_plan(SpAlgorithm::Cannon, pr, pc);
    ASSERT_EQ(p.v, std::lcm(pr, pc));
    for (int i = 0; i < pr; ++i)
      for (int j = 0; j < pc; ++j) {
        std::multiset<int> held_a, held_b;
        std::set<int> used;
        auto reads = p.reads(i, j);
        for (const auto& r : reads) {
          if (r.tick != -1) continue;
          if (r.matrix == 'A') {
            EXPECT_EQ(r.from, p.rank_of(i, r.image / (p.v / pc)));  // from the home
            held_a.insert(r.image);
          } else {
            EXPECT_EQ(r.from, p.rank_of(r.image / (p.v / pr), j));
            held_b.insert(r.image);
          }
        }
        for (int t = 0; t < p.v; ++t) {
          int v = p.cannon_image(i, j, t);
          EXPECT_TRUE(held_a.count(v)) << pr << "x" << pc << " P(" << i << "," << j << ") t=" << t;
          EXPECT_TRUE(held_b.count(v));
          used.insert(v);
          for (const auto& r : reads) {
            if (r.tick != t) continue;
            int si = r.from / pc, sj = r.from % pc;
            EXPECT_EQ(p.cannon_image(si, sj, t), r.image);  // the sender multiplies it now
            (r.matrix == 'A' ? held_a : held_b).insert(r.image);
          }
        }
        EXPECT_EQ(static_cast<int>(used.size()), p.v);
      }
  }
}

// rma25d: for every C panel, the layers of its fibre together use every image exactly once, and
// every read comes from the image's home.
TEST(SpgemmPlan, Rma25dCoversEveryImageOnce) {
  for (auto [pr, pc] : all_grids())
    for (int L : valid_layers(pr, pc)) {
      auto p = make_spgemm_plan(SpAlgorithm::Rma25d, pr, pc, L);
      ASSERT_EQ(p.v % L, 0);
      std::map<std::pair<int, int>, std::multiset<int>> uses;
      for (int i = 0; i < pr; ++i)
        for (int j = 0; j < pc; ++j) {
          for (int s = 0; s < p.ticks; ++s)
            for (auto mn : p.rma_panels(i, j)) uses[mn].insert(p.rma_image(i, j, s));
          for (const auto& r : p.reads(i, j)) {
            if (r.matrix == 'A')
              EXPECT_EQ(r.from, p.rank_of(r.panel, r.image / (p.v / pc)));
            else
              EXPECT_EQ(r.from, p.rank_of(r.image / (p.v / pr), r.panel));
          }
        }
      ASSERT_EQ(static_cast<int>(uses.size()), pr * pc) << pr << "x" << pc << " L=" << L;
      for (auto& [mn, s] : uses) {
        EXPECT_EQ(static_cast<int>(s.size()), p.v) << pr << "x" << pc << " L=" << L;
        EXPECT_EQ(static_cast<int>(std::set<int>(s.begin(), s.end()).size()), p.v);
      }
    }
}

TEST(SpgemmPlan, PredictedVolumesSmallCases) {
  auto one = [](int, int) -> std::int64_t { return 1; };
  // Cannon 2x2: V = 2. P(0,0) starts with image 0 (home), receives 1 A image at tick 0.
  auto c = make_spgemm_plan(SpAlgorithm::Cannon, 2, 2);
  EXPECT_EQ(c.predict(0, 0, one, one, one).a, 1);
  EXPECT_EQ(c.predict(1, 0, one, one, one).a, 2);  // image 1 comes from P(1,1) first
  EXPECT_EQ(c.predict(0, 0, one, one, one).c, 0);
  // rma25d 2x2, L = 4: one tick, two A and two B images, one of each at home for P(0,0);
  // three partial C panels leave.
  auto r = make_spgemm_plan(SpAlgorithm::Rma25d, 2, 2, 4);
  auto v00 = r.predict(0, 0, one, one, one);
  EXPECT_EQ(v00.a, 1);
  EXPECT_EQ(v00.b, 1);
  EXPECT_EQ(v00.c, 3);
  // rma25d L = 1 on 3x3 (V = 3): every rank reads the 3 images of its row, one at home.
  auto r1 = make_spgemm_plan(SpAlgorithm::Rma25d, 3, 3, 1);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) {
      auto vol = r1.predict(i, j, one, one, one);
      EXPECT_EQ(vol.a, 2);
      EXPECT_EQ(vol.b, 2);
      EXPECT_EQ(vol.c, 0);
    }
  // eq. 7 on a square grid with equal images: A + B per rank = (V / sqrt(L)) (S_A + S_B) minus
  // the images at home; 4x4, L = 4: V = 4, 2 A and 2 B images per tick, 1 tick... V/L = 1.
  auto r4 = make_spgemm_plan(SpAlgorithm::Rma25d, 4, 4, 4);
  EXPECT_EQ(r4.ticks, 1);
  std::int64_t ab = 0;
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) {
      auto vol = r4.predict(i, j, one, one, one);
      ab += vol.a + vol.b;
      EXPECT_EQ(vol.c, 3);
    }
  // V/sqrt(L) = 2 images of each per rank (32 + 32 reads), less those at home.
  EXPECT_LE(ab, 64);
  EXPECT_GE(ab, 48);
}

// eq. 7 with the C term on synthetic totals, checked by hand on 2x2. L = 1: V = 2, an A image
// is a/4; each rank reads 2 A images, 1 at home (and B alike): A = a/4, B = b/4, C = 0.
// L = 4: V = 4, an A image is a/8; P(i, j) reads A images (0, v), (1, v) with v = 2j + i, the
// one of its own row at home: A = a/8; B images (v, 0), (v, 1) live on P(j, .): 1 at home when
// i = j, else 0: B = 1.5 b/8 on average; C = 3 partial panels of c/4.
TEST(SpgemmPlan, ChooseLayersByEq7WithC) {
  const double a = 8e6, b = 8e6;
  for (double c : {0.0, 1e6, 2e6, 3e6, 8e6, 1e9}) {
    auto pred = predict_layers(2, 2, {a, b, c});
    ASSERT_EQ(pred.size(), 2u);
    EXPECT_EQ(pred[0].layers, 1);
    EXPECT_DOUBLE_EQ(pred[0].a, a / 4);
    EXPECT_DOUBLE_EQ(pred[0].b, b / 4);
    EXPECT_DOUBLE_EQ(pred[0].c, 0);
    EXPECT_EQ(pred[1].layers, 4);
    EXPECT_DOUBLE_EQ(pred[1].a, a / 8);
    EXPECT_DOUBLE_EQ(pred[1].b, 1.5 * b / 8);
    EXPECT_DOUBLE_EQ(pred[1].c, 3 * c / 4);
    // L = 4 wins while 3c/4 < a/8 + b/16 = 1.5e6, i.e. c < 2e6 (a tie keeps L = 1)
    EXPECT_EQ(choose_layers(2, 2, {a, b, c}), c < 2e6 ? 4 : 1) << c;
  }
  // Synthetic occupancies (1000 x 1000 blocks of 5 x 5: 232 bytes each as an image, 208 as a
  // C block), A and B 2% full. 4x4: L = 1 receives 3 of 4 images of each (1.74 MB), L = 4 about
  // 2.2 of 4 images of half the size (1.01 MB) but sends 3 partial panels of C / 16: L = 4 wins
  // only while C < 0.73 MB / 3 * 16, i.e. C below ~1.9% full. A product that fills in 10x
  // makes L = 4 lose, one as full as its operands already loses at 4x4 (1.80 vs 1.74 MB) but
  // still wins on 2x4 (L = 2: 2.26 vs 2.32 MB), one 4x sparser (heavily filtered) wins; the
  // choice never grows with C.
  auto bytes = [](double occ, double per_block) { return 1e6 * occ * per_block; };
  SpVolumeModel fill_in{bytes(0.02, 232), bytes(0.02, 232), bytes(0.2, 208)};
  SpVolumeModel no_fill{bytes(0.02, 232), bytes(0.02, 232), bytes(0.02, 208)};
  SpVolumeModel sparser{bytes(0.02, 232), bytes(0.02, 232), bytes(0.005, 208)};
  EXPECT_EQ(choose_layers(4, 4, fill_in), 1);
  EXPECT_EQ(choose_layers(4, 4, no_fill), 1);
  EXPECT_EQ(choose_layers(4, 4, sparser), 4);
  auto p44 = predict_layers(4, 4, no_fill);
  EXPECT_NEAR(p44[0].total(), 1.74e6, 1e3);
  EXPECT_NEAR(p44[1].a + p44[1].b, 1.014e6, 1e3);
  EXPECT_NEAR(p44[1].c, 3 * bytes(0.02, 208) / 16, 1e-6);
  int last = 16;
  for (double occ_c = 0; occ_c <= 1.0; occ_c += 0.01) {
    int L = choose_layers(4, 4, {bytes(0.02, 232), bytes(0.02, 232), bytes(occ_c, 208)});
    EXPECT_LE(L, last) << occ_c;
    last = L;
  }
  // Non-square 2x4 (L in {1, 2}): the same trade.
  EXPECT_EQ(choose_layers(2, 4, no_fill), 2);
  EXPECT_EQ(choose_layers(2, 4, fill_in), 1);
  // max_layers: 4x4 can take L = 16 when allowed and C is negligible
  EXPECT_EQ(choose_layers(4, 4, {1e6, 1e6, 0}, 16), 16);
  std::string note;
  choose_layers(2, 2, {a, b, 1e6}, 4, &note);
  EXPECT_NE(note.find("L = 4"), std::string::npos) << note;
  EXPECT_NE(note.find("L=1: 2.00 + 2.00 + 0.00 = 4.00"), std::string::npos) << note;
}

TEST(SpgemmPlan, KImages) {
  auto p = make_spgemm_plan(SpAlgorithm::Cannon, 2, 4);  // V = 4, a = 1, b = 2
  std::vector<int> acol{0, 1, 2, 3}, brow{0, 0, 1, 1};
  EXPECT_EQ(k_images(p, 4, &acol, &brow), (std::vector<int>{0, 1, 2, 3}));
  std::vector<int> bad{1, 0, 1, 1};  // k block 0: column 0 of A but row 1 of B
  EXPECT_EQ(k_images(p, 4, &acol, &bad), (std::vector<int>{0, 1, 2, 3}));  // A kept
  auto q = make_spgemm_plan(SpAlgorithm::Cannon, 4, 2);                    // V = 4, a = 2, b = 1
  std::vector<int> ac{0, 0, 1}, br{1, 0, 3};
  EXPECT_EQ(k_images(q, 3, &ac, &br), (std::vector<int>{1, 0, 3}));
  EXPECT_EQ(k_images(q, 3, nullptr, nullptr), (std::vector<int>{0, 1, 2}));
}

TEST(SpgemmPlan, Describe) {
  SpVolumeModel m{1e6, 1e6, 0};
  auto p = make_spgemm_plan(SpAlgorithm::Rma25d, 2, 4, 0, &m);
  std::string d = p.describe(5);
  EXPECT_NE(d.find("rma25d on a 2x4 grid"), std::string::npos) << d;
  EXPECT_NE(d.find("L = 2"), std::string::npos) << d;
  EXPECT_NE(d.find("reads of rank 5"), std::string::npos) << d;
  EXPECT_NE(d.find("note:"), std::string::npos) << d;
  EXPECT_NE(make_spgemm_plan(SpAlgorithm::Cannon, 2, 3).describe().find("V = lcm(PR, PC) = 6"),
            std::string::npos);
}

#include "tessel/layout/grid2d.hpp"

TEST(ProcessGrid2D, Check) {
  EXPECT_NO_THROW(layout::ProcessGrid2D::check(2, 3, 6));
  EXPECT_THROW(layout::ProcessGrid2D::check(2, 3, 7), GridError);
  EXPECT_THROW(layout::ProcessGrid2D::check(0, 3, 0), GridError);
  EXPECT_THROW(layout::ProcessGrid2D::check(-1, -1, 1), GridError);
}
