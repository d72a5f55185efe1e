#!/bin/sh
# pick-firmware.sh KVER FWROOT DESTROOT -- the firmware of the modules
# pick-modules.sh put in DESTROOT: each file a module names (modinfo's
# "firmware:" lines) is copied from FWROOT/lib/firmware to
# DESTROOT/lib/firmware, symlinks resolved. Prints one line per file,
# "firmware NAME MODULE" or "firmware-missing NAME MODULE": a board may
# carry drivers for hardware whose firmware Debian does not ship, and the
# image's manifest says so rather than the build failing.
set -eu
umask 022
[ $# = 3 ] || { echo "usage: pick-firmware.sh KVER FWROOT DESTROOT" >&2; exit 1; }
KVER=$1 FW=$2/lib/firmware DEST=$3
MODS=$DEST/lib/modules/$KVER
[ -f "$MODS/kiln.load" ] || { echo "pick-firmware: no $MODS/kiln.load" >&2; exit 1; }

while read -r ko; do
	mod=${ko##*/}
	mod=${mod%.ko}
	# read first: a failing modinfo in the for list would go unseen
	names=$(modinfo -F firmware "$MODS/$ko") || {
		echo "pick-firmware: modinfo failed on $ko" >&2
		exit 1
	}
	for name in $names; do
		if [ -f "$FW/$name" ]; then
			mkdir -p "$DEST/lib/firmware/$(dirname "$name")"
			cp -L "$FW/$name" "$DEST/lib/firmware/$name"
			echo "firmware $name $mod"
		else
			echo "firmware-missing $name $mod"
		fi
	done
done <"$MODS/kiln.load"
