#!/bin/bash
# mkztree.sh DIR: a tree for compression tests. File sizes sit around every
# boundary a compressed layout has (block, pcluster for -C 4K..256K, the
# 4 MiB segment, for compressible content), in three flavours of content: text that compresses well,
# bytes that do not compress, and a mix that alternates every 3000 bytes.
set -euo pipefail
[ $# = 1 ] && [ ! -e "$1" ] || { echo "usage: mkztree.sh NEWDIR" >&2; exit 1; }
mkdir -p "$1"
python3 - "$1" <<'PY'
import hashlib, os, sys
root = sys.argv[1]
text = b"".join(b"%08d the quick brown fox %d jumps\n" % (i, i * 7 % 1000)
                for i in range(300000))
def noise(n, seed):
    return hashlib.shake_256(seed.encode()).digest(n)
def mixed(n):
    out, i = bytearray(), 0
    while len(out) < n:
        out += text[i * 3000:(i + 1) * 3000] if i % 2 == 0 else noise(3000, str(i))
        i += 1
    return bytes(out[:n])
sizes = {0, 1, 100, 4095, 4096, 4097, 8191, 8192, 8193, 12288, 12289}
for pc in (4096, 16384, 65536, 262144):
    sizes |= {pc - 1, pc, pc + 1, 3 * pc - 1, 3 * pc + 1}
big = {(4 << 20) + 1}   # crosses the 4 MiB segment boundary
for kind, make in (("text", lambda n: (text * (n // len(text) + 1))[:n]),
                   ("noise", lambda n: noise(n, "n%d" % n)),
                   ("mixed", mixed)):
    os.mkdir(os.path.join(root, kind))
    for n in sorted(sizes | (big if kind != "noise" else set())):
        with open(os.path.join(root, kind, "f%d" % n), "wb") as f:
            f.write(make(n))
with open(os.path.join(root, "zeros"), "wb") as f:
    f.write(bytes(5 << 20))
PY
