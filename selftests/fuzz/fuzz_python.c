// SPDX-License-Identifier: GPL-2.0-only
/*
 * CPython detection and naming input (agent/python/): the first byte picks
 *  0: a location table (co_linetable) with its first line and a code-unit
 *     index, through py_line_of();
 *  1: an ELF file as the interpreter (py_detect_file(): dynsym, PT_LOAD
 *     reads, RELATIVE relocations, tp_members, _Py_DebugOffsets, the code
 *     decoders, the .cold vote) and as the C library (pthread_getspecific).
 * Seeds: real 3.11 tables and a fake libpython3.11.so
 * (selftests/fuzz/corpus/python/).
 */
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "python/python.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct py_target t;
	char err[256];
	int64_t off;
	int fd;

	if (size < 8)
		return 0;
	if (data[0] == 0) {
		int32_t first;
		uint16_t idx;

		memcpy(&first, data + 1, 4);
		memcpy(&idx, data + 5, 2);
		(void)py_line_of(data + 8, size - 8, first, idx);
		return 0;
	}
	fd = memfd_create("fuzz", MFD_CLOEXEC);
	if (fd < 0)
		return 0;
	if (write(fd, data + 1, size - 1) == (ssize_t)(size - 1)) {
		(void)py_detect_file(fd, "libpython3.11.so.1.0", 0x7f0000000000ULL,
				     fd, &t, err, sizeof(err));
		(void)py_detect_file(fd, "python3.13", 0, -1, &t, err, sizeof(err));
		(void)py_glibc_tsd_offset(fd, &off, err, sizeof(err));
	}
	close(fd);
	return 0;
}
