#!/usr/bin/env python3
"""The smallfiles corpus: 200,000 text files in 1,000 directories, sizes
0..16 KiB (a quarter each: empty, up to 512 B, up to 4 KiB, 4-16 KiB),
made of random words from a fixed seed, so every run builds the same tree.
It stresses what the other corpora do not: per-file costs and metadata
(most of its data is inline in inode records). Usage: smallfiles.py DIR"""
import os
import random
import sys

root = sys.argv[1]
rng = random.Random(1)
letters = "abcdefghijklmnopqrstuvwxyz"
words = ["".join(rng.choice(letters) for _ in range(rng.randint(2, 9)))
         for _ in range(2000)]
for d in range(1000):
    path = os.path.join(root, "d%03d" % (d // 100), "s%04d" % d)
    os.makedirs(path, exist_ok=True)
    for f in range(200):
        size = rng.choice([0, rng.randint(1, 512), rng.randint(1, 4096),
                           rng.randint(4097, 16384)])
        text = " ".join(rng.choice(words) for _ in range(size // 4 + 1))
        with open(os.path.join(path, "f%03d.txt" % f), "w") as out:
            out.write(text[:size])
