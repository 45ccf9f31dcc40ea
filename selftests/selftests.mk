# selftests/selftests.mk: test kernels and the VM harness.
#
#   make kernels        fetch Debian's 5.10/6.1/6.12 test kernels into .cache/
#   make vm-selftest    the VM harness's own suite (29-vm-harness)
#   make kmod-vm        ember.ko on every test kernel in qemu (30-kmod-vm)
# See selftests/vm/README.md.

.PHONY: kernels vm-selftest kmod-vm
kernels:
	$(Q)$(TOP)/scripts/fetch-kernels.sh

vm-selftest:
	$(Q)SUITES="29-vm-harness" $(TOP)/selftests/run.sh

kmod-vm:
	$(Q)SUITES="30-kmod-vm" $(TOP)/selftests/run.sh
