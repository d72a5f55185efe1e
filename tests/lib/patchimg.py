#!/usr/bin/env python3
"""patchimg.py IMG NAME WHAT [OTHER] - change one inode of an image in place.

NAME is an entry of the root directory. WHAT is one of:
  giant-holes  a chunk-based file's chunks become holes of 2^40 bytes each
               but the last, and its size grows to match: petabytes of
               holes, still a valid image
  huge-size    the size becomes 2^63 + 5, which no file can have
  frag-far     a file that is all one fragment points 2^40 bytes into
               the packed inode, far past its end
  frag-orphan  the superblock names no packed inode (packed_nid 0), so
               the image's fragments are nowhere
  partial-ref  NAME's first extent (a full index) becomes a partial
               reference to OTHER's first pcluster, as erofs-utils' -E
               dedupe writes them: NAME then holds OTHER's first bytes
  shared-plain NAME's first extent (a full index, stored) becomes a stored
               reference to OTHER's first pcluster, which OTHER reads
               compressed: each file decodes alone, but the kernel reads
               the pcluster as whichever file reads it first
giant-holes and huge-size need an extended inode (64-bit size). The
superblock is re-signed.
"""
import os
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from erofsimg import Image, resign  # noqa: E402

CHUNK_BITS = 40


def main():
    path, name, what = sys.argv[1], sys.argv[2].encode(), sys.argv[3]
    im = Image(open(path, "rb").read())
    ino = im.inode(im.child(im.root, name)[3])
    if what in ("partial-ref", "shared-plain"):
        other = im.inode(im.child(im.root, sys.argv[4].encode())[3])
        assert ino["layout"] == other["layout"] == 1, "not full indexes"
        rec = (ino["tail"] + 7) // 8 * 8 + 16      # header, 8 reserved
        orec = (other["tail"] + 7) // 8 * 8 + 16
        blk = struct.unpack_from("<I", im.b, orec + 4)[0]
        if what == "partial-ref":
            struct.pack_into("<HHI", im.b, rec, 0x8000 | 1, 0, blk)
        else:
            assert struct.unpack_from("<H", im.b, rec)[0] & 3 == 0, \
                "NAME's first extent is not stored"
            struct.pack_into("<HHI", im.b, rec, 0, 0, blk)
        resign(im.b)
        open(path, "wb").write(im.b)
        return
    if what in ("frag-far", "frag-orphan"):
        hdr = (ino["tail"] + 7) // 8 * 8
        assert im.b[hdr + 7] & 0x80, "not a whole-file fragment"
        if what == "frag-far":
            struct.pack_into("<Q", im.b, hdr, 1 << 63 | 1 << 40)
        else:
            struct.pack_into("<Q", im.b, 1024 + 0x60, 0)
        resign(im.b)
        open(path, "wb").write(im.b)
        return
    assert ino["ext"], "the inode must be extended"
    if what == "giant-holes":
        assert ino["layout"] == 4, "not chunk-based"
        chunk = 1 << (im.blkbits + (ino["iu"] & 0x1F))
        nchunks = (ino["size"] + chunk - 1) // chunk
        tail = ino["size"] - (nchunks - 1) * chunk
        unit = 8 if ino["iu"] & 0x20 else 4
        idx = (ino["tail"] + unit - 1) // unit * unit
        for i in range(nchunks - 1):    # all holes but the tail chunk
            struct.pack_into("<I", im.b, idx + i * unit + unit - 4, 0xFFFFFFFF)
        fmt = (ino["iu"] & ~0x1F) | (CHUNK_BITS - im.blkbits)
        struct.pack_into("<I", im.b, ino["pos"] + 16, fmt)
        size = ((nchunks - 1) << CHUNK_BITS) + tail
    elif what == "huge-size":
        size = (1 << 63) + 5
    else:
        sys.exit("patchimg.py: unknown change " + what)
    struct.pack_into("<Q", im.b, ino["pos"] + 8, size)
    resign(im.b)
    open(path, "wb").write(im.b)


main()
