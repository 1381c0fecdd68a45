"""Deterministic TeraSort input in the record layout of Hadoop 1.x's TeraGen, which both engines read.

Each record is one 100-byte line: a 10-byte key of printable ASCII, a 10-digit row id, 78 filler letters,
and "\\r\\n". Hadoop 1.2.1's TeraSort reads lines (its key is the first 10 bytes); 3.4.2's reads fixed
100-byte records: the same bytes, so one input serves both (README.md, "Facts the rigs rely on": MR2 reads
MR1's TeraGen output and the sorted outputs are identical). Written by tunelab, not by TeraGen: TeraGen's own random
generator is not reproduced, its layout is. Keys are unique (a collision is drawn again), so the sorted
output, and its sha256, is the same for every correct sort.
"""

import hashlib
import os
import random
from results import safeio

RECORD_BYTES = 100
_KEY_ALPHABET = bytes(range(0x21, 0x7F))  # printable, no space: never a line break for MR1's reader


def generate(rows, seed, folder, splits=1):
    """Writes part-NNNNN files; returns ({file: sha256}, sha256 of the records sorted)."""
    if rows < 1 or splits < 1:
        raise ValueError(f"rows and splits must be >= 1 (rows={rows}, splits={splits})")
    os.makedirs(folder, exist_ok=True)
    rng = random.Random(seed)
    seen = set()
    records = []
    for row in range(rows):
        key = bytes(rng.choices(_KEY_ALPHABET, k=10))
        while key in seen:
            key = bytes(rng.choices(_KEY_ALPHABET, k=10))
        seen.add(key)
        filler = bytes(65 + (row + k) % 26 for k in range(78))
        records.append(key + b"%010d" % row + filler + b"\r\n")
    digests = {}
    per_split = -(-rows // splits)
    for split in range(splits):
        name = f"part-{split:05d}"
        data = b"".join(records[split * per_split:(split + 1) * per_split])
        safeio.write_bytes(os.path.join(folder, name), data)
        digests[name] = hashlib.sha256(data).hexdigest()
    return digests, hashlib.sha256(b"".join(sorted(records))).hexdigest()
