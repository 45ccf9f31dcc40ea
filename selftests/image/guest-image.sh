#!/bin/sh
# Runs inside the arm64 test VM (selftests/suites/80-image-arm64.sh through
# selftests/vm/run-vm.sh, 256 MiB of RAM): boots the appliance image of
# scripts/build-image.sh as an appliance boots, and checks it.
#
# "Boot": the image's root.ext4 is mounted read-only (the root), its
# data.ext4 read-write at /data (the data partition); the image's busybox
# init then runs as PID 1 of a new PID and mount namespace, chrooted into
# the root: inittab, rcS (proc, sys, tmpfs /run and /tmp), S50otlp_sink
# (the receiver), S60ember (ember.ko or the eBPF fallback, ember run under
# its supervisor). "Reboot": init gets SIGTERM, runs rcK (ember stops,
# delivers and keeps its last profile, the module is unloaded), kills what
# is left and ends; then the same root and data partition boot again.
#
# Output: PASS:/FAIL: lines, and "# fig KEY=VALUE" lines with the figures
# (footprint, RSS, CPU, kernel memory).
P=${1:-/payload/image}
IMG=${IMG:-/img}
fails=0
pass() { echo "PASS: image_$1"; }
fail() { echo "FAIL: image_$1: $2"; fails=$((fails + 1)); }
fig() { echo "# fig $1"; }
# in the image: its root, its mounts (/run, /tmp), its PID namespace
in_image() { nsenter -t "$INIT" -m -p -r -w "$@"; }
run_file() { echo "/proc/$INIT/root/run/$1"; }
# the agent's PID as this (outer) namespace sees it: the child of the
# supervisor named ember
agent_outer() {
	for p in $(pidof ember); do
		[ "$(readlink /proc/$p/root)" != / ] && { echo "$p"; return; }
	done
}
# the first child of PID $1 (Debian's busybox has no pgrep)
child_of() {
	for d in /proc/[0-9]*; do
		[ "$(cut -d' ' -f4 "$d/stat" 2>/dev/null)" = "$1" ] && { echo "${d#/proc/}"; return 0; }
	done
	return 1
}
sink_count() { cat "$(run_file sink/count)" 2>/dev/null || echo 0; }
local_files() { ls "$IMG/data/ember/profiles" 2>/dev/null | grep -c '\.otlp$'; }
log() { cat "$(run_file ember/ember.log)" 2>/dev/null; }
# wait_for SECONDS COMMAND...: until the command succeeds
wait_for() {
	t=$1; shift
	while [ "$t" -gt 0 ]; do
		"$@" && return 0
		sleep 1
		t=$((t - 1))
	done
	return 1
}

boot() {
	n=$1
	: >/tmp/console.$n
	unshare -p -f -m chroot $IMG /sbin/init </dev/null >/tmp/console.$n 2>&1 &
	BOOT=$!
	INIT=""
	wait_for 10 child_of "$BOOT" >/dev/null || return 1
	INIT=$(child_of "$BOOT")
	wait_for 60 grep -q 'rcS: done' /tmp/console.$n
}

reboot_image() {
	kill -TERM "$INIT"
	wait_for 40 sh -c "! kill -0 $BOOT 2>/dev/null"
}

# ---- the disks
# loop, crc32c_generic (ext4 asks for crc32c) and ext4: run-vm.sh --kmod
mkdir -p $IMG
cp "$P/data.ext4" /tmp/data.ext4
mount -o ro,loop "$P/root.ext4" $IMG || { fail mount_root "cannot mount root.ext4"; exit 1; }
mount -o loop /tmp/data.ext4 $IMG/data || { fail mount_data "cannot mount data.ext4"; exit 1; }
fig "ram_mib=$(awk '/MemTotal/ { print int($2 / 1024) }' /proc/meminfo)"

# ---- boot 1
if boot 1; then pass boot; else fail boot "no 'rcS: done' in 60 s"; cat /tmp/console.1; exit 1; fi
grep -q 'rcS: root is ro' /tmp/console.1 && pass root_read_only ||
	fail root_read_only "$(grep 'rcS: root' /tmp/console.1)"
in_image sh -c 'touch /etc/x' 2>/dev/null && fail root_read_only_write "/etc is writable" ||
	pass root_read_only_write
if wait_for 60 sh -c "[ \$(cat $(run_file sink/count) 2>/dev/null || echo 0) -ge 2 ]"; then
	pass exports
else
	fail exports "the receiver got $(sink_count) profiles in 60 s"
fi
echo "# console of boot 1:"; sed 's/^/#   /' /tmp/console.1
echo "# ember's log:"; log | sed 's/^/#   /'
# the backend, and one clear line when it is not the module
if [ -d /sys/module/ember ]; then
	log | grep -q 'module backend' && pass backend_module || fail backend_module "$(log | grep backend)"
else
	n=$(log | grep -c 'using eBPF')
	[ "$n" -ge 1 ] && grep -q 'ember.ko' /tmp/console.1 && pass backend_fallback_said ||
		fail backend_fallback_said "no fallback line (console: $(grep ember: /tmp/console.1 | head -n 2))"
fi
# a profile the receiver got is a real one: samples, symbolized frames
f=$(ls "$(run_file sink)"/*.otlp 2>/dev/null | tail -n 1)
if [ -n "$f" ] && in_image /usr/bin/ember decode "/run/sink/${f##*/}" >/tmp/decode.txt 2>&1 &&
	grep -q ' [1-9][0-9]* samples' /tmp/decode.txt; then
	pass profile_decodes
else
	fail profile_decodes "$(head -n 5 /tmp/decode.txt 2>/dev/null)"
fi
[ "$(local_files)" -ge 1 ] && pass local_profiles || fail local_profiles "none in /data/ember/profiles"

# ---- figures at 19 Hz: RSS and CPU over 30 s, kernel memory
A=$(agent_outer)
if [ -n "$A" ]; then
	t0=$(awk '{ print $14 + $15 }' /proc/$A/stat); u0=$(cut -d' ' -f1 /proc/uptime)
	sleep 30
	t1=$(awk '{ print $14 + $15 }' /proc/$A/stat); u1=$(cut -d' ' -f1 /proc/uptime)
	rss=$(awk '/VmRSS/ { print $2 }' /proc/$A/status)
	hwm=$(awk '/VmHWM/ { print $2 }' /proc/$A/status)
	cpu=$(awk -v a="$t0" -v b="$t1" -v c="$u0" -v d="$u1" -v hz=100 \
		'BEGIN { printf "%.2f", (b - a) / hz / (d - c) * 100 }')
	fig "agent_rss_kib=$rss"
	fig "agent_rss_peak_kib=$hwm"
	fig "agent_cpu_percent=$cpu"
	[ "$rss" -le 16384 ] && pass rss_16mib || fail rss_16mib "VmRSS $rss KiB"
else
	fail figures "no agent process"
fi
in_image /usr/bin/ember status >/tmp/status.txt 2>&1
sed 's/^/#   /' /tmp/status.txt
budget=$(sed -n 's/^kernel memory budget: \([0-9]*\) MiB.*/\1/p' /tmp/status.txt)
fig "kernel_mem_budget_mib=$budget"
[ -n "$budget" ] && [ "$budget" -le 8 ] && pass kernel_mem_budget ||
	fail kernel_mem_budget "budget '$budget'"
maps=$(sed -n 's/.*maps: [0-9]*, \([0-9.]*\) MiB of kernel memory.*/\1/p' /tmp/status.txt | head -n 1)
if [ -n "$maps" ]; then
	fig "bpf_maps_mib=$maps"
	awk -v m="$maps" 'BEGIN { exit !(m <= 8) }' && pass kernel_mem_8mib ||
		fail kernel_mem_8mib "eBPF maps $maps MiB"
elif [ -d /sys/module/ember ]; then
	# the module: its rings now, and the most its unwind tables may take
	ring=$(sed -n 's/.*ring memory: \([0-9.]*\) of.*/\1/p' /tmp/status.txt)
	uw=$(sed -n 's/.*unwind tables: .*, \([0-9.]*\) of \([0-9]*\) MiB.*/\1 \2/p' /tmp/status.txt)
	fig "module_ring_mib=$ring module_unwind_mib=${uw% *} module_unwind_cap_mib=${uw#* } module_text_kib=$(awk '$1 == "ember" { print int($2 / 1024) }' /proc/modules)"
	awk -v r="${ring:-99}" -v c="${uw#* }" 'BEGIN { exit !(r + c <= 8) }' && pass kernel_mem_8mib ||
		fail kernel_mem_8mib "rings $ring MiB + unwind tables up to ${uw#* } MiB"
else
	fail kernel_mem_8mib "neither eBPF maps nor the module in ember status"
fi

# ---- the receiver down: ember keeps running and keeps local profiles;
# what it queued is delivered when the receiver is back
in_image /etc/init.d/S50otlp_sink stop
c0=$(sink_count); l0=$(ls "$IMG/data/ember/profiles" | tail -n 1)
sleep 15
A2=$(agent_outer)
[ -n "$A2" ] && [ "$A2" = "$A" ] && pass receiver_down_survives ||
	fail receiver_down_survives "agent $A is now '$A2'"
[ "$(ls "$IMG/data/ember/profiles" | tail -n 1)" != "$l0" ] && pass receiver_down_local ||
	fail receiver_down_local "no new local profile while the receiver was down"
in_image /etc/init.d/S50otlp_sink start
# the sink counts from 1 again in a fresh /run/sink only when it is
# removed: it is not, so the count goes on
if wait_for 60 sh -c "[ \$(cat $(run_file sink/count) 2>/dev/null || echo 0) -ge $((c0 + 3)) ]"; then
	pass receiver_back_delivers
else
	fail receiver_back_delivers "count $c0 -> $(sink_count) in 60 s"
fi

# ---- the agent killed: the supervisor starts it again
A=$(agent_outer)
kill -KILL "$A"
if wait_for 20 sh -c "p=\$(cat $(run_file ember/ember.pid) 2>/dev/null) && [ -n \"\$p\" ] && grep -q 'restarting' $(run_file ember/ember.log)"; then
	pass agent_restarted
else
	fail agent_restarted "$(log | tail -n 3)"
fi
c0=$(sink_count)
wait_for 40 sh -c "[ \$(cat $(run_file sink/count) 2>/dev/null || echo 0) -gt $c0 ]" &&
	pass agent_restarted_exports || fail agent_restarted_exports "count stayed $c0"

# ---- a full data partition: ember makes room from its own oldest
# profiles; with none of its own left, it says so, and keeps exporting
dd if=/dev/zero of=$IMG/data/filler bs=64k 2>/dev/null
sleep 12
n=$(local_files)
[ "$n" -ge 1 ] && pass full_disk_makes_room || fail full_disk_makes_room "no local profile left"
rm -f "$IMG"/data/ember/profiles/*.otlp
# full for good: ext4's delayed allocation gives blocks back after
# writeback, so fill, sync and fill again
for i in 2 3 4; do
	dd if=/dev/zero of=$IMG/data/filler$i bs=1k 2>/dev/null
	sync
done
c0=$(sink_count)
if wait_for 30 sh -c "grep -q 'No space left on device; [0-9]* profiles\{0,1\} not kept locally so far (still exported)' $(run_file ember/ember.log)"; then
	pass full_disk_said
else
	fail full_disk_said "$(log | tail -n 3)"
fi
if wait_for 15 sh -c "[ \$(cat $(run_file sink/count) 2>/dev/null || echo 0) -gt $c0 ]"; then
	pass full_disk_still_exported
else
	fail full_disk_still_exported "count stayed $c0"
fi
rm -f $IMG/data/filler*
A=$(agent_outer)
[ -n "$A" ] && pass full_disk_survives || fail full_disk_survives "agent gone"

# ---- a read-only /var: a local directory there is refused at start,
# saying what to do; the table cache there costs one warning
in_image /usr/bin/ember run --local-dir /var/lib/ember/profiles --endpoint http://127.0.0.1:4318 \
	>/tmp/rovar.txt 2>&1
rc=$?
sed 's/^/#   /' /tmp/rovar.txt
[ "$rc" = 2 ] && grep -q 'Read-only file system' /tmp/rovar.txt && grep -q 'writable place' /tmp/rovar.txt &&
	pass readonly_var_local_dir || fail readonly_var_local_dir "exit $rc"

# ---- reboot: rcK stops ember (last profile delivered and kept), unloads
# the module; the same disks boot again and ember finds its profiles
if reboot_image; then pass reboot_clean; else fail reboot_clean "init still running 40 s after SIGTERM"; fi
echo "# console of the shutdown:"; sed -n '/rcS: done/,$p' /tmp/console.1 | sed 's/^/#   /'
grep -q 'ember: stopped' /tmp/console.1 && grep -q 'rcK: done' /tmp/console.1 &&
	grep -q 'ember: ember run: stopped: ' /tmp/console.1 &&
	pass shutdown_stops_ember || fail shutdown_stops_ember "no 'ember run: stopped' / 'ember: stopped' / 'rcK: done'"
[ -d /sys/module/ember ] && fail shutdown_unloads_module "ember.ko still loaded" || pass shutdown_unloads_module
n1=$(local_files)
if boot 2 && wait_for 40 sh -c "grep -q 'files there from before' $(run_file ember/ember.log)"; then
	pass reboot_boots_again
	log | grep -q "($n1 files there from before)\|[0-9]* files there from before" && pass reboot_keeps_local ||
		fail reboot_keeps_local "$(log | grep 'keeping profiles')"
else
	fail reboot_boots_again "$(tail -n 5 /tmp/console.2)"
fi
wait_for 40 sh -c "[ \$(cat $(run_file sink/count) 2>/dev/null || echo 0) -ge 1 ]" &&
	pass reboot_exports || fail reboot_exports "nothing exported after the reboot"
reboot_image || fail reboot_clean_2 "second shutdown hung"

# ---- boot 3, a module the kernel refuses (signatures now enforced, this
# ember.ko unsigned): S60ember says so, ember run falls back to eBPF and
# says why, one line each, and exports
# (one way until the next boot: only in the test VM, whose init reads
# /etc/ember-cmd; never on a machine this script is run on by hand)
sig=/sys/module/module/parameters/sig_enforce
if [ -e /etc/ember-cmd ] && [ -e "$sig" ] && { echo 1 >"$sig"; } 2>/dev/null &&
	[ "$(cat "$sig")" = Y ]; then
	if boot 3 && wait_for 60 sh -c "grep -q 'ember run: ' $(run_file ember/ember.log) 2>/dev/null"; then
		echo "# console of boot 3:"; sed 's/^/#   /' /tmp/console.3
		echo "# ember's log:"; log | sed 's/^/#   /'
		grep -q 'could not load .*ember.ko' /tmp/console.3 && pass refused_module_said ||
			fail refused_module_said "no line from S60ember"
		[ "$(log | grep -c 'using eBPF')" = 1 ] && pass refused_module_ebpf_fallback_said ||
			fail refused_module_ebpf_fallback_said "$(log | head -n 2)"
		if wait_for 60 sh -c "[ \$(cat $(run_file sink/count) 2>/dev/null || echo 0) -ge 1 ]"; then
			pass refused_module_ebpf_exports
		else
			fail refused_module_ebpf_exports "$(log | tail -n 3)"
		fi
		# the eBPF maps under the image's budget (22.4 MiB at full size)
		in_image /usr/bin/ember status >/tmp/status3.txt 2>&1
		sed -n '/maps:/p' /tmp/status3.txt | sed 's/^/#   /'
		maps=$(sed -n 's/.*maps: [0-9]*, \([0-9.]*\) MiB of kernel memory.*/\1/p' /tmp/status3.txt | head -n 1)
		fig "bpf_maps_mib=$maps"
		[ -n "$maps" ] && awk -v m="$maps" 'BEGIN { exit !(m <= 8) }' && pass kernel_mem_8mib_ebpf ||
			fail kernel_mem_8mib_ebpf "eBPF maps '$maps' MiB"
		A=$(agent_outer)
		[ -n "$A" ] && fig "agent_rss_kib_ebpf=$(awk '/VmRSS/ { print $2 }' /proc/$A/status)"
	else
		fail refused_module_boot "$(tail -n 5 /tmp/console.3)"
	fi
	reboot_image || fail reboot_clean_3 "third shutdown hung"
else
	echo "SKIP: image_refused_module: cannot enforce module signatures here"
fi
umount $IMG/data; umount $IMG
exit $((fails > 0))
