#!/bin/sh
# pick-firmware.sh KVER FWROOT DESTROOT -- the firmware of the modules
# pick-modules.sh put in DESTROOT: each file a module names (modinfo's
# "firmware:" lines) is copied from FWROOT/lib/firmware to
# DESTROOT/lib/firmware, symlinks resolved, .xz/.zst unpacked, patterns
# expanded in FWROOT. Prints one line per file,
# "firmware NAME MODULE" or "firmware-missing NAME MODULE": a board may
# carry drivers for hardware whose firmware Debian does not ship, and the
# image's manifest says so rather than the build failing.
set -eu
umask 022
[ $# = 3 ] || { echo "usage: pick-firmware.sh KVER FWROOT DESTROOT" >&2; exit 1; }
KVER=$1 FW=$2/lib/firmware DEST=$3
MODS=$DEST/lib/modules/$KVER
[ -f "$MODS/kiln.load" ] || { echo "pick-firmware: no $MODS/kiln.load" >&2; exit 1; }

# pick NAME MODULE: every file NAME matches (a driver may name a pattern,
# brcmfmac's brcm/brcmfmac*-sdio.*.txt: it picks one at run time), as it
# is or packed as .xz or .zst (kernels from 5.19 load those; unpacked here,
# which any kernel loads)
pick() {
	found=$(find "$FW" \( -path "$FW/$1" -o -path "$FW/$1.xz" -o \
		-path "$FW/$1.zst" \) \( -type f -o -type l \) | LC_ALL=C sort)
	[ -n "$found" ] || { echo "firmware-missing $1 $2"; return 0; }
	printf '%s\n' "$found" | while IFS= read -r path; do
		rel=${path#"$FW"/}
		if [ ! -e "$path" ]; then	# a dangling link
			echo "firmware-missing $rel $2"
			continue
		fi
		out=${rel%.xz}
		out=${out%.zst}
		mkdir -p "$DEST/lib/firmware/$(dirname "$out")"
		case $rel in
		*.xz) xz -dc "$path" >"$DEST/lib/firmware/$out" ;;
		*.zst) zstd -qdc "$path" >"$DEST/lib/firmware/$out" ;;
		*) cp -L "$path" "$DEST/lib/firmware/$out" ;;
		esac
		echo "firmware $out $2"
	done
}

while read -r ko; do
	mod=${ko##*/}
	mod=${mod%.ko}
	# read first: a failing modinfo in the for list would go unseen
	names=$(modinfo -F firmware "$MODS/$ko") || {
		echo "pick-firmware: modinfo failed on $ko" >&2
		exit 1
	}
	printf '%s\n' "$names" | while IFS= read -r name; do
		[ -n "$name" ] || continue
		pick "$name" "$mod"
	done
done <"$MODS/kiln.load"
