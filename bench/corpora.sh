# The bench corpora, made once from Debian's archive and cached in out/bench.
# Sourced by bench/run.sh and bench/fsck.sh.

corpus_rootfs() {
	[ -f "$BENCH/rootfs.done" ] && return
	rm -rf "$BENCH/rootfs"
	debootstrap --variant=minbase bookworm "$BENCH/rootfs" \
		http://deb.debian.org/debian >"$BENCH/rootfs.log" 2>&1
	touch "$BENCH/rootfs.done"
}

corpus_linux() {
	[ -f "$BENCH/linux.done" ] && return
	local tmp; tmp=$(mktemp -d "$BENCH/.deb.XXXXXX")
	(cd "$tmp" && apt-get download -q linux-source-6.1 >/dev/null)
	dpkg-deb -x "$tmp"/linux-source-6.1_*.deb "$tmp/x"
	rm -rf "$BENCH/linux" && mkdir "$BENCH/linux"
	tar -xf "$tmp"/x/usr/src/linux-source-6.1.tar.xz -C "$BENCH/linux"
	rm -rf "$tmp"
	touch "$BENCH/linux.done"
}


# Many small files (bench/smallfiles.py): generated, so nothing to download.
corpus_smallfiles() {
	[ -f "$BENCH/smallfiles.done" ] && return
	rm -rf "$BENCH/smallfiles"
	python3 bench/smallfiles.py "$BENCH/smallfiles"
	touch "$BENCH/smallfiles.done"
}
