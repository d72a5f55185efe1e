#!/usr/bin/env python3
"""Owners, permission bits and capabilities of every path of a tree, one
line each, sorted (the root as "/"):
  PATH UID GID MODE(octal, 4 digits) CAPS(hex)

usage: fsconfig_lines.py seen MOUNTED_DIR
         what the kernel shows (CAPS from security.capability)
       fsconfig_lines.py want MOUNT_POINT PRODUCT_OUT SRC
         what mkfs.erofs must give SRC's paths with a mount point and no
         canned fs_config file, as Debian's libcutils (Android 10's
         fs_config) says; MOUNT_POINT as given to mkfs ("system" or "/"),
         PRODUCT_OUT or "-"
"""
import ctypes
import os
import struct
import sys

LIB = "/usr/lib/x86_64-linux-gnu/android/libcutils.so.0"


def paths(root):
    rels = [""]
    for top, dirs, files in os.walk(root):
        for n in dirs + files:
            rels.append(os.path.relpath(os.path.join(top, n), root))
    return [(rel, os.path.join(root, rel) if rel else root)
            for rel in sorted(rels)]


def caps_of(path):
    try:
        v = os.getxattr(path, "security.capability", follow_symlinks=False)
    except OSError:
        return 0
    _, lo, _, hi, _ = struct.unpack("<5I", v[:20])
    return lo | hi << 32


def seen(root):
    for rel, full in paths(root):
        st = os.lstat(full)
        yield rel, st.st_uid, st.st_gid, st.st_mode, caps_of(full)


def want(mount, product, src):
    lib = ctypes.CDLL(LIB)
    u32 = ctypes.c_uint
    fs_config = lib.fs_config
    fs_config.argtypes = [ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p,
                          ctypes.POINTER(u32), ctypes.POINTER(u32),
                          ctypes.POINTER(u32), ctypes.POINTER(ctypes.c_uint64)]
    fs_config.restype = None
    mount = mount.rstrip("/")
    out = None if product == "-" else product.encode()
    for rel, full in paths(src):
        # erofs-utils asks for "MOUNT/REL" (the root: "MOUNT/")
        isdir = os.path.isdir(full) and not os.path.islink(full)
        uid, gid, mode, caps = u32(), u32(), u32(0), ctypes.c_uint64()
        fs_config(("%s/%s" % (mount, rel)).encode(), int(isdir), out,
                  uid, gid, mode, caps)
        yield rel, uid.value, gid.value, mode.value, caps.value


def main():
    rows = seen(sys.argv[2]) if sys.argv[1] == "seen" else want(*sys.argv[2:5])
    for rel, uid, gid, mode, caps in rows:
        print("/%s %d %d %04o %x" % (rel, uid, gid, mode & 0o7777, caps))


if __name__ == "__main__":
    main()
