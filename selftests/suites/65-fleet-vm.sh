#!/usr/bin/env bash
# 65-fleet-vm: the fleet proof (issue 17), selftests/fleet/run.sh: ember's
# .debs installed, booted, upgraded (kernel and packages) and purged on a
# Debian 12 VM with systemd as PID 1; the unit's sandbox proven at run
# time; DKMS signing; the eBPF fallback with modules disabled. One line per
# check (see selftests/fleet/guest/step.sh and docs/packaging.md).
#
# Opt-in: EMBER_FLEET=1. Measured on this 2-core machine (other builds
# running): 23 min with the image cached (five TCG boots; in the VM three
# DKMS builds of 3-5 min and a kernel install of 7 min), plus 1.5 min to
# build the image (5 min without the package cache). CI must stay under 60
# min and takes ~30 already, so a new suite gets ~15 min at most: this one
# does not fit. Without EMBER_FLEET=1 it prints one SKIP, in CI too (a
# deliberate opt-out, not a missing prerequisite). The last run's output is
# kept in docs/fleet-test-last-run.txt.
set -uo pipefail
cd "$(dirname "$0")/../.."

if [ "${EMBER_FLEET:-}" != 1 ]; then
	echo "SKIP: fleet-vm: takes ~23 min (5 VM boots, 3 DKMS builds under TCG): run EMBER_FLEET=1 SUITES=65-fleet-vm selftests/run.sh, or selftests/fleet/run.sh"
	exit 0
fi
# its FAIL lines are the verdict; a non-zero exit without one (a crash)
# counts as a failure in selftests/run.sh
exec selftests/fleet/run.sh
