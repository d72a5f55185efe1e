#!/usr/bin/env python3
"""What the kernel shows of a mounted image, in fsconfig_oracle.py's form:
  PATH UID GID MODE(octal, 4 digits) CAPS(hex, from security.capability)
usage: fsconfig_seen.py MOUNTED_DIR
"""
import os
import struct
import sys


def caps_of(path):
    try:
        v = os.getxattr(path, "security.capability", follow_symlinks=False)
    except OSError:
        return 0
    _, lo, _, hi, _ = struct.unpack("<5I", v[:20])
    return lo | hi << 32


def main():
    root = sys.argv[1]
    rels = [""]
    for top, dirs, files in os.walk(root):
        for n in dirs + files:
            rels.append(os.path.relpath(os.path.join(top, n), root))
    for rel in sorted(rels):
        full = os.path.join(root, rel) if rel else root
        st = os.lstat(full)
        print("/%s %d %d %04o %x" % (rel, st.st_uid, st.st_gid,
                                      st.st_mode & 0o7777, caps_of(full)))


if __name__ == "__main__":
    main()
