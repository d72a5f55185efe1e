#!/usr/bin/env python3
"""Asks Debian's libcutils (Android 10's fs_config) what mkfs.erofs must
give each path when there is a mount point and no canned fs_config file.

usage: fsconfig_oracle.py MOUNT_POINT PRODUCT_OUT SRC
  MOUNT_POINT as given to mkfs ("system", or "/"); PRODUCT_OUT or "-".
Prints, for every path of SRC (sorted; the root as "/"):
  PATH UID GID MODE(octal, 4 digits) CAPS(hex)
the same lines tests/lib/fsconfig_seen.py prints of a mounted image.
"""
import ctypes
import os
import sys

LIB = "/usr/lib/x86_64-linux-gnu/android/libcutils.so.0"


def main():
    mount, product, src = sys.argv[1], sys.argv[2], sys.argv[3]
    lib = ctypes.CDLL(LIB)
    u32 = ctypes.c_uint
    fs_config = lib.fs_config
    fs_config.argtypes = [ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p,
                          ctypes.POINTER(u32), ctypes.POINTER(u32),
                          ctypes.POINTER(u32), ctypes.POINTER(ctypes.c_uint64)]
    fs_config.restype = None
    mount = mount.rstrip("/")
    out = None if product == "-" else product.encode()
    rels = [""]
    for top, dirs, files in os.walk(src):
        for n in dirs + files:
            rels.append(os.path.relpath(os.path.join(top, n), src))
    for rel in sorted(rels):
        full = os.path.join(src, rel) if rel else src
        # erofs-utils asks for "MOUNT/REL" (the root: "MOUNT/")
        path = "%s/%s" % (mount, rel)
        uid, gid, mode, caps = u32(), u32(), u32(0), ctypes.c_uint64()
        fs_config(path.encode(), int(os.path.isdir(full) and
                                     not os.path.islink(full)),
                  out, uid, gid, mode, caps)
        print("/%s %d %d %04o %x" % (rel, uid.value, gid.value,
                                      mode.value & 0o7777, caps.value))


if __name__ == "__main__":
    main()
