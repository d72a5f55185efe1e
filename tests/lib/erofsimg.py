"""erofsimg.py - just enough of the EROFS layout to damage test images.

Used by mkdamaged.py and patchimg.py; reads inodes and one-block inline
directories, and re-signs the superblock after a change.
"""
import struct


def crc32c(data, crc=0xFFFFFFFF):
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc


def resign(img):
    blkbits = img[1024 + 12]
    end = 1 << blkbits if blkbits > 10 else 2048
    img[1028:1032] = b"\0\0\0\0"
    struct.pack_into("<I", img, 1028, crc32c(bytes(img[1024:end])))


class Image:
    def __init__(self, data):
        self.b = bytearray(data)
        self.blkbits = self.b[1036]
        self.meta = struct.unpack_from("<I", self.b, 1024 + 0x28)[0] << self.blkbits
        self.root = struct.unpack_from("<H", self.b, 1024 + 0x0E)[0]

    def ipos(self, nid):
        return self.meta + 32 * nid

    def inode(self, nid):
        p = self.ipos(nid)
        fmt, icount, mode = struct.unpack_from("<HHH", self.b, p)
        ext = fmt & 1
        if ext:
            size, iu = struct.unpack_from("<QI", self.b, p + 8)
        else:
            size, iu = struct.unpack_from("<IxxxxI", self.b, p + 8)
        isz = 64 if ext else 32
        xsz = 12 + 4 * (icount - 1) if icount else 0
        return dict(pos=p, layout=(fmt >> 1) & 7, mode=mode, size=size,
                    iu=iu, tail=p + isz + xsz, ext=ext)

    def dirents(self, nid):
        """(entry offset, name offset, name, nid) of a 1-block inline dir."""
        ino = self.inode(nid)
        assert ino["layout"] == 2 and ino["size"] <= 1 << self.blkbits
        base = ino["tail"]
        n = struct.unpack_from("<H", self.b, base + 8)[0] // 12
        out = []
        for i in range(n):
            cnid, off = struct.unpack_from("<QH", self.b, base + 12 * i)
            end = (struct.unpack_from("<H", self.b, base + 12 * (i + 1) + 8)[0]
                   if i + 1 < n else ino["size"])
            name = bytes(self.b[base + off:base + end]).rstrip(b"\0")
            out.append((base + 12 * i, base + off, name, cnid))
        return out

    def child(self, nid, name):
        return next(e for e in self.dirents(nid) if e[2] == name)
