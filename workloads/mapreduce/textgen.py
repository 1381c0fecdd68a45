"""Deterministic WordCount input: `words` words drawn from a Zipf law over a vocabulary, in lines of
`words_per_line`, split over `splits` files (one map task each). The same parameters give the same bytes
on every machine (Python's Mersenne Twister seeded, no floating-point accumulation across platforms
beyond IEEE doubles), so the input is pinned by its sha256 in every result.

    bazel run //workloads/mapreduce:textgen -- --words 3000000 --vocabulary 10000 --out /tmp/in
"""

import argparse
import bisect
import collections
import dataclasses
import hashlib
import itertools
import os
import random
import sys
from results import safeio


@dataclasses.dataclass(frozen=True)
class TextParams:
    words: int
    vocabulary: int
    zipf_s: float
    seed: int
    splits: int
    words_per_line: int = 10

    def check(self):
        if self.words < 1 or self.vocabulary < 1 or self.splits < 1 or self.words_per_line < 1:
            raise ValueError(f"words, vocabulary, splits and words_per_line must be >= 1: {self}")
        if self.zipf_s < 0:
            raise ValueError(f"zipf_s must be >= 0 (0 = uniform), not {self.zipf_s}")


def vocabulary(n):
    """Word k of the vocabulary: short, distinct, sortable the same way by every engine (ASCII)."""
    return [f"w{k:05d}" for k in range(n)]


def generate(params, folder):
    """Writes part-NNNNN.txt files into `folder`; returns ({file: sha256}, Counter of words)."""
    params.check()
    os.makedirs(folder, exist_ok=True)
    words = vocabulary(params.vocabulary)
    cumulative = list(itertools.accumulate(1.0 / (k + 1) ** params.zipf_s for k in range(params.vocabulary)))
    total = cumulative[-1]
    rng = random.Random(params.seed)
    counts = collections.Counter()
    digests = {}
    per_split = -(-params.words // params.splits)
    left = params.words
    for split in range(params.splits):
        name = f"part-{split:05d}.txt"
        n = min(per_split, left)
        left -= n
        drawn = [words[bisect.bisect_left(cumulative, rng.random() * total)] for _ in range(n)]
        counts.update(drawn)
        lines = (" ".join(drawn[i:i + params.words_per_line]) for i in range(0, n, params.words_per_line))
        data = ("\n".join(lines) + "\n").encode() if n else b""
        safeio.write_bytes(os.path.join(folder, name), data)
        digests[name] = hashlib.sha256(data).hexdigest()
    return digests, counts


def wordcount_digest(counts):
    """sha256 of the WordCount answer as both engines write it: "word<TAB>count" lines sorted by word."""
    text = "".join(f"{w}\t{c}\n" for w, c in sorted(counts.items()))
    return hashlib.sha256(text.encode()).hexdigest()


def main(argv=None):
    parser = argparse.ArgumentParser(description="Generate deterministic WordCount input.")
    parser.add_argument("--words", type=int, default=3_000_000)
    parser.add_argument("--vocabulary", type=int, default=10_000)
    parser.add_argument("--zipf-s", type=float, default=1.0)
    parser.add_argument("--seed", type=int, default=20261123)
    parser.add_argument("--splits", type=int, default=1)
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    params = TextParams(args.words, args.vocabulary, args.zipf_s, args.seed, args.splits)
    try:
        digests, counts = generate(params, args.out)
    except (ValueError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    for name, digest in digests.items():
        print(f"{name} sha256 {digest}")
    print(f"{len(counts)} distinct words; expected WordCount output sha256 {wordcount_digest(counts)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
