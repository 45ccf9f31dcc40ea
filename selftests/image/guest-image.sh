#!/bin/sh
# TEST ONLY. Runs inside the booted appliance image (selftests/suites/
# 80-image-arm64.sh, selftests/image/boot-image.sh): the VM's kernel
# mounted the image's root read-only through the image's initramfs, the
# image's busybox /sbin/init is PID 1, its rcS mounted /data and started
# S50otlp_sink (the test receiver) and S60ember; last, the test-only
# S99image-test found this script on the test disk (a raw tar) and started
# it. One script, one phase per boot (ember-test/phase):
#
#   1  first boot: read-only root, backend, export, local profiles,
#      figures, receiver down and back, agent killed, full data
#      partition, read-only /var; then reboot
#   2  second boot of the same disks: the local profiles of boot 1 found,
#      exporting; then reboot
#   3  third boot, module.sig_enforce=1 on the kernel command line: the
#      unsigned ember.ko refused, the eBPF fallback; then reboot
#
# What only the console shows (rcS, S60ember's lines, the shutdown) the
# suite checks there. Output: PASS:/FAIL:/SKIP: lines and "# fig
# KEY=VALUE" lines on the console and in out.txt, written back to the test
# disk as a tar with dmesg.txt before the script reboots the image.
export PATH=/bin:/sbin:/usr/bin:/usr/sbin
HERE=$(cd "$(dirname "$0")" && pwd)
PHASE=$(cat "$HERE/phase" 2>/dev/null || echo 1)
R=/tmp/ember-test-results
mkdir -p $R
fails=0
pass() { echo "PASS: image_$1"; }
fail() { echo "FAIL: image_$1: $2"; fails=$((fails + 1)); }
fig() { echo "# fig $1"; }
sink_count() { cat /run/sink/count 2>/dev/null || echo 0; }
local_files() { ls /data/ember/profiles 2>/dev/null | grep -c '\.otlp$'; }
log() { cat /run/ember/ember.log 2>/dev/null; }
uptime_s() { cut -d' ' -f1 /proc/uptime; }
# the running agent (the supervisor's child), by its pid file
agent() {
	p=$(cat /run/ember/ember.pid 2>/dev/null) && [ -n "$p" ] &&
		[ "$(readlink "/proc/$p/exe" 2>/dev/null)" = /usr/bin/ember ] && echo "$p"
}
# wait_for SECONDS COMMAND...: until the command succeeds
wait_for() {
	t=$1
	shift
	while [ "$t" -gt 0 ]; do
		"$@" && return 0
		sleep 1
		t=$((t - 1))
	done
	return 1
}
count_ge() { [ "$(sink_count)" -ge "$1" ]; }
count_gt() { [ "$(sink_count)" -gt "$1" ]; }
log_has() { log | grep -q "$1"; }

# the machine booted the image: the root device is the VM's disk, mounted
# read-only by the initramfs, and busybox init is PID 1 (no chroot, no
# namespace); $1: the boot's suffix in the test's name
real_boot() {
	rootline=$(awk '$2 == "/" { print $1, $3, $4 }' /proc/mounts | tail -n 1)
	init=$(readlink /proc/1/exe)
	cmd=$(tr '\0' ' ' </proc/1/cmdline)
	echo "# root: $rootline; PID 1: $init ($cmd)"
	case $rootline in
	/dev/vd?" ext4 ro,"*) ;;
	*) fail "real_boot$1" "root is '$rootline'"; return ;;
	esac
	[ "$init" = /bin/busybox ] && [ "$(readlink /proc/1/root)" = / ] &&
		[ "$(readlink /sbin/init)" = ../bin/busybox ] && pass "real_boot$1" ||
		fail "real_boot$1" "PID 1 is $init ($cmd)"
}

phase1() {
	fig "ram_mib=$(awk '/MemTotal/ { print int($2 / 1024) }' /proc/meminfo)"
	fig "uptime_at_test_start_s=$(uptime_s)"
	real_boot
	awk '$2 == "/" { print $4 }' /proc/mounts | tail -n 1 | grep -q '^ro' &&
		awk '$2 == "/data" { print $4 }' /proc/mounts | grep -q '^rw' && pass mounts ||
		fail mounts "$(grep -e ' / ' -e ' /data ' /proc/mounts | tr '\n' ';')"
	touch /etc/x 2>/dev/null && fail root_read_only_write "/etc is writable" ||
		pass root_read_only_write
	# boot time to ember exporting: the uptime when the receiver has the
	# first profile
	i=0
	while [ "$(sink_count)" -lt 1 ] && [ $i -lt 300 ]; do sleep 0.2; i=$((i + 1)); done
	[ "$(sink_count)" -ge 1 ] && fig "boot_to_first_export_s=$(uptime_s)"
	if wait_for 60 count_ge 2; then
		pass exports
	else
		fail exports "the receiver got $(sink_count) profiles in 60 s"
	fi
	echo "# ember's log:"
	log | sed 's/^/#   /'
	# the backend, and one clear line when it is not the module (the
	# console's S60ember line is checked by the suite)
	if [ -d /sys/module/ember ]; then
		fig "backend=module"
		log_has 'module backend' && pass backend_module || fail backend_module "$(log | grep backend)"
	else
		fig "backend=ebpf using_ebpf_lines=$(log | grep -c 'using eBPF')"
	fi
	# a profile the receiver got is a real one: samples, symbolized frames
	f=$(ls /run/sink/*.otlp 2>/dev/null | tail -n 1)
	if [ -n "$f" ] && /usr/bin/ember decode "$f" >/tmp/decode.txt 2>&1 &&
		grep -q ' [1-9][0-9]* samples' /tmp/decode.txt; then
		pass profile_decodes
	else
		fail profile_decodes "$(head -n 5 /tmp/decode.txt 2>/dev/null)"
	fi
	[ "$(local_files)" -ge 1 ] && pass local_profiles || fail local_profiles "none in /data/ember/profiles"

	# ---- figures at 19 Hz: RSS and CPU over 30 s, kernel memory
	A=$(agent)
	if [ -n "$A" ]; then
		t0=$(awk '{ print $14 + $15 }' /proc/"$A"/stat)
		u0=$(uptime_s)
		sleep 30
		t1=$(awk '{ print $14 + $15 }' /proc/"$A"/stat)
		u1=$(uptime_s)
		rss=$(awk '/VmRSS/ { print $2 }' /proc/"$A"/status)
		hwm=$(awk '/VmHWM/ { print $2 }' /proc/"$A"/status)
		cpu=$(awk -v a="$t0" -v b="$t1" -v c="$u0" -v d="$u1" -v hz=100 \
			'BEGIN { printf "%.2f", (b - a) / hz / (d - c) * 100 }')
		fig "agent_rss_kib=$rss"
		fig "agent_rss_peak_kib=$hwm"
		fig "agent_cpu_percent=$cpu"
		[ "$rss" -le 16384 ] && pass rss_16mib || fail rss_16mib "VmRSS $rss KiB"
	else
		fail figures "no agent process"
	fi
	fig "mem_available_kib=$(awk '/MemAvailable/ { print $2 }' /proc/meminfo)"
	/usr/bin/ember status >/tmp/status.txt 2>&1
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
	/etc/init.d/S50otlp_sink stop
	c0=$(sink_count)
	l0=$(ls /data/ember/profiles | tail -n 1)
	sleep 15
	A2=$(agent)
	[ -n "$A2" ] && [ "$A2" = "$A" ] && pass receiver_down_survives ||
		fail receiver_down_survives "agent $A is now '$A2'"
	[ "$(ls /data/ember/profiles | tail -n 1)" != "$l0" ] && pass receiver_down_local ||
		fail receiver_down_local "no new local profile while the receiver was down"
	/etc/init.d/S50otlp_sink start
	# /run/sink is kept, so the receiver's count goes on
	if wait_for 60 count_ge $((c0 + 3)); then
		pass receiver_back_delivers
	else
		fail receiver_back_delivers "count $c0 -> $(sink_count) in 60 s"
	fi

	# ---- the agent killed: the supervisor starts it again
	A=$(agent)
	kill -KILL "$A"
	if wait_for 20 sh -c "[ -s /run/ember/ember.pid ] && grep -q 'restarting' /run/ember/ember.log"; then
		pass agent_restarted
	else
		fail agent_restarted "$(log | tail -n 3)"
	fi
	c0=$(sink_count)
	wait_for 40 count_gt "$c0" && pass agent_restarted_exports || fail agent_restarted_exports "count stayed $c0"

	# ---- a full data partition: ember makes room from its own oldest
	# profiles; with none of its own left, it says so, and keeps exporting
	dd if=/dev/zero of=/data/filler bs=64k 2>/dev/null
	sleep 12
	n=$(local_files)
	[ "$n" -ge 1 ] && pass full_disk_makes_room || fail full_disk_makes_room "no local profile left"
	rm -f /data/ember/profiles/*.otlp
	# full for good: ext4's delayed allocation gives blocks back after
	# writeback, so fill, sync and fill again
	for i in 2 3 4; do
		dd if=/dev/zero of=/data/filler$i bs=1k 2>/dev/null
		sync
	done
	c0=$(sink_count)
	if wait_for 30 log_has 'No space left on device; [0-9]* profiles\{0,1\} not kept locally so far (still exported)'; then
		pass full_disk_said
	else
		fail full_disk_said "$(log | tail -n 3)"
	fi
	if wait_for 15 count_gt "$c0"; then
		pass full_disk_still_exported
	else
		fail full_disk_still_exported "count stayed $c0"
	fi
	rm -f /data/filler*
	[ -n "$(agent)" ] && pass full_disk_survives || fail full_disk_survives "agent gone"

	# ---- a read-only /var: a local directory there is refused at start,
	# saying what to do
	/usr/bin/ember run --local-dir /var/lib/ember/profiles --endpoint http://127.0.0.1:4318 \
		>/tmp/rovar.txt 2>&1
	rc=$?
	sed 's/^/#   /' /tmp/rovar.txt
	[ "$rc" = 2 ] && grep -q 'Read-only file system' /tmp/rovar.txt && grep -q 'writable place' /tmp/rovar.txt &&
		pass readonly_var_local_dir || fail readonly_var_local_dir "exit $rc"

	# the shutdown (rcK: ember stopped, its last profile kept, the module
	# unloaded, /data unmounted) is on the console: the suite checks it
	echo "# local profiles before the reboot: $(local_files)"
}

phase2() {
	real_boot _2
	if wait_for 60 log_has 'files there from before'; then
		pass reboot_boots_again
		n=$(log | sed -n 's/.*; \([0-9]*\) files there from before).*/\1/p' | head -n 1)
		fig "local_files_found_at_boot_2=$n"
		[ -n "$n" ] && [ "$n" -ge 1 ] && pass reboot_keeps_local ||
			fail reboot_keeps_local "$(log | grep 'files there from before')"
	else
		fail reboot_boots_again "$(log | tail -n 5)"
	fi
	wait_for 40 count_ge 1 && pass reboot_exports || fail reboot_exports "nothing exported after the reboot"
	echo "# ember's log:"
	log | sed 's/^/#   /'
}

phase3() {
	real_boot _3
	sig=/sys/module/module/parameters/sig_enforce
	if [ "$(cat $sig 2>/dev/null)" != Y ]; then
		fail refused_module_boot "module.sig_enforce is not set ($(cat /proc/cmdline))"
		return
	fi
	if ! wait_for 60 log_has 'ember run: '; then
		fail refused_module_boot "$(log | tail -n 5)"
		return
	fi
	echo "# ember's log:"
	log | sed 's/^/#   /'
	[ -d /sys/module/ember ] && fail refused_module_not_loaded "ember.ko loaded although unsigned" ||
		pass refused_module_not_loaded
	[ "$(log | grep -c 'using eBPF')" = 1 ] && pass refused_module_ebpf_fallback_said ||
		fail refused_module_ebpf_fallback_said "$(log | head -n 2)"
	if wait_for 60 count_ge 1; then
		pass refused_module_ebpf_exports
	else
		fail refused_module_ebpf_exports "$(log | tail -n 3)"
	fi
	# the eBPF maps under the image's budget (22.4 MiB at full size)
	/usr/bin/ember status >/tmp/status3.txt 2>&1
	sed -n '/maps:/p' /tmp/status3.txt | sed 's/^/#   /'
	maps=$(sed -n 's/.*maps: [0-9]*, \([0-9.]*\) MiB of kernel memory.*/\1/p' /tmp/status3.txt | head -n 1)
	fig "bpf_maps_mib=$maps"
	[ -n "$maps" ] && awk -v m="$maps" 'BEGIN { exit !(m <= 8) }' && pass kernel_mem_8mib_ebpf ||
		fail kernel_mem_8mib_ebpf "eBPF maps '$maps' MiB"
	A=$(agent)
	[ -n "$A" ] && fig "agent_rss_kib_ebpf=$(awk '/VmRSS/ { print $2 }' /proc/"$A"/status)"
}

cd /
echo "image-test: phase $PHASE at $(uptime_s) s of uptime"
case $PHASE in
1) phase1 ;;
2) phase2 ;;
3) phase3 ;;
*) fail phase "unknown phase '$PHASE'" ;;
esac 2>&1 | tee $R/out.txt
echo "image-test: phase $PHASE done" | tee -a $R/out.txt
# the results back on the test disk (a tar, as it came), then a real reboot
dmesg >$R/dmesg.txt
(cd $R && tar -cf /tmp/ember-test-results.tar .)
dd if=/tmp/ember-test-results.tar of="$EMBER_TEST_DISK" bs=64k conv=fsync 2>/dev/null
sync
echo "image-test: results on $EMBER_TEST_DISK; rebooting"
reboot
