#!/usr/bin/env bash
# 60-packaging: packages, DKMS, the systemd unit, udev, source installs.
#
#   pkg-version           dkms.conf's PACKAGE_VERSION is ./VERSION
#   pkg-inputs            what the packages ship exists (agent, man page,
#                         module build): names the missing piece
#   unit-verify           systemd-analyze verify: no error, no warning
#   unit-caps             ember record works with exactly the unit's
#                         CapabilityBoundingSet (eBPF backend on this host)
#   sample-config         ember run accepts every example in ember.conf
#   udev-rule             60-ember.rules: 0600 root by default, well-formed
#   install-uninstall     make install DESTDIR=x puts every file in place,
#                         make uninstall DESTDIR=x leaves x empty
#   install-prefix        PREFIX=/usr/local moves the binary and the unit's
#                         ExecStart with it
#   uninstall-keeps-config  a modified /etc file survives uninstall, alone
#   deb-build             make deb: ember and ember-dkms
#   deb-layout            both .debs installed into a throw-away dpkg root:
#                         every path of docs/packaging.md's table, owned by
#                         the package it names; conffiles; modes
#   deb-lifecycle         configure registers the module with DKMS and
#                         leaves the unit disabled; purge runs dkms remove
#                         and leaves nothing
#   deb-man               the man page the unit's Documentation= names
#   rpm-build             make rpm: ember and ember-dkms, same layout
#   dkms-<series>         for 5.10, 6.1, 6.12 (headers from
#                         scripts/fetch-kernels.sh): dkms add, build, install
#                         (the newest kernel: dkms autoinstall) signed with
#                         a throw-away MOK, remove; all in a private DKMS
#                         tree inside a private mount namespace
#   dkms-host-untouched   the host's /etc/dkms, /var/lib/dkms, /usr/src and
#                         /lib/modules gained nothing
#
# Missing inputs (no agent binary yet, no man page, no kernel headers) are
# FAILs that say what is missing, never silent skips.
set -uo pipefail
cd "$(dirname "$0")/../.."
. selftests/lib.sh

TOP=$PWD
VERSION=$(cat VERSION)
SERIES=${EMBER_KERNEL_SERIES:-5.10 6.1 6.12}
WORK=$(mktemp -d /tmp/ember-pkg.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
LOG=$WORK/log

# last lines of the log, on one line, for a FAIL message
why() { tail -n "${2:-4}" "$1" 2>/dev/null | tr '\n' ' ' | cut -c1-400; }

# ------------------------------------------------------------------ basics
conf_version=$(sed -n 's/^PACKAGE_VERSION="\(.*\)"$/\1/p' dkms.conf)
if [ "$conf_version" = "$VERSION" ]; then
	t_pass pkg-version
else
	t_fail pkg-version "dkms.conf says PACKAGE_VERSION=\"$conf_version\" but VERSION is $VERSION: update dkms.conf"
fi

missing=()
make -s agent >"$LOG" 2>&1 || missing+=("agent/ember (make agent failed: $(why "$LOG" 2))")
[ -x agent/ember ] || missing+=("agent/ember")
[ -f preload/libember-alloc.so ] || missing+=("preload/libember-alloc.so")
[ -f docs/ember.1 ] || missing+=("docs/ember.1 (the man page)")
[ -f Kbuild ] || missing+=("Kbuild")
[ -f kmod/kmod.mk ] || missing+=("kmod/kmod.mk")
if [ ${#missing[@]} -eq 0 ]; then
	t_pass pkg-inputs
else
	t_fail pkg-inputs "missing: ${missing[*]}"
fi

# The unit as shipped, with ExecStart pointing at a stand-in so the check
# covers the unit itself; the man page is checked in deb-man.
mkdir -p "$WORK/unit"
printf '#!/bin/sh\n' >"$WORK/unit/ember" && chmod +x "$WORK/unit/ember"
sed "s|/usr/bin/ember|$WORK/unit/ember|g" packaging/ember.service >"$WORK/unit/ember.service"
if systemd-analyze verify --man=no "$WORK/unit/ember.service" >"$LOG" 2>&1 && [ ! -s "$LOG" ]; then
	t_pass unit-verify
else
	t_fail unit-verify "$(why "$LOG")"
fi

# The unit's capability set is enough for the daemon's sampling on this
# host (eBPF backend: no module support here): run ember with exactly that
# bounding set, no_new_privs, and expect samples and named kernel frames
# (CAP_SYSLOG is what un-hides /proc/kallsyms).
caps=$(sed -n 's/^CapabilityBoundingSet=//p' packaging/ember.service |
	tr 'A-Z ' 'a-z\n' | sed -n 's/^cap_\(.*\)/+\1/p' | paste -sd,)
if [ ! -x agent/ember ]; then
	t_fail unit-caps "agent/ember not built"
elif [ -z "$caps" ]; then
	t_fail unit-caps "no CapabilityBoundingSet= in packaging/ember.service"
elif ! {
	# something to sample: an idle CI machine gives the whole-system
	# recording no stacks at all (idle CPUs are not sampled)
	timeout 6 dd if=/dev/zero of=/dev/null bs=1M 2>/dev/null &
	load=$!
	setpriv --no-new-privs --inh-caps=-all --ambient-caps=-all --bounding-set=-all,"$caps" -- \
		timeout 60 agent/ember record -a -d 2 -o "$WORK/caps.folded" >"$LOG" 2>&1
	rc=$?
	kill "$load" 2>/dev/null
	wait "$load" 2>/dev/null
	[ "$rc" = 0 ]
}; then
	t_fail unit-caps "ember record with only $caps failed: $(why "$LOG" 3)"
elif ! grep -qE '(^|;)[A-Za-z_][A-Za-z0-9_.]*_\[k\]' "$WORK/caps.folded"; then
	t_fail unit-caps "with only $caps: no symbolized kernel frame in $(wc -l <"$WORK/caps.folded") stacks"
else
	t_pass unit-caps
fi

# Every example line of the shipped ember.conf, uncommented, is accepted by
# `ember run` (a bad setting exits 2 at once, naming file:line). The daemon
# then runs until the timeout; its endpoint does not resolve, which is fine.
sed -n 's/^#\([a-z_]* = .*\)$/\1/p' packaging/ember.conf |
	grep -v '^\(pid\|metrics_addr\) ' >"$WORK/sample.conf"
if [ ! -x agent/ember ]; then
	t_fail sample-config "agent/ember not built"
elif [ "$(wc -l <"$WORK/sample.conf")" -lt 10 ]; then
	t_fail sample-config "packaging/ember.conf has fewer than 10 '#key = value' examples"
else
	timeout -k 10 4 agent/ember run --config "$WORK/sample.conf" >"$LOG" 2>&1
	rc=$?
	if [ $rc -eq 2 ] || grep -q "sample.conf:[0-9]*:" "$LOG"; then
		t_fail sample-config "ember run rejects packaging/ember.conf: $(grep -m1 'sample.conf:' "$LOG")"
	else
		t_pass sample-config
	fi
fi

udev_bad=$(grep -v '^[[:space:]]*\(#.*\)\?$' packaging/60-ember.rules packaging/examples/61-ember-group.rules |
	grep -v -E '^[^:]+:([A-Z]+(\{[^}]*\})?(==|!=|=|\+=|:=)"[^"]*"(, )?)+$')
if [ -n "$udev_bad" ]; then
	t_fail udev-rule "malformed: $udev_bad"
elif ! grep -q '^KERNEL=="ember", OWNER="root", GROUP="root", MODE="0600"$' packaging/60-ember.rules; then
	t_fail udev-rule "/dev/ember must default to root:root 0600"
else
	t_pass udev-rule
fi

# ---------------------------------------------------------- source install
# Paths a source install must create (PREFIX=/usr, the defaults).
source_install_paths() {
	cat <<-EOF
		/usr/bin/ember
		/usr/lib/ember/libember-alloc.so
		/usr/share/man/man1/ember.1
		/lib/systemd/system/ember.service
		/etc/ember/ember.conf
		/lib/udev/rules.d/60-ember.rules
		/etc/modprobe.d/ember.conf
		/usr/src/ember-$VERSION/dkms.conf
		/usr/src/ember-$VERSION/Makefile
		/usr/src/ember-$VERSION/Kbuild
		/usr/src/ember-$VERSION/VERSION
		/usr/src/ember-$VERSION/kmod/kmod.mk
		/usr/src/ember-$VERSION/include/uapi/ember.h
		/usr/share/doc/ember/secure-boot.md
		/usr/share/doc/ember/examples/61-ember-group.rules
	EOF
}

D=$WORK/destdir
if ! make -s install DESTDIR="$D" >"$LOG" 2>&1; then
	t_fail install-uninstall "make install DESTDIR failed: $(why "$LOG")"
else
	absent=$(source_install_paths | while read -r p; do [ -e "$D$p" ] || echo "$p"; done)
	# nothing built may leak into the DKMS tree
	leaked=$(find "$D/usr/src" \( -name '*.o' -o -name '*.ko' -o -name '*.cmd' -o -path '*/.cache*' \) | head -3)
	make -s uninstall DESTDIR="$D" >"$LOG" 2>&1
	left=$(cd "$D" 2>/dev/null && find . -mindepth 1 | head -5)
	if [ -n "$absent" ]; then
		t_fail install-uninstall "not installed: $(echo $absent)"
	elif [ -n "$leaked" ]; then
		t_fail install-uninstall "build output in the DKMS sources: $(echo $leaked)"
	elif [ -n "$left" ]; then
		t_fail install-uninstall "left behind by make uninstall: $(echo $left)"
	else
		t_pass install-uninstall
	fi
fi

D=$WORK/destdir-local
if make -s install DESTDIR="$D" PREFIX=/usr/local >"$LOG" 2>&1 &&
	[ -x "$D/usr/local/bin/ember" ] &&
	grep -q '^ExecStart=/usr/local/bin/ember run$' "$D/lib/systemd/system/ember.service" &&
	make -s uninstall DESTDIR="$D" PREFIX=/usr/local >>"$LOG" 2>&1 &&
	[ -z "$(find "$D" -mindepth 1)" ]; then
	t_pass install-prefix
else
	t_fail install-prefix "PREFIX=/usr/local: $(why "$LOG") $(find "$D" -mindepth 1 2>/dev/null | head -3)"
fi

D=$WORK/destdir-conf
if make -s install DESTDIR="$D" >"$LOG" 2>&1; then
	echo "# local change" >>"$D/etc/ember/ember.conf"
	make -s uninstall DESTDIR="$D" >"$LOG" 2>&1
	left=$(cd "$D" && find . -type f)
	if [ "$left" = ./etc/ember/ember.conf ] && grep -q 'kept' "$LOG"; then
		t_pass uninstall-keeps-config
	else
		t_fail uninstall-keeps-config "expected only ./etc/ember/ember.conf left (and a note), got: $(echo $left)"
	fi
else
	t_fail uninstall-keeps-config "make install DESTDIR failed: $(why "$LOG")"
fi

# ---------------------------------------------------------------- .deb
deb_agent=build/deb/ember_${VERSION}_amd64.deb
deb_dkms=build/deb/ember-dkms_${VERSION}_all.deb
if make -s deb >"$LOG" 2>&1 && [ -f "$deb_agent" ] && [ -f "$deb_dkms" ]; then
	t_pass deb-build
else
	t_fail deb-build "$(grep -m3 -E '(error|Error)[: ]' build/deb/dpkg-buildpackage.log 2>/dev/null | tr '\n' ' ' | cut -c1-300) $(why "$LOG" 2)"
fi

# The layout table of docs/packaging.md: "| `/path` | package | what |"
doc_paths() {
	sed -n 's/^| `\(\/[^`]*\)` | \(ember\(-dkms\)\?\) |.*/\1 \2/p' docs/packaging.md |
		sed "s/<version>/$VERSION/g"
}

# A throw-away dpkg root in which maintainer scripts can run: busybox as
# /bin/sh, and stand-ins for dkms, DKMS's common.postinst and systemd's
# helpers that only log how they were called. The real DKMS is exercised
# by the dkms-* tests; here we check what the packages ask of it.
make_root() {
	local R=$1 stub
	mkdir -p "$R/var/lib/dpkg/info" "$R/var/lib/dpkg/updates" "$R/bin" \
		"$R/usr/sbin" "$R/usr/bin" "$R/usr/lib/dkms" "$R/sbin" "$R/var/log"
	: >"$R/var/lib/dpkg/status"
	cp /bin/busybox "$R/bin/busybox"
	for a in sh cat echo test [ rm mkdir ln ls sed grep; do ln -s busybox "$R/bin/$a"; done
	for stub in /usr/sbin/dkms /usr/lib/dkms/common.postinst /usr/bin/deb-systemd-helper \
		/usr/bin/deb-systemd-invoke /usr/bin/systemctl /sbin/ldconfig /usr/sbin/start-stop-daemon; do
		# dkms status answers for an added module, so prerm removes it
		cat >"$R$stub" <<-EOF
			#!/bin/sh
			echo "$stub \$*" >>/var/log/stubs.log
			case "$stub \$1" in
			"/usr/sbin/dkms status") echo "ember/$VERSION: added" ;;
			"/usr/bin/deb-systemd-helper was-enabled"|"/usr/bin/deb-systemd-helper debian-installed") exit 1 ;;
			esac
			exit 0
		EOF
		chmod +x "$R$stub"
	done
}

R=$WORK/root
if [ -f "$deb_agent" ] && [ -f "$deb_dkms" ]; then
	make_root "$R"
	if ! dpkg --root="$R" --force-depends --install "$deb_agent" "$deb_dkms" >"$LOG" 2>&1; then
		t_fail deb-layout "dpkg --root --install failed: $(why "$LOG")"
		t_fail deb-lifecycle "dpkg --root --install failed"
	else
		errs=()
		n=0
		while read -r path pkg; do
			n=$((n + 1))
			if [ ! -e "$R$path" ]; then
				errs+=("$path missing")
				continue
			fi
			owner=$(dpkg --root="$R" -S "$path" 2>/dev/null | cut -d: -f1)
			[ "$owner" = "$pkg" ] || errs+=("$path owned by '$owner', docs say $pkg")
		done < <(doc_paths)
		[ "$n" -ge 15 ] || errs+=("only $n paths read from docs/packaging.md's table")
		conf=$(dpkg-query --admindir="$R/var/lib/dpkg" -W -f='${Conffiles}\n' ember ember-dkms 2>/dev/null)
		for c in /etc/ember/ember.conf /etc/modprobe.d/ember.conf; do
			grep -q "^ $c " <<<"$conf" || errs+=("$c is not a conffile")
		done
		mode=$(stat -c %a "$R/etc/ember/ember.conf" 2>/dev/null)
		[ "$mode" = 640 ] || errs+=("/etc/ember/ember.conf mode $mode, want 640")
		grep -q '^ExecStart=/usr/bin/ember run$' "$R/lib/systemd/system/ember.service" ||
			errs+=("ember.service ExecStart is not /usr/bin/ember run")
		if [ ${#errs[@]} -eq 0 ]; then
			t_pass deb-layout
		else
			t_fail deb-layout "$(printf '%s; ' "${errs[@]}" | cut -c1-400)"
		fi

		# configure registered the module with DKMS and left the unit disabled;
		# remove ran dkms remove; purge left nothing of ember.
		errs=()
		grep -q "^/usr/lib/dkms/common.postinst ember $VERSION /usr/share/ember-dkms " "$R/var/log/stubs.log" ||
			errs+=("ember-dkms configure did not run DKMS's postinst for ember $VERSION")
		grep -q 'deb-systemd-helper enable\|systemctl enable\|deb-systemd-invoke start' "$R/var/log/stubs.log" &&
			errs+=("installing enabled or started ember.service")
		dpkg --root="$R" --force-depends --purge ember ember-dkms >"$LOG" 2>&1 ||
			errs+=("dpkg --purge failed: $(why "$LOG" 2)")
		grep -q "^/usr/sbin/dkms remove -m ember -v $VERSION --all" "$R/var/log/stubs.log" ||
			errs+=("removing ember-dkms did not dkms remove")
		left=$(cd "$R" && find . -path ./var/lib/dpkg -prune -o -name '*ember*' -print | grep -v '^./var/log' | head -5)
		[ -z "$left" ] || errs+=("left after purge: $(echo $left)")
		if [ ${#errs[@]} -eq 0 ]; then
			t_pass deb-lifecycle
		else
			t_fail deb-lifecycle "$(printf '%s; ' "${errs[@]}" | cut -c1-400)"
		fi
	fi
	# Documentation=man:ember(1) in the unit resolves to the shipped page.
	mkdir -p "$WORK/man" && dpkg -x "$deb_agent" "$WORK/man"
	# (outputs captured before grep -q: with pipefail, an early grep exit
	# could SIGPIPE the writer and turn a match into a failure)
	if grep -q "^$WORK/man/usr/share/man/man1/ember.1" <<<"$(MANPATH="$WORK/man/usr/share/man" man -w ember 2>/dev/null)"; then
		t_pass deb-man
	else
		t_fail deb-man "man:ember(1) not found in the ember package"
	fi
else
	t_fail deb-layout "no packages to install: deb-build failed"
	t_fail deb-lifecycle "no packages: deb-build failed"
	t_fail deb-man "no packages: deb-build failed"
fi

# ---------------------------------------------------------------- .rpm
if make -s rpm >"$LOG" 2>&1; then
	rpm_agent=$(ls build/rpm/RPMS/x86_64/ember-"$VERSION"-1*.x86_64.rpm 2>/dev/null | head -1)
	rpm_dkms=$(ls build/rpm/RPMS/noarch/ember-dkms-"$VERSION"-1*.noarch.rpm 2>/dev/null | head -1)
	errs=()
	if [ -z "$rpm_agent" ] || [ -z "$rpm_dkms" ]; then
		errs+=("packages missing: $(find build/rpm/RPMS -name '*.rpm' | tr '\n' ' ')")
	else
		list=$(rpm -qlp "$rpm_agent" "$rpm_dkms" 2>/dev/null)
		for p in /usr/bin/ember /usr/lib/systemd/system/ember.service /etc/ember/ember.conf \
			/usr/lib/udev/rules.d/60-ember.rules /etc/modprobe.d/ember.conf \
			/usr/src/ember-"$VERSION"/dkms.conf /usr/src/ember-"$VERSION"/kmod/kmod.mk; do
			grep -qx "$p" <<<"$list" || errs+=("$p not packaged")
		done
		grep -q 'dkms install' <<<"$(rpm -qp --scripts "$rpm_dkms" 2>/dev/null)" ||
			errs+=("ember-dkms %post does not run dkms install")
		grep -qx /etc/ember/ember.conf <<<"$(rpm -qp --configfiles "$rpm_agent" 2>/dev/null)" ||
			errs+=("ember.conf not %config")
	fi
	if [ ${#errs[@]} -eq 0 ]; then
		t_pass rpm-build
	else
		t_fail rpm-build "$(printf '%s; ' "${errs[@]}" | cut -c1-400)"
	fi
else
	t_fail rpm-build "$(grep -m3 -E '(error|Error)[: ]' build/rpm/rpmbuild.log 2>/dev/null | tr '\n' ' ' | cut -c1-300) $(why "$LOG" 2)"
fi

# ---------------------------------------------------------------- DKMS
# Host state before: nothing of this test may remain in it afterwards.
host_state() {
	ls -d /etc/dkms/framework.conf.d/* /var/lib/dkms/ember* /usr/src/ember-* \
		/lib/modules/*/updates/dkms/ember.ko* 2>/dev/null
}
host_before=$(host_state)

# The DKMS sources exactly as the ember-dkms package installs them.
SRCROOT=$WORK/dkms-src
make -s install-dkms DESTDIR="$SRCROOT" >"$LOG" 2>&1 ||
	echo "make install-dkms failed: $(why "$LOG")" >"$WORK/dkms-src.err"

# A throw-away machine owner key, as docs/secure-boot.md creates one.
openssl req -new -x509 -nodes -days 1 -subj "/CN=ember selftest MOK/" \
	-newkey rsa:2048 -keyout "$WORK/mok.key" -outform DER -out "$WORK/mok.der" \
	>/dev/null 2>&1

# dkms_in_sandbox SERIES KDIR KVER: the whole DKMS life cycle for one kernel
# in a private mount namespace whose /etc/dkms is ours, so DKMS reads only
# our framework.conf: trees, install root and signing key all under $WORK.
# Nothing reaches the host's /var/lib/dkms, /usr/src or /lib/modules.
dkms_in_sandbox() {
	local series=$1 kdir=$2 kver=$3 sign_file=$4 T=$WORK/dkms-$1
	# $5: "autoinstall" to install through `dkms autoinstall`
	# DKMS installs only into kernels that exist in its install tree
	mkdir -p "$T/etc" "$T/tree" "$T/modules/$kver" "$T/tmp"
	cat >"$T/etc/framework.conf" <<-EOF
		source_tree="$SRCROOT/usr/src"
		dkms_tree="$T/tree"
		install_tree="$T/modules"
		tmp_location="$T/tmp"
		sign_file="$sign_file"
		mok_signing_key="$WORK/mok.key"
		mok_certificate="$WORK/mok.der"
	EOF
	unshare --mount --propagation private bash -euo pipefail -c '
		mount --bind "$1/etc" /etc/dkms
		v=$2 kdir=$3 kver=$4
		dkms add -m ember -v "$v"
		if [ "$5" = autoinstall ]; then
			# what a kernel upgrade runs: AUTOINSTALL="yes" must be enough
			dkms autoinstall -k "$kver" --kernelsourcedir "$kdir" --no-depmod -j 2
		else
			dkms build -m ember -v "$v" -k "$kver" --kernelsourcedir "$kdir" -j 2 ||
				{ cat "$1"/tree/ember/"$v"/build/make.log; exit 1; }
			dkms install -m ember -v "$v" -k "$kver" --kernelsourcedir "$kdir" --no-depmod
		fi
		dkms status -m ember -v "$v"
		ko=$(ls "$1"/modules/"$kver"/updates/dkms/ember.ko*)
		echo "installed: $ko"
		echo "vermagic: $(modinfo -F vermagic "$ko")"
		echo "signer: $(modinfo -F signer "$ko")"
		echo "sig_key: $(modinfo -F sig_key "$ko" | tr -d :)"
		dkms remove -m ember -v "$v" --all --no-depmod
		echo "after remove: $(dkms status -m ember 2>&1) $(find "$1/tree" "$1/modules" -name "ember*" | head -3)"
	' sandbox "$T" "$VERSION" "$kdir" "$kver" "$5"
}

# sign-file for a kernel: its headers' own, as DKMS would use, unless that
# binary cannot run here: 5.10's comes from bullseye and links OpenSSL 1.1,
# which bookworm lacks. Any kernel's sign-file writes the same signature
# format, so another series' one stands in (framework.conf's sign_file is
# the documented knob for exactly this).
pick_sign_file() {
	local k s
	for k in "$1" $(for s in $SERIES; do scripts/fetch-kernels.sh --kdir "$s" 2>/dev/null; done); do
		if [ -x "$k/scripts/sign-file" ] &&
			! grep -q "not found" <<<"$(ldd "$k/scripts/sign-file" 2>&1)"; then
			echo "$k/scripts/sign-file"
			return 0
		fi
	done
	return 1
}
mok_serial=$(openssl x509 -inform DER -in "$WORK/mok.der" -noout -serial 2>/dev/null | sed 's/^serial=//')

for s in $SERIES; do
	name=dkms-$s
	if [ -e "$WORK/dkms-src.err" ]; then
		t_fail "$name" "$(cat "$WORK/dkms-src.err")"
		continue
	fi
	if ! kdir=$(scripts/fetch-kernels.sh --kdir "$s" 2>"$LOG") ||
		! kver=$(scripts/fetch-kernels.sh --version "$s" 2>>"$LOG"); then
		t_fail "$name" "no headers for $s from scripts/fetch-kernels.sh: $(why "$LOG" 2)"
		continue
	fi
	if ! sign_file=$(pick_sign_file "$kdir"); then
		t_fail "$name" "no runnable scripts/sign-file in the headers of: $SERIES"
		continue
	fi
	out=$WORK/dkms-$s.log
	# the newest kernel goes through autoinstall, as after a kernel upgrade
	how=build-install
	[ "$s" != "${SERIES##* }" ] || how=autoinstall
	if ! dkms_in_sandbox "$s" "$kdir" "$kver" "$sign_file" "$how" >"$out" 2>&1; then
		t_fail "$name" "$(why "$out" 6)"
		continue
	fi
	errs=()
	grep -q "^installed: .*/$kver/updates/dkms/ember.ko" "$out" || errs+=("module not installed for $kver")
	grep -q "^vermagic: $kver " "$out" || errs+=("vermagic is not $kver: $(grep '^vermagic' "$out")")
	grep -q '^signer: ember selftest MOK$' "$out" &&
		grep -qi "^sig_key: $mok_serial\$" "$out" ||
		errs+=("not signed with the MOK: $(grep '^s' "$out" | tr '\n' ' ') $(grep -i 'sign-file' "$out" | tail -1)")
	grep -q '^after remove: *$' "$out" || errs+=("dkms remove left: $(grep '^after remove' "$out")")
	if [ ${#errs[@]} -eq 0 ]; then
		t_pass "$name"
	else
		t_fail "$name" "$(printf '%s; ' "${errs[@]}")"
	fi
done

host_after=$(host_state)
if [ "$host_before" = "$host_after" ]; then
	t_pass dkms-host-untouched
else
	t_fail dkms-host-untouched "host DKMS state changed: $(diff <(echo "$host_before") <(echo "$host_after") | grep '^[<>]' | tr '\n' ' ')"
fi
exit 0
