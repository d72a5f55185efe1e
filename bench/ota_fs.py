#!/usr/bin/env python3
# ota_fs.py -- the file system side of bench/ota.sh (make bench-ota):
#   age ROOT FRACTION SEED   fill ROOT's file system with files of mixed sizes
#                            to FRACTION of its size, syncfs, then delete half
#                            of them, picked at random with SEED (free space
#                            left in holes of every size, as on a used device)
#   layout ROOT BLOCK_SIZE BLOCKS_PER_GROUP ERASE_BYTES
#                            where the files and directories under ROOT lie on
#                            the device (FIEMAP): prints one line of key=value
# Only the standard library: it runs wherever python3 does.
import ctypes
import fcntl
import os
import random
import stat
import struct
import sys

FS_IOC_FIEMAP = 0xC020660B          # _IOWR('f', 11, struct fiemap)
FIEMAP_FLAG_SYNC = 0x1
FIEMAP_EXTENT_LAST = 0x1
FIEMAP_EXTENT_UNKNOWN = 0x2         # no physical place yet (delalloc, ...)
FIEMAP_EXTENT_DATA_INLINE = 0x200   # in the inode: no data block of its own
HEADER = struct.Struct("=QQIIII")   # struct fiemap, without its extents
EXTENT = struct.Struct("=QQQQQIIII")  # struct fiemap_extent
BATCH = 512                         # extents asked for per ioctl

# Sizes of the aging files: (share of the files, smallest, largest); sizes
# are log-uniform within a class. Many small files, most bytes in files of
# 1-16 MiB; none bigger, so that no few huge deletions free whole groups
# and deleting half the files frees about half the bytes, in holes of all
# sizes up to 16 MiB.
SIZE_CLASSES = [(0.55, 4 << 10, 64 << 10), (0.35, 64 << 10, 1 << 20),
                (0.10, 1 << 20, 16 << 20)]


def die(msg):
    sys.exit("ota_fs: " + msg)


def pick_size(rng):
    r = rng.random()
    for share, lo, hi in SIZE_CLASSES:
        if r < share:
            break
        r -= share
    return int(lo * (hi / lo) ** rng.random()) // 512 * 512 or 512


def syncfs(path):
    """syncfs(2) of path's file system only (os.sync would wait for every
    file system of the host, busy with other work)"""
    fd = os.open(path, os.O_RDONLY)
    try:
        if ctypes.CDLL(None, use_errno=True).syncfs(fd):
            die("syncfs %s: %s" % (path, os.strerror(ctypes.get_errno())))
    finally:
        os.close(fd)


def used_bytes(root):
    st = os.statvfs(root)
    return (st.f_blocks - st.f_bfree) * st.f_frsize, st.f_blocks * st.f_frsize


def age(root, fraction, seed):
    rng = random.Random(seed)
    used, size = used_bytes(root)
    goal = int(size * fraction)
    chunk = b"\xa5" * (1 << 20)
    paths = []
    written = 0
    # 64 directories in the root: ext4 spreads top-level directories (Orlov)
    # over the flex groups, and a file's blocks go near its inode, so the
    # aged files are all over the device, not only at its start
    while used + written < goal:
        d = os.path.join(root, "aged%02d" % (len(paths) % 64))
        os.makedirs(d, exist_ok=True)
        p = os.path.join(d, "f%06d" % len(paths))
        n = min(pick_size(rng), goal - used - written)
        with open(p, "wb") as f:
            left = n
            while left > 0:
                left -= f.write(chunk[:min(left, len(chunk))])
        paths.append(p)
        written += n
    # blocks are only allocated at writeback (delalloc): sync before deleting,
    # or the deleted files would never have taken space
    syncfs(root)
    full, _ = used_bytes(root)
    for p in rng.sample(paths, len(paths) // 2):
        os.unlink(p)
    syncfs(root)
    left, _ = used_bytes(root)
    print("aged: %d files, %.0f%% full; %d deleted, %.0f%% full"
          % (len(paths), 100.0 * full / size, len(paths) // 2, 100.0 * left / size))


def extents(fd):
    """(physical byte, length) of each extent of the open file fd."""
    start = 0
    while True:
        buf = bytearray(HEADER.size + BATCH * EXTENT.size)
        HEADER.pack_into(buf, 0, start, 0xFFFFFFFFFFFFFFFF, FIEMAP_FLAG_SYNC,
                         0, BATCH, 0)
        fcntl.ioctl(fd, FS_IOC_FIEMAP, buf)
        mapped = HEADER.unpack_from(buf, 0)[3]
        if mapped == 0:
            return
        for i in range(mapped):
            (logical, physical, length, _, _, flags, _, _, _) = \
                EXTENT.unpack_from(buf, HEADER.size + i * EXTENT.size)
            if flags & (FIEMAP_EXTENT_UNKNOWN | FIEMAP_EXTENT_DATA_INLINE):
                if flags & FIEMAP_EXTENT_UNKNOWN:
                    die("an extent without a place on the device (not synced?)")
                continue
            yield physical, length
            if flags & FIEMAP_EXTENT_LAST:
                return
        start = logical + length


def layout(root, block_size, blocks_per_group, erase_bytes):
    group_bytes = blocks_per_group * block_size
    files = dirs = nbytes = nextents = alloc = 0
    groups, erase = set(), set()
    for dirpath, dirnames, filenames in os.walk(root):
        dirs += 1
        for name in [None] + filenames:     # None: the directory itself
            p = dirpath if name is None else os.path.join(dirpath, name)
            if name is not None:
                st = os.lstat(p)
                if not stat.S_ISREG(st.st_mode):
                    continue                # a symlink: no data block
                files += 1
                nbytes += st.st_size
            fd = os.open(p, os.O_RDONLY | os.O_NOFOLLOW)
            try:
                for phys, length in extents(fd):
                    nextents += 1
                    alloc += length
                    end = phys + length - 1
                    groups.update(range(phys // group_bytes, end // group_bytes + 1))
                    erase.update(range(phys // erase_bytes, end // erase_bytes + 1))
            finally:
                os.close(fd)
    print("files=%d dirs=%d bytes=%d alloc=%d extents=%d groups=%d erase_blocks=%d"
          % (files, dirs, nbytes, alloc, nextents, len(groups), len(erase)))


def main(argv):
    if len(argv) == 4 and argv[0] == "age":
        age(argv[1], float(argv[2]), int(argv[3]))
    elif len(argv) == 5 and argv[0] == "layout":
        layout(argv[1], int(argv[2]), int(argv[3]), int(argv[4]))
    else:
        die("usage: age ROOT FRACTION SEED | "
            "layout ROOT BLOCK_SIZE BLOCKS_PER_GROUP ERASE_BYTES")


if __name__ == "__main__":
    main(sys.argv[1:])
