#!/usr/bin/env python3
"""mkdamaged_hostile.py KIND N OUT - an image whose one file, /f, has an
index that maps N extents from next to nothing: valid or not, a reader that
listed a whole file's extents at once would need N x 32 bytes for it, many
times the image's size. Made at test time (too big to keep in
tests/damaged/); the image file is sparse where the index is zeros.

KIND is one of:
  holes   a chunk-based file of N one-block chunks, all holes: a valid
          image of 4N bytes whose file is N blocks of zeros
  zindex  a compressed file (compact 2-byte index, 2N bytes) of N
          one-block lclusters, every one an lz4 head of a one-block
          pcluster in the image's first blocks, which hold no lz4 stream:
          the first extent does not decode
"""
import os
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from erofsimg import resign  # noqa: E402

BLKBITS = 12
BLK = 1 << BLKBITS
META = 1                        # metadata block: nid 0 is at 4096
ROOT_NID, FILE_NID = 0, 4
CHUNKED_FILE = 0x4
COMPACTED_2B = 0x1
HEAD1 = 1                       # lcluster type: head of an lz4 pcluster


def superblock(img, size, incompat):
    sb = 1024
    struct.pack_into("<IIIBBHQ", img, sb, 0xE0F5E1E2, 0, 1, BLKBITS, 0,
                     ROOT_NID, 2)                    # compat: sb checksum
    struct.pack_into("<II", img, sb + 0x24, size // BLK, META)
    struct.pack_into("<I", img, sb + 0x50, incompat)
    resign(img)


def root_dir(img):
    """nid 0: a directory with '.', '..' and 'f', inline."""
    pos = META * BLK
    names = [(b".", ROOT_NID, 2), (b"..", ROOT_NID, 2), (b"f", FILE_NID, 1)]
    data = bytearray(12 * len(names))
    off = len(data)
    for i, (name, nid, ftype) in enumerate(names):
        struct.pack_into("<QHB", data, 12 * i, nid, off, ftype)
        data += name
        off += len(name)
    # compact inode: format (FLAT_INLINE << 1), mode, nlink, size
    struct.pack_into("<HHHHI", img, pos, 2 << 1, 0, 0o40755, 2, len(data))
    img[pos + 32:pos + 32 + len(data)] = data


def file_inode(img, layout, size, iu):
    """nid 4: an extended inode; its index follows it (returns where)."""
    pos = META * BLK + 32 * FILE_NID
    struct.pack_into("<HHHHQI", img, pos, (layout << 1) | 1, 0, 0o100644, 0,
                     size, iu)
    struct.pack_into("<I", img, pos + 44, 1)            # nlink
    return pos + 64


def main():
    kind, n, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    head = bytearray(2 * BLK)       # superblock, root, file inode, header
    root_dir(head)
    if kind == "holes":
        index = file_inode(head, 4, n * BLK, 0)       # 4-byte entries
        end = index + 4 * n
        fill = (index, b"\xff" * (4 * n))             # EROFS_NULL_ADDR
        incompat = CHUNKED_FILE
    elif kind == "zindex":
        hpos = file_inode(head, 3, n * BLK, 0)        # compact index
        struct.pack_into("<HHHBB", head, hpos, 0, 0, COMPACTED_2B, 0, 0)
        # 4-byte packs up to a 32-byte boundary, then 2-byte ones, then
        # 4-byte ones for the rest (format/erofs_fs.h); entries are
        # (HEAD1 << 12) | clusterofs 0, every pack's block address 0
        c4i = ((32 - (hpos + 8) % 32) // 4) & 7
        c2b = (n - c4i) // 16 * 16 if c4i < n else 0
        c4i = min(c4i, n)
        rest = n - c4i - c2b
        pack4 = struct.pack("<HHI", HEAD1 << 12, HEAD1 << 12, 0)
        bits = sum((HEAD1 << 12) << (14 * j) for j in range(16))
        pack2 = bits.to_bytes(28, "little") + bytes(4)
        index = (pack4 * ((c4i + 1) // 2) + pack2 * (c2b // 16) +
                 pack4 * ((rest + 1) // 2))
        end = hpos + 8 + len(index)
        fill = (hpos + 8, index)
        incompat = 0
    else:
        sys.exit("mkdamaged_hostile.py: unknown kind " + kind)
    size = max((end + BLK - 1) // BLK, 2) * BLK
    superblock(head, size, incompat)
    with open(out, "wb") as f:
        f.truncate(size)            # zeros, sparse
        f.write(head)
        f.seek(fill[0])
        f.write(fill[1])


main()
