#!/bin/busybox sh
# /init of the test VM (selftests/vm/run-vm.sh copies it into the
# initramfs). Sets up a minimal but real system, runs /etc/ember-cmd as
# root, reports its exit status and the kernel log, ships /out back on
# ttyS1 and powers off. Markers are parsed by run-vm.sh: keep them in sync.
/bin/busybox --install -s
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mkdir -p /dev/pts /dev/shm
mount -t devpts devpts /dev/pts
mount -t tmpfs -o mode=1777 tmpfs /dev/shm
mount -t tmpfs -o mode=1777 tmpfs /tmp
mount -t tmpfs -o mode=755 tmpfs /run
mount -t tracefs tracefs /sys/kernel/tracing
mount -t debugfs debugfs /sys/kernel/debug
mount -t cgroup2 cgroup2 /sys/fs/cgroup
mount -t bpf bpf /sys/fs/bpf 2>/dev/null
chmod 1777 /out
chown -R 1000:1000 /home/user
hostname -F /etc/hostname
ip link set lo up
echo "EMBER-VM-UP: uptime $(cut -d' ' -f1 /proc/uptime)"

. /etc/ember-env
while read -r ko; do
	[ -n "$ko" ] || continue
	insmod "$ko" || echo "EMBER-VM: insmod $ko failed"
done </etc/ember-kmods

# Keep the console for the command's output: kernel messages still go to
# the log buffer (dumped below) but only emergencies interleave with it.
dmesg -n 1
echo "EMBER-VM-CMD-BEGIN"
cd /
sh /etc/ember-cmd </dev/null >/dev/console 2>&1
rc=$?
echo "EMBER-VM-EXIT: $rc"

# Kernel log for the harness to scan (WARNING, BUG:, Oops...).
echo "EMBER-VM-DMESG-BEGIN"
dmesg
echo "EMBER-VM-DMESG-END"

# /out: a raw tar on the virtio disk when the harness gave one (fast), else
# base64 between markers on the second serial port (never mixed with
# kernel messages, but slow).
if [ "$EMBER_VM_OUT" = 1 ]; then
	if [ -b /dev/vda ]; then
		tar -C /out -cf /dev/vda . && sync
		echo "EMBER-VM-OUT-DISK: $?"
	else
		echo "EMBER-VM: no /dev/vda, sending /out over ttyS1"
		stty -F /dev/ttyS1 raw -echo 2>/dev/null
		{
			echo "EMBER-VM-OUT-BEGIN"
			tar -C /out -czf - . | base64
			echo "EMBER-VM-OUT-END"
		} >/dev/ttyS1
	fi
fi
sync
poweroff -f
