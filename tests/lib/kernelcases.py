#!/usr/bin/env python3
"""kernelcases.py CASE IN OUT - one field of an image changed where fsck
once read it otherwise than the kernel (Linux 6.18). The image comes from
Kiln's mkfs of the tree test_fsck_agrees_with_kernel makes; the file
named is a root entry. Cases:
  compact-mtime   a compact inode's i_mtime: its time is the image's plus it
  startblk-hi     an extended flat inode's i_nb: its start block's high bits
  xattr-header    i_xattr_icount 1: a header with no entries
  cblkcnt-small   a full index's block count without big pclusters
  extents         a full index's advise bit 0x1 (encoded extents)
  frag-and-inline FRAGMENT_PCLUSTER set on a file with an inline tail
  interlaced      a 4-block plain pcluster, interlaced
  plain-pfx       the long prefix table marked plain while it is packed
  metabox-xattrs  compat SHARED_EA_IN_METABOX
  name-filter     a name filter that hides every name
  name-filter-exact  one that hides every name but small's own two
  acl-version     a POSIX ACL of version 3
  prefix-count    xattr_prefix_count 1 without the xattr_prefixes feature
  chunks-nobit    chunk-based inodes without the chunked_file feature bit
  packed-size     the packed inode 40 KiB longer, its index short of it: not
                  a kernel case (no file reads there), but erofs-utils'
                  fsck checks the packed inode whole, and so must ours
                  (test_fragments_damaged)
"""
import os
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from erofsimg import Image, resign  # noqa: E402

SB = 1024


def u16(b, o):
    return struct.unpack_from("<H", b, o)[0]


def u32(b, o):
    return struct.unpack_from("<I", b, o)[0]


def xxh32(data, seed):
    """XXH32, written out from its specification, for the name filter."""
    p1, p2, p3, p4, p5 = 2654435761, 2246822519, 3266489917, 668265263, 374761393
    m = 0xFFFFFFFF
    rotl = lambda x, r: ((x << r) | (x >> (32 - r))) & m
    i, n = 0, len(data)
    if n >= 16:
        v = [(seed + p1 + p2) & m, (seed + p2) & m, seed, (seed - p1) & m]
        while n - i >= 16:
            for k in range(4):
                v[k] = rotl((v[k] + u32(data, i + 4 * k) * p2) & m, 13) * p1 & m
            i += 16
        h = (rotl(v[0], 1) + rotl(v[1], 7) + rotl(v[2], 12) + rotl(v[3], 18)) & m
    else:
        h = (seed + p5) & m
    h = (h + n) & m
    while n - i >= 4:
        h = rotl((h + u32(data, i) * p3) & m, 17) * p4 & m
        i += 4
    while i < n:
        h = rotl((h + data[i] * p5) & m, 11) * p1 & m
        i += 1
    h ^= h >> 15
    h = h * p2 & m
    h ^= h >> 13
    h = h * p3 & m
    return h ^ (h >> 16)


def map_header(ino):
    return (ino["tail"] + 7) // 8 * 8


def main():
    case, src, dst = sys.argv[1:4]
    im = Image(open(src, "rb").read())
    b = im.b

    def node(name):
        return im.inode(im.child(im.root, name.encode())[3])

    if case == "compact-mtime":
        struct.pack_into("<I", b, node("small")["pos"] + 12, 31536000)
    elif case == "startblk-hi":
        struct.pack_into("<H", b, node("flat")["pos"] + 6, 1)
    elif case == "xattr-header":
        struct.pack_into("<H", b, node("small")["pos"] + 2, 1)
    elif case == "cblkcnt-small":
        h = map_header(node("text"))
        struct.pack_into("<H", b, h + 16 + 8 + 4, 0x0801)
    elif case == "extents":
        struct.pack_into("<H", b, map_header(node("text")) + 4, 1)
    elif case == "frag-and-inline":
        h = map_header(node("text"))
        struct.pack_into("<I", b, SB + 0x50, u32(b, SB + 0x50) | 0x20)
        struct.pack_into("<H", b, h + 4, u16(b, h + 4) | 0x20)
    elif case == "interlaced":
        r = map_header(node("noise")) + 16
        struct.pack_into("<H", b, r - 16 + 4, 0x16)
        b[r + 8:r + 32] = bytes.fromhex("0200000004080300" "0200000002000200"
                                        "0200000003000100")
    elif case == "plain-pfx":
        struct.pack_into("<I", b, SB + 8, u32(b, SB + 8) | 0x10)
    elif case == "metabox-xattrs":
        struct.pack_into("<I", b, SB + 8, u32(b, SB + 8) | 0x08)
    elif case == "name-filter":
        ino = node("small")
        struct.pack_into("<I", b, SB + 8, u32(b, SB + 8) | 0x04)
        struct.pack_into("<I", b, ino["pos"] + (64 if ino["ext"] else 32),
                         0xFFFFFFFF)
    elif case == "name-filter-exact":
        # user.foo and user.foo.long: "foo", "foo.long" after base 1, user.
        keep = 0
        for rest in (b"foo", b"foo.long"):
            keep |= 1 << (xxh32(rest, 0x25BBE08F + 1) & 31)
        ino = node("small")
        struct.pack_into("<I", b, SB + 8, u32(b, SB + 8) | 0x04)
        struct.pack_into("<I", b, ino["pos"] + (64 if ino["ext"] else 32),
                         0xFFFFFFFF & ~keep)
    elif case == "acl-version":
        k = bytes(b).find(bytes.fromhex("0200000001000600"))
        assert k > 0, "no ACL value found"
        b[k] = 3
    elif case == "packed-size":
        ino = im.inode(struct.unpack_from("<Q", b, SB + 0x60)[0])
        at = ino["pos"] + 8   # i_size, compact or extended
        struct.pack_into("<I", b, at, u32(b, at) + 40960)
    elif case == "chunks-nobit":
        struct.pack_into("<I", b, SB + 80, u32(b, SB + 80) & ~0x04)
    elif case == "prefix-count":
        b[SB + 91] = 1
    else:
        sys.exit("kernelcases.py: unknown case " + case)
    resign(b)
    open(dst, "wb").write(b)


main()
