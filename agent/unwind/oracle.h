/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The unwinding oracle: unwinds a copy of a thread's user stack with
 * elfutils' libdwfl (what perf --call-graph dwarf does), so a test can
 * compare it frame by frame with what the backend's own unwinder found
 * for the same sample. Test mode only: it is slow and reads the process's
 * files through /proc/PID.
 */
#ifndef EMBER_ORACLE_H
#define EMBER_ORACLE_H

#include <stddef.h>
#include <stdint.h>
#include <linux/types.h>

/*
 * The sample's registers in the DWARF order of the agent's own machine
 * (the oracle unwinds processes of the machine it runs on): x86_64 0..16
 * are rax rdx rcx rbx rsi rdi rbp rsp r8..r15, then the return address
 * column (rip); aarch64 0..31 are x0..x30 and sp, then the pc (32).
 */
#if defined(__aarch64__)
#define ORACLE_NR_REGS	33
#define ORACLE_REG_FP	29
#define ORACLE_REG_SP	31
#define ORACLE_REG_PC	32
#else
#define ORACLE_NR_REGS	17
#define ORACLE_REG_FP	6
#define ORACLE_REG_SP	7
#define ORACLE_REG_PC	16
#endif

struct oracle_stack {
	uint32_t pid, tid;
	uint64_t regs[ORACLE_NR_REGS];
	const uint8_t *stack;		/* a copy of memory from regs[SP] up */
	size_t stack_len;
	/*
	 * aarch64: the bits of a return address that hold its pointer
	 * authentication code (the kernel's mask, 0: none), stripped from
	 * x30 and from every word read off the copy before libdwfl uses it
	 */
	uint64_t pac_mask;
};

struct oracle;

/*
 * Where a process had its files, without /proc/PID/maps: maps text in its
 * format (malloc'd, the oracle frees it) and an O_PATH handle on its root
 * directory (the oracle closes it), or -1 when there is none
 * (stack_replay.h: the exec snapshots). Asked first, since it is cheaper
 * than /proc; a PC it does not cover makes the oracle read /proc.
 */
typedef int (*oracle_gone_fn)(void *ctx, uint32_t pid, char **maps,
			      size_t *len, int *root_fd);

/*
 * max_procs: libdwfl sessions kept at once (0: the most, 64), each with
 * its modules' files and CFI: several MB a process once debug files are
 * read, so a long-running user keeps few.
 */
struct oracle *oracle_new(unsigned int max_procs);
/*
 * Unwind with the mapped files' own CFI (.eh_frame, and .debug_frame
 * where the file has it), never a separate debug file: those are the
 * memory (libc6-dbg's DWARF, mapped and parsed per session) and the
 * backends' tables come from the same files.
 */
void oracle_no_debuginfo(struct oracle *o);
void oracle_set_gone_fn(struct oracle *o, oracle_gone_fn fn, void *ctx);
/*
 * Unwind s: up to max PCs, leaf first, into ips (the first is the exact
 * PC, the others return addresses, as in ember samples). Returns how many,
 * or -1 when libdwfl could not start (or, on aarch64, when no CFI covers
 * the interrupted PC: libdwfl's walk of such a frame is a guess). *complete says whether the walk ended
 * at the outermost frame rather than at the end of the copy.
 */
int oracle_unwind(struct oracle *o, const struct oracle_stack *s,
		  uint64_t *ips, int max, int *complete);
/*
 * An EMBER_REC_USER_STACK's EMBER_NR_UREGS register slots (the uapi's
 * order) -> regs[ORACLE_NR_REGS]; *pac gets the PAC mask the record
 * carries (aarch64), left as it is when it carries none.
 */
void oracle_regs_from_record(const __u64 *slot, uint64_t *regs,
			     uint64_t *pac);
/* The process is gone or exec'd: forget its modules. */
void oracle_forget(struct oracle *o, uint32_t pid);
void oracle_free(struct oracle *o);

#endif
