# shellcheck shell=bash
# Sourced by the scripts that build a cached debootstrap image
# (build-fleet-image.sh, build-arm64-devroot.sh): the cache check, the
# build lock and debootstrap itself, once. Needs their log() and die().

# OUT holds a finished image (info and root.img): print it and exit.
image_cached() {
	if [ -f "$1/info" ] && [ -f "$1/root.img" ]; then
		echo "$1/root.img"
		exit 0
	fi
}

# Take DIR/.lock for the rest of the script, then look again: someone
# else may have built OUT while we waited for the lock.
image_build_lock() {	# DIR OUT
	mkdir -p "$1"
	exec {image_lock_fd}>"$1/.lock"
	flock "$image_lock_fd"
	image_cached "$2"
}

need_debootstrap() {
	command -v debootstrap >/dev/null && return 0
	log "installing debootstrap"
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends debootstrap >&2 ||
		die "could not install debootstrap"
}
