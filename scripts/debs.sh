# debs.sh -- sourced by the scripts that take files from Debian's .debs
# (never installed): a checked download into $KILN_CACHE/debs, and apt for
# the non-free-firmware component, which a build host's sources.list
# usually lacks. Rather than change the host's apt setup, apt runs with its
# own source list and lists under $KILN_CACHE/apt-NAME, checked with
# Debian's archive key as usual.
#
# The caller defines die() and has set -eu. After debs_init:
#   $DEBS_CACHE       the cache directory (absolute)
#   nonfree_apt NAME SUITE...   sets up apt_ (apt-get on non-free-firmware
#                     of those suites), its lists refreshed once a day
#   deb_fetch HOW PKG [NOT_FOUND_MESSAGE]   the .deb of PKG through HOW
#                     (apt_ or apt-get) in the cache, its SHA-256 the
#                     archive's: sets $DEB and $DEB_SUM

debs_init() {
	DEBS_CACHE=$(mkdir -p "${KILN_CACHE:-$HOME/.cache/kiln}" &&
		cd "${KILN_CACHE:-$HOME/.cache/kiln}" && pwd)
	mkdir -p "$DEBS_CACHE/debs" "$DEBS_CACHE/empty"
}

nonfree_apt() {
	_name=$1
	shift
	A=$DEBS_CACHE/apt-$_name
	mkdir -p "$A/lists/partial" "$A/archives/partial" "$A/parts"
	_key=/usr/share/keyrings/debian-archive-keyring.gpg
	[ -f "$_key" ] || die "$_key missing (Debian package debian-archive-keyring)"
	for _s in "$@"; do
		echo "deb [signed-by=$_key] http://deb.debian.org/debian $_s non-free-firmware"
	done >"$A/sources.list"
	# lists older than a day are refreshed: a new release is picked up,
	# a warm cache costs nothing; offline, the last lists still serve
	if [ -z "$(find "$A/lists" -name '*_Packages' -mtime -1 2>/dev/null)" ] ||
		! cmp -s "$A/sources.list" "$A/sources.used"; then
		if apt_ update >"$A/update.log" 2>&1; then
			cp "$A/sources.list" "$A/sources.used"
		elif cmp -s "$A/sources.list" "$A/sources.used"; then
			echo "${0##*/}: warning: apt-get update failed; using the lists of" \
				"$(date -r "$A/sources.used" +%F) (log: $A/update.log)" >&2
		else
			die "apt-get update for non-free-firmware failed (log: $A/update.log)"
		fi
	fi
}

apt_() {
	apt-get -q -o Dir::Etc::SourceList="$A/sources.list" \
		-o Dir::Etc::SourceParts="$A/parts" \
		-o Dir::State::Lists="$A/lists" -o Dir::Cache="$A" \
		-o Dir::Cache::archives="$A/archives" \
		-o APT::Sandbox::User=root "$@"
}

deb_fetch() {
	_how=$1 _pkg=$2 _missing=${3:-}
	# "'URI' FILE SIZE SHA256:SUM", printed only for a file not in the
	# current directory: asked from an empty one
	# shellcheck disable=SC2046 # four fields, split on purpose
	set -- $(cd "$DEBS_CACHE/empty" && $_how download --print-uris "$_pkg" 2>/dev/null)
	[ -n "$_missing" ] || _missing="$_pkg: not in Debian's archive"
	[ $# -ge 4 ] || die "$_missing"
	DEB=$DEBS_CACHE/debs/$2 DEB_SUM=${4#SHA256:}
	if [ ! -f "$DEB" ] || ! echo "$DEB_SUM  $DEB" | sha256sum -c --status; then
		rm -f "$DEB"
		(cd "$DEBS_CACHE/debs" && $_how download "$_pkg" >/dev/null 2>&1) ||
			die "cannot download $_pkg"
		echo "$DEB_SUM  $DEB" | sha256sum -c --status ||
			die "$DEB: SHA-256 differs from the archive's"
	fi
}
