// Small statistics helpers for the sampler and speculative-decoding distribution tests:
// chi-square p-values (regularized upper incomplete gamma), goodness of fit against known
// probabilities, two-sample homogeneity, total variation. Header-only, no dependencies.
//
// All tests that use these run with fixed seeds, so their outcomes are deterministic: a p-value
// threshold decides once, when the test is written, and never flakes afterwards.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

namespace mtplx::test_stats {

// Regularized lower incomplete gamma P(a, x) by its series (converges fast for x < a + 1).
inline double GammaPSeries(double a, double x) {
  double sum = 1.0 / a, term = sum, ap = a;
  for (int n = 0; n < 100000; ++n) {
    ap += 1.0;
    term *= x / ap;
    sum += term;
    if (std::fabs(term) < std::fabs(sum) * 1e-16) break;
  }
  return sum * std::exp(-x + a * std::log(x) - std::lgamma(a));
}

// Regularized upper incomplete gamma Q(a, x) by its continued fraction (modified Lentz; for
// x >= a + 1).
inline double GammaQContinuedFraction(double a, double x) {
  constexpr double kTiny = 1e-300;
  double b = x + 1.0 - a, c = 1.0 / kTiny, d = 1.0 / b, h = d;
  for (int i = 1; i < 100000; ++i) {
    const double an = -i * (i - a);
    b += 2.0;
    d = an * d + b;
    if (std::fabs(d) < kTiny) d = kTiny;
    c = b + an / c;
    if (std::fabs(c) < kTiny) c = kTiny;
    d = 1.0 / d;
    const double delta = d * c;
    h *= delta;
    if (std::fabs(delta - 1.0) < 1e-16) break;
  }
  return std::exp(-x + a * std::log(x) - std::lgamma(a)) * h;
}

// Q(a, x) = Γ(a, x) / Γ(a), the upper regularized incomplete gamma.
inline double GammaQ(double a, double x) {
  if (x <= 0.0) return 1.0;
  if (x < a + 1.0) return 1.0 - GammaPSeries(a, x);
  return GammaQContinuedFraction(a, x);
}

// P(X >= stat) for X ~ chi-square with df degrees of freedom.
inline double ChiSquareSurvival(double stat, double df) {
  if (df <= 0) return 1.0;
  return GammaQ(0.5 * df, 0.5 * stat);
}

struct ChiSquareResult {
  double statistic = 0.0;
  int df = 0;
  double p_value = 1.0;
  // Observations in a cell whose probability is 0: the hypothesis is impossible, p = 0.
  int64_t impossible = 0;
  std::string ToString() const {
    return "chi2=" + std::to_string(statistic) + " df=" + std::to_string(df) +
           " p=" + std::to_string(p_value) + " impossible=" + std::to_string(impossible);
  }
};

// Goodness of fit of `observed` counts to `probs` (same length, probs sum to 1). Cells with an
// expected count below `min_expected` are pooled into one cell (itself merged into the smallest
// remaining cell when still below it).
inline ChiSquareResult ChiSquareGoodnessOfFit(const std::vector<int64_t>& observed,
                                              const std::vector<double>& probs,
                                              double min_expected = 5.0) {
  ChiSquareResult r;
  const double n =
      static_cast<double>(std::accumulate(observed.begin(), observed.end(), int64_t{0}));
  std::vector<double> obs, exp;
  double pooled_obs = 0.0, pooled_exp = 0.0;
  for (size_t i = 0; i < observed.size(); ++i) {
    if (probs[i] <= 0.0) {
      r.impossible += observed[i];
      continue;
    }
    const double e = probs[i] * n;
    if (e < min_expected) {
      pooled_obs += static_cast<double>(observed[i]);
      pooled_exp += e;
    } else {
      obs.push_back(static_cast<double>(observed[i]));
      exp.push_back(e);
    }
  }
  if (pooled_exp > 0.0) {
    if (pooled_exp >= min_expected || exp.empty()) {
      obs.push_back(pooled_obs);
      exp.push_back(pooled_exp);
    } else {
      const size_t smallest = std::min_element(exp.begin(), exp.end()) - exp.begin();
      obs[smallest] += pooled_obs;
      exp[smallest] += pooled_exp;
    }
  }
  for (size_t i = 0; i < obs.size(); ++i)
    r.statistic += (obs[i] - exp[i]) * (obs[i] - exp[i]) / exp[i];
  r.df = static_cast<int>(obs.size()) - 1;
  r.p_value = r.impossible > 0 ? 0.0 : ChiSquareSurvival(r.statistic, r.df);
  return r;
}

// Two-sample chi-square test of homogeneity: are counts `a` and `b` (same cells, any totals)
// draws from one distribution? Cells whose pooled expected count (under the null) is below
// `min_expected` in either sample are pooled into one cell, handled as in the fit test.
inline ChiSquareResult ChiSquareHomogeneity(const std::vector<int64_t>& a,
                                            const std::vector<int64_t>& b,
                                            double min_expected = 5.0) {
  ChiSquareResult r;
  const double na = static_cast<double>(std::accumulate(a.begin(), a.end(), int64_t{0}));
  const double nb = static_cast<double>(std::accumulate(b.begin(), b.end(), int64_t{0}));
  const double fa = na / (na + nb), fb = nb / (na + nb);
  std::vector<double> ca, cb;
  double pa = 0.0, pb = 0.0;
  for (size_t i = 0; i < a.size(); ++i) {
    const double t = static_cast<double>(a[i] + b[i]);
    if (t == 0.0) continue;
    if (std::min(fa, fb) * t < min_expected) {
      pa += static_cast<double>(a[i]);
      pb += static_cast<double>(b[i]);
    } else {
      ca.push_back(static_cast<double>(a[i]));
      cb.push_back(static_cast<double>(b[i]));
    }
  }
  if (pa + pb > 0.0) {
    if (std::min(fa, fb) * (pa + pb) >= min_expected || ca.empty()) {
      ca.push_back(pa);
      cb.push_back(pb);
    } else {
      size_t smallest = 0;
      for (size_t i = 1; i < ca.size(); ++i)
        if (ca[i] + cb[i] < ca[smallest] + cb[smallest]) smallest = i;
      ca[smallest] += pa;
      cb[smallest] += pb;
    }
  }
  for (size_t i = 0; i < ca.size(); ++i) {
    const double t = ca[i] + cb[i];
    const double ea = t * fa, eb = t * fb;
    r.statistic += (ca[i] - ea) * (ca[i] - ea) / ea + (cb[i] - eb) * (cb[i] - eb) / eb;
  }
  r.df = static_cast<int>(ca.size()) - 1;
  r.p_value = ChiSquareSurvival(r.statistic, r.df);
  return r;
}

// Total variation distance between the empirical distribution of `observed` and `probs`.
inline double TotalVariation(const std::vector<int64_t>& observed,
                             const std::vector<double>& probs) {
  const double n =
      static_cast<double>(std::accumulate(observed.begin(), observed.end(), int64_t{0}));
  double tv = 0.0;
  for (size_t i = 0; i < observed.size(); ++i)
    tv += std::fabs(static_cast<double>(observed[i]) / n - probs[i]);
  return 0.5 * tv;
}

}  // namespace mtplx::test_stats
