#!/usr/bin/env python3
"""treecmp.py A B - compare two directory trees, never following symlinks.

Prints one line per difference, "path: what: a-value != b-value", and exits
1 if there is any; otherwise prints "treecmp: N entries identical" and exits 0
(2 on usage or I/O errors).  Paths are handled as bytes; unprintable bytes
in the output are shown as \\xNN.

Compared: names in every directory, file type, permission bits (incl.
setuid/setgid/sticky), uid, gid, mtime (ns), size, file content, symlink
target, rdev, xattrs (all namespaces), hardlink grouping and nlink of
non-directories.  Not compared: atime, ctime, directory size and nlink.
Options: --mtime-sec (whole seconds only), --no-mtime, --no-owner, --no-xattr.
"""

import argparse
import hashlib
import os
import stat
import sys

CHUNK = 1 << 20
# Present on one side only when one filesystem is labelled by an LSM.
ONE_SIDED_OK = {"security.selinux"}


def show(b):
    """Printable form of a bytes path or value: \\xNN for odd bytes."""
    return "".join(chr(c) if 0x20 <= c < 0x7F and c != 0x5C else "\\x%02x" % c
                   for c in b)


def show_value(v, limit=64):
    s = '"%s"' % show(v[:limit]).replace('"', "\\x22")
    return s + ("...(%d bytes)" % len(v) if len(v) > limit else "")


def show_ns(ns):
    sec, nsec = divmod(abs(ns), 10**9)
    return "%s%d.%09d" % ("-" if ns < 0 else "", sec, nsec)


TYPES = {stat.S_IFREG: "file", stat.S_IFDIR: "dir", stat.S_IFLNK: "symlink",
         stat.S_IFCHR: "chardev", stat.S_IFBLK: "blockdev",
         stat.S_IFIFO: "fifo", stat.S_IFSOCK: "socket"}


class Cmp:
    def __init__(self, a, b, opts):
        self.root = (os.fsencode(a), os.fsencode(b))
        self.opts = opts
        self.diffs = 0
        self.entries = 0
        self.inodes = ({}, {})   # per side: rel path -> (st_dev, st_ino)

    def report(self, rel, what, va, vb):
        self.diffs += 1
        print("%s: %s: %s != %s" % (show(rel), what, va, vb))

    def check(self, rel, what, va, vb, fmt=str):
        if va != vb:
            self.report(rel, what, fmt(va), fmt(vb))

    def run(self):
        stack = [b"."]
        while stack:
            rel = stack.pop()
            subdirs = self.entry(rel)
            stack.extend(reversed(subdirs))
        self.hardlinks()
        return self.diffs

    def paths(self, rel):
        return tuple(os.path.join(r, rel) if rel != b"." else r
                     for r in self.root)

    def entry(self, rel):
        """Compare one path present on both sides; return subdirs to visit."""
        self.entries += 1
        pa, pb = self.paths(rel)
        sa, sb = os.lstat(pa), os.lstat(pb)
        ta, tb = stat.S_IFMT(sa.st_mode), stat.S_IFMT(sb.st_mode)
        if ta != tb:
            self.report(rel, "type", TYPES.get(ta, ta), TYPES.get(tb, tb))
            return []
        self.check(rel, "mode", stat.S_IMODE(sa.st_mode),
                   stat.S_IMODE(sb.st_mode), lambda m: "%04o" % m)
        if not self.opts.no_owner:
            self.check(rel, "uid", sa.st_uid, sb.st_uid)
            self.check(rel, "gid", sa.st_gid, sb.st_gid)
        if self.opts.mtime_sec and not self.opts.no_mtime:
            self.check(rel, "mtime", sa.st_mtime_ns // 10**9,
                       sb.st_mtime_ns // 10**9)
        elif not self.opts.no_mtime:
            self.check(rel, "mtime", sa.st_mtime_ns, sb.st_mtime_ns, show_ns)
        if not self.opts.no_xattr:
            self.xattrs(rel, pa, pb)
        if ta != stat.S_IFDIR:
            self.inodes[0][rel] = (sa.st_dev, sa.st_ino)
            self.inodes[1][rel] = (sb.st_dev, sb.st_ino)
            self.check(rel, "nlink", sa.st_nlink, sb.st_nlink)
        if ta in (stat.S_IFREG, stat.S_IFLNK):
            self.check(rel, "size", sa.st_size, sb.st_size)
        if ta == stat.S_IFREG and sa.st_size == sb.st_size:
            self.content(rel, pa, pb)
        elif ta == stat.S_IFLNK:
            self.check(rel, "target", os.readlink(pa), os.readlink(pb), show)
        elif ta in (stat.S_IFCHR, stat.S_IFBLK):
            dev = lambda st: (os.major(st.st_rdev), os.minor(st.st_rdev))
            self.check(rel, "rdev", dev(sa), dev(sb), lambda d: "%d:%d" % d)
        elif ta == stat.S_IFDIR:
            return self.names(rel, pa, pb)
        return []

    def names(self, rel, pa, pb):
        na, nb = set(os.listdir(pa)), set(os.listdir(pb))
        sub = lambda n: n if rel == b"." else os.path.join(rel, n)
        for n in sorted(na - nb):
            self.report(sub(n), "exists", "yes", "no")
        for n in sorted(nb - na):
            self.report(sub(n), "exists", "no", "yes")
        return [sub(n) for n in sorted(na & nb)]

    def content(self, rel, pa, pb):
        """Compare chunk by chunk; hash both only when they differ."""
        off = 0
        with open(pa, "rb") as fa, open(pb, "rb") as fb:
            while True:
                ca, cb = fa.read(CHUNK), fb.read(CHUNK)
                if ca != cb:
                    break
                if not ca:
                    return
                off += len(ca)
        off += next((i for i, (x, y) in enumerate(zip(ca, cb)) if x != y),
                    min(len(ca), len(cb)))
        self.report(rel, "content (first difference at byte %d)" % off,
                    file_hash(pa), file_hash(pb))

    def xattrs(self, rel, pa, pb):
        xa, xb = read_xattrs(pa), read_xattrs(pb)
        for name in sorted(set(xa) | set(xb)):
            if name in xa and name in xb:
                self.check(rel, "xattr " + name, xa[name], xb[name],
                           show_value)
            elif name not in ONE_SIDED_OK:
                self.report(rel, "xattr " + name,
                            show_value(xa[name]) if name in xa else "(none)",
                            show_value(xb[name]) if name in xb else "(none)")

    def hardlinks(self):
        """Paths sharing an inode on one side must share it on the other."""
        common = self.inodes[0].keys() & self.inodes[1].keys()
        groups = []
        for side in self.inodes:
            by_ino = {}
            for rel in common:
                by_ino.setdefault(side[rel], set()).add(rel)
            groups.append({rel: frozenset(by_ino[side[rel]]) for rel in common})
        seen = set()
        for rel in sorted(common):
            ga, gb = groups[0][rel], groups[1][rel]
            if ga != gb and (ga, gb) not in seen:
                seen.add((ga, gb))
                fmt = lambda g: "[" + ", ".join(show(p) for p in sorted(g)) + "]"
                self.report(rel, "hardlinks", fmt(ga), fmt(gb))


def file_hash(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(CHUNK):
            h.update(chunk)
    return "sha256:" + h.hexdigest()[:16]


def read_xattrs(path):
    try:
        names = os.listxattr(path, follow_symlinks=False)
    except OSError:           # e.g. ENOTSUP: no xattrs at all
        return {}
    return {n: os.getxattr(path, n, follow_symlinks=False) for n in names}


def main():
    ap = argparse.ArgumentParser(description="Compare two trees (lstat).")
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("--mtime-sec", action="store_true",
                    help="compare mtimes to the second only")
    ap.add_argument("--no-mtime", action="store_true",
                    help="do not compare mtimes (e.g. mkfs.erofs -T)")
    ap.add_argument("--no-owner", action="store_true",
                    help="do not compare uid/gid")
    ap.add_argument("--no-xattr", action="store_true",
                    help="do not compare xattrs")
    opts = ap.parse_args()
    for d in (opts.a, opts.b):
        if not os.path.isdir(d):
            ap.error("not a directory: " + d)
    c = Cmp(opts.a, opts.b, opts)
    try:
        diffs = c.run()
    except OSError as e:
        print("treecmp: %s" % e, file=sys.stderr)
        return 2
    if diffs:
        return 1
    print("treecmp: %d entries identical" % c.entries)
    return 0


if __name__ == "__main__":
    sys.exit(main())
