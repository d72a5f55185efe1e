#!/bin/sh
# manifest.sh DIR: one line per entry under DIR, sorted: its path, and
# from `ls -lnd` its mode, links, owner, group and size (or device
# numbers; not a directory's), then the SHA-256 of a file's data or a symlink's target.
# Busybox's sh, ls and awk run it alike in a guest (over a mount) and on
# the host (over the source), so the two lists compare line by line.
walk() {
	local d=$1 p
	for p in "$d"/* "$d"/.[!.]* "$d"/..?*; do
		[ -e "$p" ] || [ -L "$p" ] || continue
		entry "$p"
		if [ -d "$p" ] && [ ! -L "$p" ]; then
			walk "$p"
		fi
	done
}

entry() {
	local sum=-
	if [ -L "$1" ]; then
		sum=$(readlink "$1" | sha256sum)
	elif [ -f "$1" ]; then
		sum=$(sha256sum < "$1")
	fi
	ls -lnd "$1" | awk -v p="${1#"$ROOT"/}" -v s="${sum%% *}" '{
		size = $5
		if ($1 ~ /^[cb]/) size = $5 $6
		if ($1 ~ /^d/) size = "-"	# a directory'"'"'s is its format'"'"'s
		print p, $1, $2, $3, $4, size, s }'
}

ROOT=${1:?usage: manifest.sh DIR}
walk "$ROOT" | sort
