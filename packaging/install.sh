#!/usr/bin/env bash
# packaging/install.sh install|uninstall [all|agent|dkms|image]
#
# The one description of where ember's files go. `make install` /
# `make uninstall` (source installs), debian/rules and the RPM spec all call
# it, so a source install, the .deb and the .rpm cannot disagree about the
# layout documented in docs/packaging.md.
#
# Parts: "agent" (package ember): the binary, man page, systemd unit, sample
#        configuration;
#        "dkms" (package ember-dkms): module sources for DKMS, udev rule,
#        modprobe options, Secure Boot and udev examples;
#        "image" (`make install-image`, an appliance root in DESTDIR; see
#        docs/embedded.md): the binary, ember.ko under
#        /lib/modules/KVER/extra when it was built (KVER: its vermagic),
#        the busybox init script /etc/init.d/S60ember and the
#        configuration; no systemd unit, DKMS, man page or udev rule.
#        STRIP (e.g. aarch64-linux-gnu-strip) strips the ELF files.
#
# Environment (packaging/packaging.mk exports them with these defaults):
#   DESTDIR (staging root, empty for a real install), BINDIR=/usr/bin,
#   LIBDIR=/usr/lib (the allocation sampler goes to LIBDIR/ember/),
#   MANDIR=/usr/share/man, SYSCONFDIR=/etc, UNITDIR=/lib/systemd/system,
#   UDEVRULESDIR=/lib/udev/rules.d, DKMSSRCDIR=/usr/src,
#   DOCDIR=/usr/share/doc/ember, DKMS_DOCDIR=$DOCDIR, VERSION (from ./VERSION)
#
# Files under /etc are configuration: install never overwrites one that
# exists, uninstall removes one only when it is still the shipped version
# (a modified one is kept and reported). A real install (no DESTDIR) also
# registers the module with DKMS; uninstall removes it from DKMS and
# disables the service, so nothing of ember is left behind.
set -euo pipefail

TOP=$(cd "$(dirname "$0")/.." && pwd)
cd "$TOP"

action=${1:-}
part=${2:-all}
DESTDIR=${DESTDIR:-}
BINDIR=${BINDIR:-/usr/bin}
LIBDIR=${LIBDIR:-/usr/lib}
MANDIR=${MANDIR:-/usr/share/man}
SYSCONFDIR=${SYSCONFDIR:-/etc}
UNITDIR=${UNITDIR:-/lib/systemd/system}
UDEVRULESDIR=${UDEVRULESDIR:-/lib/udev/rules.d}
DKMSSRCDIR=${DKMSSRCDIR:-/usr/src}
DOCDIR=${DOCDIR:-/usr/share/doc/ember}
DKMS_DOCDIR=${DKMS_DOCDIR:-$DOCDIR}
VERSION=${VERSION:-$(cat VERSION)}
DKMS_DIR=$DKMSSRCDIR/ember-$VERSION
# the kernel ember.ko was built for (image part), from its vermagic
KO_KVER=${KVER:-}
if [ -z "$KO_KVER" ] && [ -e ember.ko ]; then
	KO_KVER=$(modinfo -F vermagic ember.ko 2>/dev/null | cut -d' ' -f1)
fi

die() { echo "install.sh: error: $*" >&2; exit 1; }
note() { echo "install.sh: $*" >&2; }

# What the DKMS tree needs to run `make module KDIR=...`: the top-level
# Makefile (it only -includes fragments, so the missing agent/bpf ones are
# fine), Kbuild, VERSION, and the module's sources and UAPI header.
DKMS_SOURCES=(Makefile Kbuild VERSION kmod include)

# entries PART: print "MODE SOURCE DEST" lines; SOURCE "-" marks a generated
# file (see gen_file).
entries() {
	local p=$1
	if [ "$p" = agent ] || [ "$p" = all ]; then
		cat <<-EOF
			0755 agent/ember $BINDIR/ember
			0644 preload/libember-alloc.so $LIBDIR/ember/libember-alloc.so
			0644 docs/ember.1 $MANDIR/man1/ember.1
			0644 packaging/ember.service $UNITDIR/ember.service
			0640 packaging/ember.conf $SYSCONFDIR/ember/ember.conf
			0644 packaging/ember.conf $DOCDIR/examples/ember.conf
			0644 docs/packaging.md $DOCDIR/packaging.md
		EOF
	fi
	if [ "$p" = image ]; then
		cat <<-EOF
			0755 agent/ember $BINDIR/ember
			0755 packaging/image/S60ember $SYSCONFDIR/init.d/S60ember
			0640 packaging/ember.conf $SYSCONFDIR/ember/ember.conf
		EOF
		# optional parts: only what this build made
		[ ! -e preload/libember-alloc.so ] ||
			echo "0644 preload/libember-alloc.so $LIBDIR/ember/libember-alloc.so"
		[ -z "$KO_KVER" ] || echo "0644 ember.ko /lib/modules/$KO_KVER/extra/ember.ko"
	fi
	if [ "$p" = dkms ] || [ "$p" = all ]; then
		echo "0644 dkms.conf $DKMS_DIR/dkms.conf"
		local f
		while IFS= read -r f; do
			[ "$f" = dkms.conf ] && continue
			echo "0644 $f $DKMS_DIR/$f"
		done < <(packaging/list-sources.sh "${DKMS_SOURCES[@]}")
		cat <<-EOF
			0644 packaging/60-ember.rules $UDEVRULESDIR/60-ember.rules
			0644 packaging/modprobe-ember.conf $SYSCONFDIR/modprobe.d/ember.conf
			0644 docs/secure-boot.md $DKMS_DOCDIR/secure-boot.md
			0644 packaging/examples/61-ember-group.rules $DKMS_DOCDIR/examples/61-ember-group.rules
			0644 packaging/examples/modules-load-ember.conf $DKMS_DOCDIR/examples/modules-load-ember.conf
			0644 packaging/examples/dkms-mok-signing.conf $DKMS_DOCDIR/examples/dkms-mok-signing.conf
		EOF
	fi
}

# The file as installed: sources, except for the few that carry paths or
# the version.
render() {
	local src=$1 dest=$2
	case $src in
	packaging/ember.service)
		sed "s|/usr/bin/ember|$BINDIR/ember|g" "$src" ;;
	dkms.conf)
		sed "s|^PACKAGE_VERSION=.*|PACKAGE_VERSION=\"$VERSION\"|" "$src" ;;
	*)
		cat "$src" ;;
	esac
}

is_config() { [[ $1 == "$SYSCONFDIR"/* ]]; }

do_install() {
	local mode src dest missing=()
	if [ "$part" = image ] && [ -z "$DESTDIR" ]; then
		die "install image lays out an image root: set DESTDIR (make install-image DESTDIR=...)"
	fi
	while read -r mode src dest; do
		[ -e "$src" ] || missing+=("$src")
	done < <(entries "$part")
	if [ ${#missing[@]} -gt 0 ]; then
		die "missing inputs: ${missing[*]} (run \`make\` first; agent/ember, preload/libember-alloc.so and docs/ember.1 come from the agent build)"
	fi
	while read -r mode src dest; do
		local target=$DESTDIR$dest
		if is_config "$dest" && [ -e "$target" ]; then
			if ! render "$src" "$dest" | cmp -s - "$target"; then
				note "kept your $target (the shipped version is in $DOCDIR/examples or $src)"
			fi
			continue
		fi
		mkdir -p "$(dirname "$target")"
		render "$src" "$dest" >"$target.ember-new"
		if [ -n "${STRIP:-}" ] && [ "$(head -c 4 "$src" | od -An -c | tr -d ' ')" = '177ELF' ]; then
			"$STRIP" --strip-unneeded "$target.ember-new" ||
				die "$STRIP failed on $src"
		fi
		chmod "$mode" "$target.ember-new"
		mv -f "$target.ember-new" "$target"
	done < <(entries "$part")

	[ -z "$DESTDIR" ] || return 0
	# A real install: let the running system notice.
	if [ "$part" != agent ]; then
		if command -v dkms >/dev/null; then
			[ -n "$(dkms status -m ember -v "$VERSION")" ] ||
				dkms add -m ember -v "$VERSION"
			if [ -d "/lib/modules/$(uname -r)/build" ]; then
				dkms install -m ember -v "$VERSION" ||
					note "dkms could not build ember.ko for $(uname -r): see the log above"
			else
				note "no headers for $(uname -r): ember.ko will be built by DKMS when they are installed"
			fi
		else
			note "dkms not found: install it, then run \`dkms install -m ember -v $VERSION\`"
		fi
		command -v udevadm >/dev/null && udevadm control --reload 2>/dev/null || true
	fi
	if [ "$part" != dkms ] && [ -d /run/systemd/system ]; then
		systemctl daemon-reload
		note "configure $SYSCONFDIR/ember/ember.conf, then: systemctl enable --now ember"
	fi
}

# Remove DIR and its now-empty parents, but only ember's own directories,
# or anything under a staging DESTDIR (where nothing else lives).
prune_dirs() {
	local d=$1
	while [ -n "$d" ] && [ "$d" != / ] && [ "$d" != . ]; do
		case $d in
		*/ember | */ember/* | */ember-dkms | */ember-dkms/* | "$DKMS_DIR" | "$DKMS_DIR"/*) ;;
		*) [ -n "$DESTDIR" ] || return 0 ;;
		esac
		rmdir "$DESTDIR$d" 2>/dev/null || return 0
		d=$(dirname "$d")
	done
}

do_uninstall() {
	if [ -z "$DESTDIR" ]; then
		if [ "$part" != dkms ] && [ -d /run/systemd/system ] &&
			[ -e "$UNITDIR/ember.service" ]; then
			systemctl disable --now ember.service 2>/dev/null || true
		fi
		if [ "$part" != agent ] && command -v dkms >/dev/null &&
			[ -n "$(dkms status -m ember -v "$VERSION")" ]; then
			dkms remove -m ember -v "$VERSION" --all
		fi
	fi
	local mode src dest dirs=()
	while read -r mode src dest; do
		local target=$DESTDIR$dest
		if is_config "$dest" && [ -e "$target" ] && [ -e "$src" ] &&
			! render "$src" "$dest" | cmp -s - "$target"; then
			note "kept $target: it was modified"
			continue
		fi
		rm -f "$target"
		dirs+=("$(dirname "$dest")")
	done < <(entries "$part"; [ ! -d "$DESTDIR$DKMS_DIR" ] || [ "$part" = agent ] ||
		(cd "$DESTDIR$DKMS_DIR" && find . -type f | sed "s|^\./|0644 - $DKMS_DIR/|"))
	# Deepest first, so parents empty out before they are tried.
	local d
	while IFS= read -r d; do
		prune_dirs "$d"
	done < <(printf '%s\n' "${dirs[@]}" | sort -u | sort -r)
	if [ -z "$DESTDIR" ] && [ "$part" != dkms ] && [ -d /run/systemd/system ]; then
		systemctl daemon-reload
	fi
}

case $action in
install) do_install ;;
uninstall) do_uninstall ;;
*) die "usage: $0 install|uninstall [all|agent|dkms|image]" ;;
esac
