#include "tokenizer/synthetic_corpus.h"

namespace mtplx::tokenizer {
namespace {

// Changing this text changes every synthetic tokenizer and the goldens made from them
// (tests/data/tokenizer/); regenerate them with tools/tokenizer/make_goldens.py.
constexpr std::string_view kCorpus = R"corpus(The Lighthouse Keeper

On the northern edge of the island there is a small white lighthouse. Every evening the keeper
climbs the ninety-two steps of the tower, checks the lamp, and writes a short note in the log
book. Most notes are about the weather: "Wind from the west, light rain, the sea is calm." Some
are about the birds that rest on the railing, and a few are about the ships that pass in the
night. The keeper has done this for twenty-three years, and she has never missed a day.

When people ask her why she stays, she answers that the light is not hers to switch off. The
ships need to know where the rocks are, and the rocks do not move. She likes the quiet. She
likes that the work is simple and that it matters. In the winter she reads old books and
repairs the nets of the fishermen in the village. In the summer she walks along the cliffs and
counts the seals on the beach below.

It's a quiet life, but it isn't a lonely one. The postman comes on Tuesdays. The children from
the school visit twice a year, and they always ask the same questions: How high is the tower?
How far can the light be seen? Have you ever seen a storm break a window? She tells them that
the tower is thirty-one meters high, that the light reaches twenty-four nautical miles, and
that yes, once, in 1998, a wave broke the glass of the lower door. They're always delighted.

A language model reads text as a sequence of tokens. A tokenizer splits the text into pieces,
maps each piece to a number, and the model predicts the next number. Good tokenizers keep
common words whole and split rare words into smaller parts. The same text must always give
the same tokens, and decoding the tokens must give back the original text, byte for byte.
We'll test that property many times: encode, decode, compare, and repeat with new inputs.

Numbers are split into single digits: 3, 14, 159, 2653, 58979 and 323846 all become short
runs of digit tokens. Dates such as 2024-05-17 and times like 12:30:45 follow the same rule.
Prices ($19.99, 4.50 EUR) and versions (v1.2.3, 0.23.0) mix digits with punctuation.

Other scripts appear too. Café, naïve, résumé and Zürich carry accents. Москва и Санкт-Петербург
are written in Cyrillic. 東京と大阪は日本の都市です。北京和上海是中国的城市。서울은 한국의 수도입니다.
Emoji such as 🙂, 🚀 and 👍 are four bytes each in UTF-8.

# A few lines of Python.

import math
from dataclasses import dataclass, field


@dataclass
class Point:
    """A point in the plane."""

    x: float = 0.0
    y: float = 0.0

    def distance_to(self, other: "Point") -> float:
        return math.hypot(self.x - other.x, self.y - other.y)


@dataclass
class Path:
    points: list[Point] = field(default_factory=list)

    def add(self, point: Point) -> None:
        self.points.append(point)

    def length(self) -> float:
        total = 0.0
        for previous, current in zip(self.points, self.points[1:]):
            total += previous.distance_to(current)
        return total


def fibonacci(n: int) -> list[int]:
    """Returns the first n Fibonacci numbers."""
    if n <= 0:
        return []
    numbers = [0, 1]
    while len(numbers) < n:
        numbers.append(numbers[-1] + numbers[-2])
    return numbers[:n]


def word_counts(text: str) -> dict[str, int]:
    counts: dict[str, int] = {}
    for word in text.lower().split():
        word = word.strip(".,!?;:\"'()")
        if not word:
            continue
        counts[word] = counts.get(word, 0) + 1
    return counts


class Tokenizer:
    def __init__(self, vocab: dict[str, int]) -> None:
        self.vocab = vocab
        self.inverse = {index: token for token, index in vocab.items()}

    def encode(self, text: str) -> list[int]:
        return [self.vocab[token] for token in text.split() if token in self.vocab]

    def decode(self, ids: list[int]) -> str:
        return " ".join(self.inverse[index] for index in ids)


if __name__ == "__main__":
    path = Path()
    for step in range(10):
        path.add(Point(x=step, y=step * step / 10.0))
    print(f"length = {path.length():.3f}")
    print(fibonacci(12))
    print(word_counts("The keeper climbs the tower. The light is on."))
    try:
        value = int("forty-two")
    except ValueError as error:
        print("error:", error)
)corpus";

}  // namespace

std::string_view SyntheticTrainingCorpus() { return kCorpus; }

}  // namespace mtplx::tokenizer
