#pragma once

#include <algorithm>
#include <vector>

namespace mtplx {

// The middle value (the mean of the middle two for an even count); 0 for none. A single run that
// fell in a slower or faster spell of a shared machine moves it less than it moves a mean.
inline double Median(std::vector<double> values) {
  if (values.empty()) return 0.0;
  std::sort(values.begin(), values.end());
  const size_t mid = values.size() / 2;
  return values.size() % 2 ? values[mid] : 0.5 * (values[mid - 1] + values[mid]);
}

}  // namespace mtplx
