#!/bin/sh
# Guest half of the harness self-test (selftests/suites/29-vm-harness.sh):
# checks what run-vm.sh promises the guest. One PASS/FAIL line per check.
# EMBER_SELFTEST_MODE: "normal" (default) or "locked" (booted with
# --append "module.sig_enforce=1 lockdown=integrity").
K="vm[$EMBER_VM_KERNEL]"
ok() { echo "PASS: $K: $1"; }
ko() { echo "FAIL: $K: $1: $2"; }
check() {
	name=$1
	shift
	if out=$("$@" 2>&1); then ok "$name"; else ko "$name" "'$*' failed: $(echo "$out" | tail -n 1)"; fi
}
mode=${EMBER_SELFTEST_MODE:-normal}
[ "$mode" = normal ] || K="$K: $mode"
hello=/payload/selftest/ember_vm_hello.ko

if [ "$mode" = locked ]; then
	check "sig_enforce on the command line" grep -qw module.sig_enforce=1 /proc/cmdline
	check "sig_enforce active" grep -qx Y /sys/module/module/parameters/sig_enforce
	mount -t securityfs securityfs /sys/kernel/security 2>/dev/null
	check "lockdown integrity active" grep -q '\[integrity\]' /sys/kernel/security/lockdown
	check "unsigned module refused" sh -c "! insmod $hello"
	check "module not loaded" sh -c '! grep -q "^ember_vm_hello " /proc/modules'
	exit 0
fi

check "root" test "$(id -u)" = 0
check "proc" test -r /proc/self/status
check "devtmpfs" test -c /dev/null
check "tracefs" test -e /sys/kernel/tracing/events/sched/sched_switch/id
check "debugfs" grep -q ' /sys/kernel/debug debugfs ' /proc/mounts
check "cgroup2" test -e /sys/fs/cgroup/cgroup.controllers
check "cgroup2 child" sh -c 'mkdir /sys/fs/cgroup/ember-selftest && echo $$ >/sys/fs/cgroup/ember-selftest/cgroup.procs'
check "bpffs" grep -q ' /sys/fs/bpf bpf ' /proc/mounts
check "tmp writable" sh -c 'echo x >/tmp/x && test "$(cat /tmp/x)" = x'
check "loopback tcp" sh -c 'nc -l -p 4567 -w 10 >/tmp/nc.out & sleep 1; echo hello | nc -w 2 127.0.0.1 4567; wait; grep -q hello /tmp/nc.out'
check "kernel release" test "$(uname -r)" = "$EMBER_VM_RELEASE"
check "non-root user" test "$(as-user id -u):$(as-user id -g)" = 1000:1000
check "as-user keeps arguments" test "$(as-user echo "a b'c" -u)" = "a b'c -u"
check "non-root denied root files" sh -c '! as-user touch /root/x'
check "non-root owns its home" as-user touch /home/user/x
check "dynamic ELF with ldd closure" /payload/selftest/bin/true-elf
if [ -f "$hello" ]; then
	check "module loads" insmod "$hello"
	check "module listed" grep -q '^ember_vm_hello ' /proc/modules
	check "module unloads" rmmod ember_vm_hello
fi
if [ -n "$EMBER_MODULE" ]; then check "--module file present" test -f "$EMBER_MODULE"; fi
# /out collection: text, a subdirectory and binary data with its checksum.
echo "selftest from $(uname -r)" >/out/hello.txt
mkdir -p /out/sub && head -c 200000 /dev/urandom >/out/sub/random.bin
sha256sum /out/sub/random.bin | cut -d' ' -f1 >/out/random.sha256
exit 0
