#!/usr/bin/env python3
"""mkdamaged.py BASE.img FLAT.img OUTDIR - write damaged copies of images.

BASE (lz4, full indexes) and FLAT (uncompressed) are small images of the
same tree made by tests/lib/mkdamaged.sh. Each copy breaks one
rule fsck.erofs checks; OUTDIR/expect lists "NAME<TAB>message fragment".
The superblock is re-signed after each change (unless the damage is the
checksum), so the damage itself is what fsck has to find.
"""
import os
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from erofsimg import Image, resign  # noqa: E402


def main():
    base, flat, outdir = sys.argv[1], sys.argv[2], sys.argv[3]
    data = open(base, "rb").read()
    flatdata = open(flat, "rb").read()
    cases = []

    def case(name, expect, fn, sign=True, src=data):
        im = Image(src)
        fn(im)
        if sign:
            resign(im.b)
        open(os.path.join(outdir, name + ".img"), "wb").write(im.b)
        cases.append((name, expect))

    def put(fmt, off, *v):
        return lambda im: struct.pack_into(fmt, im.b, off(im), *v)

    case("truncated", "image is truncated",
         lambda im: im.b.__delitem__(slice(16384, None)))
    case("bad-magic", "bad magic", put("<I", lambda im: 1024, 0x12345678),
         sign=False)
    case("bad-checksum", "checksum",
         lambda im: im.b.__setitem__(1024 + 0x40, 0x41), sign=False)
    case("unknown-incompat", "unknown incompatible features",
         put("<I", lambda im: 1024 + 0x50, 0x8000))
    case("root-nid-out-of-range", "beyond the end of the image",
         put("<H", lambda im: 1024 + 0x0E, 0xFFF0))
    case("bad-blocksize", "block size", lambda im: im.b.__setitem__(1036, 17))
    sub = lambda im: im.child(im.root, b"d")[3]  # noqa: E731
    case("dir-loop", "is reached 2 times",
         lambda im: struct.pack_into("<Q", im.b, im.child(sub(im), b"sub")[0],
                                     im.root))
    case("dotdot-wrong", "'..' names nid",
         lambda im: struct.pack_into("<Q", im.b, im.child(sub(im), b"..")[0],
                                     sub(im)))
    case("name-with-slash", "contains '/'",
         lambda im: im.b.__setitem__(im.child(sub(im), b"text")[1] + 1, 0x2F))
    case("unsorted-names", "sorted order",
         lambda im: im.b.__setitem__(im.child(sub(im), b"text")[1], 0x01))
    case("nid-out-of-range", "beyond the end of the image",
         lambda im: struct.pack_into("<Q", im.b, im.child(im.root, b"plain")[0],
                                     1 << 40))
    case("type-mismatch", "file type",
         lambda im: im.b.__setitem__(im.child(im.root, b"plain")[0] + 10, 2))
    plain = lambda im: im.inode(im.child(im.root, b"plain")[3])  # noqa: E731
    case("blkaddr-out-of-range", "beyond the end of the image",
         lambda im: struct.pack_into("<I", im.b, plain(im)["pos"] + 16, 0x7FFFFFF0),
         src=flatdata)
    case("lying-size", "beyond the end|crosses",
         lambda im: struct.pack_into("<I", im.b, plain(im)["pos"] + 8, 1 << 30),
         src=flatdata)
    case("xattr-count", "extended attributes|xattr",
         lambda im: struct.pack_into("<H", im.b, plain(im)["pos"] + 2, 0xFFFF))
    case("bad-mode", "file type in mode",
         lambda im: struct.pack_into("<H", im.b, plain(im)["pos"] + 4, 0o170644))
    case("link-count", "link count",
         lambda im: struct.pack_into("<H", im.b, plain(im)["pos"] + 6, 7))
    case("unknown-layout", "data layout",
         lambda im: struct.pack_into("<H", im.b, plain(im)["pos"], 5 << 1))
    text = lambda im: im.inode(im.child(sub(im), b"text")[3])  # noqa: E731

    def zpcluster(im):
        ino = text(im)
        hpos = (ino["tail"] + 7) & ~7
        blk = struct.unpack_from("<I", im.b, hpos + 16 + 4)[0]
        return ino, hpos, blk

    def flip_pcluster(im):
        _, _, blk = zpcluster(im)
        p = (blk << im.blkbits) + (1 << im.blkbits) - 40
        im.b[p:p + 8] = b"\xff" * 8

    case("pcluster-garbage", "does not decode", flip_pcluster)
    case("index-blkaddr", "beyond the end of the image",
         lambda im: struct.pack_into("<I", im.b, zpcluster(im)[1] + 20, 0x00FFFFFF))
    case("index-head-missing", "lcluster 0",
         lambda im: struct.pack_into("<H", im.b, zpcluster(im)[1] + 16, 2))
    case("bomb-size", "index larger than the image",
         lambda im: struct.pack_into("<I", im.b, text(im)["pos"] + 8, 0xFFFFFFFF))
    case("bad-algorithm", "algorithm",
         lambda im: im.b.__setitem__(zpcluster(im)[1] + 6, 0x03))
    with open(os.path.join(outdir, "expect"), "w") as f:
        for name, expect in cases:
            f.write("%s\t%s\n" % (name, expect))


main()
