/* SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR MIT */
/*
 * ember: the record format, ring layout and control protocol shared by the
 * kernel module (kmod/), the eBPF backend (bpf/) and the agent (agent/).
 *
 * This is the only definition of the format. Change it only by appending
 * record types, attributes and flags; bump EMBER_ABI_VERSION when the layout
 * of an existing record changes.
 */
#ifndef _UAPI_EMBER_H
#define _UAPI_EMBER_H

#ifndef __VMLINUX_H__		/* BPF programs get the types from vmlinux.h */
#include <linux/types.h>
#endif

#define EMBER_ABI_VERSION	1
#define EMBER_DEVICE_NAME	"ember"		/* /dev/ember */
#define EMBER_GENL_NAME		"ember"
#define EMBER_GENL_VERSION	1

#define EMBER_COMM_LEN		16
#define EMBER_DEFAULT_FRAMES	127	/* per stack kind (kernel, user) */
#define EMBER_MAX_FRAMES	512
#define EMBER_MAX_FILTER_PIDS	1024
#define EMBER_MIN_FREQ		1
#define EMBER_MAX_FREQ		10000
#define EMBER_DEFAULT_FREQ	99

/*
 * Records
 *
 * Every record starts with struct ember_rec_header. Records are 8-byte
 * aligned and hdr.size (header included) is a multiple of 8, so a reader
 * can skip any type it does not know. Timestamps are CLOCK_MONOTONIC
 * nanoseconds (ktime_get_mono_fast_ns() in the module, bpf_ktime_get_ns()
 * in eBPF), comparable with clock_gettime(CLOCK_MONOTONIC) in user space.
 * pid is the thread-group id and tid the thread id, both as seen from the
 * initial pid namespace.
 */
enum ember_rec_type {
	EMBER_REC_PAD		= 0,	/* filler up to the end of a ring */
	EMBER_REC_SAMPLE	= 1,	/* on-CPU stack sample: ember_sample */
	EMBER_REC_OFFCPU	= 2,	/* off-CPU interval: ember_sample */
	EMBER_REC_EXEC		= 3,	/* ember_exec */
	EMBER_REC_EXIT		= 4,	/* ember_exit (whole process) */
	EMBER_REC_LOST		= 5,	/* ember_lost, for backends without a ctrl page */
	EMBER_REC_UNWIND_MISS	= 6,	/* ember_unwind_miss: a PC with no table */
	EMBER_REC_USER_STACK	= 7,	/* ember_user_stack (EMBER_F_STACK_COPY) */
	EMBER_REC_FAULT		= 8,	/* ember_sample: sampled page faults */
	EMBER_REC_ALLOC		= 9,	/* ember_sample + block address: an allocation */
	EMBER_REC_FREE		= 10,	/* ember_free: a sampled block was freed */
	EMBER_REC_LOCK		= 11,	/* ember_sample + ember_lock_wait */
	EMBER_REC_LOCK_WAKER	= 12,	/* ember_sample + ember_lock_waker */
	EMBER_REC_MMAP		= 13,	/* ember_mmap (EMBER_CAP_MMAP) */
	__EMBER_REC_MAX,
};

struct ember_rec_header {
	__u16 type;		/* enum ember_rec_type */
	__u16 __reserved;
	__u32 size;		/* bytes, header included, multiple of 8 */
};

/* ember_sample.flags */
#define EMBER_SF_KERNEL_TRUNC	(1U << 0)	/* kernel stack hit the frame limit */
#define EMBER_SF_USER_TRUNC	(1U << 1)	/* user stack hit the frame limit */
#define EMBER_SF_USER_FAULT	(1U << 2)	/* user walk stopped on an unreadable/bad frame */
#define EMBER_SF_IN_KERNEL	(1U << 3)	/* interrupted/left CPU in kernel mode */
#define EMBER_SF_KTHREAD	(1U << 4)	/* kernel thread: no user stack */
#define EMBER_SF_COMPAT		(1U << 5)	/* 32-bit user task */
#define EMBER_SF_IDLE		(1U << 6)	/* the idle task */
#define EMBER_SF_USER_CUT	(1U << 7)	/* user stack stops short of its
						 * outermost frame: no rule, bad
						 * frame, or a return address
						 * outside executable mappings */
#define EMBER_SF_USER_CFI	(1U << 8)	/* unwound with CFI tables */
#define EMBER_SF_USER_FP	(1U << 9)	/* >= 1 frame by frame pointer
						 * where no table covered the PC */
#define EMBER_SF_USER_COMPLETE	(1U << 10)	/* reached the outermost frame
						 * (CFI says the return address
						 * is undefined: _start, clone) */
#define EMBER_SF_ALLOC_UNTRACKED (1U << 11)	/* EMBER_REC_ALLOC whose block
						 * could not be followed to its
						 * free (the table was full) */
#define EMBER_SF_PYTHON		(1U << 12)	/* the user run holds Python
						 * frames (EMBER_IP_PY) */
#define EMBER_SF_USER_COPIED	(1U << 13)	/* an EMBER_REC_USER_STACK of
						 * this sample came before it
						 * (EMBER_A_STACK_COPY) */

/* ember_sample.state for EMBER_REC_OFFCPU: how the thread left the CPU */
enum ember_offcpu_state {
	EMBER_STATE_NONE		= 0,
	EMBER_STATE_RUNNABLE		= 1,	/* preempted while runnable */
	EMBER_STATE_SLEEPING		= 2,	/* TASK_INTERRUPTIBLE */
	EMBER_STATE_UNINTERRUPTIBLE	= 3,	/* TASK_UNINTERRUPTIBLE (I/O, D) */
	EMBER_STATE_OTHER		= 4,	/* stopped, traced, ... */
};

/*
 * EMBER_REC_SAMPLE and EMBER_REC_OFFCPU. ips[] holds nr_kernel kernel
 * addresses followed by nr_user user addresses, each run leaf first. Return
 * addresses are stored as read from the stack (callers subtract 1 for
 * symbolization); the first frame of each run is the exact instruction
 * pointer.
 */
/*
 * ember_sample.periods of an EMBER_REC_SAMPLE on the cpu-clock: the
 * sampling periods since the previous firing of its CPU's event, when
 * that is from 2 to EMBER_SAMPLE_MAX_PERIODS; weight_ns holds them all.
 * A timer that fires late (a VM's vCPU descheduled by its host, an
 * emulator translating code, interrupts held off, a sample the kernel
 * did not hand to the program) fires once for the periods it missed:
 * counted as one sample, the time the task ran meanwhile would go
 * missing from the profile, and from the parts of a program that run
 * where that happens most (start-up under emulation), skewing shares.
 * Counted only while the task the firing interrupts ran throughout (the
 * one the previous firing interrupted, not switched out since: a
 * descheduled vCPU runs nothing else), since an idle CPU may take no
 * firing at all (include/ember_clock.h). 0 or 1: one period (older
 * backends write 0; a gap longer than the maximum is not a late timer).
 */
#define EMBER_SAMPLE_MAX_PERIODS	64

struct ember_sample {
	struct ember_rec_header hdr;
	__u64 time_ns;		/* on-CPU: sample time; off-CPU: when it ran again */
	__u64 weight_ns;	/* on-CPU: period x periods; off-CPU: time off CPU */
	__u64 cgroup_id;	/* cgroup v2 id (inode number of its directory) */
	__u32 pid;
	__u32 tid;
	__u32 cpu;
	__u16 flags;		/* EMBER_SF_* */
	__u8 state;		/* enum ember_offcpu_state (off-CPU only) */
	__u8 periods;		/* EMBER_REC_SAMPLE: see below; else 0 */
	__u16 nr_kernel;
	__u16 nr_user;
	__u32 __reserved2;
	char comm[EMBER_COMM_LEN];
	__u64 ips[];
};

/*
 * Memory events reuse struct ember_sample; weight_ns then holds bytes:
 *  - EMBER_REC_FAULT: one in EMBER_A_FAULT_PERIOD page faults, taken at
 *    the faulting instruction; weight = faults it stands for x page size.
 *  - EMBER_REC_ALLOC: a sampled allocation (preload/ember_alloc.c's probe,
 *    or a uprobe on the allocator); weight = the bytes it stands for. Two
 *    __u64 follow ips[nr_kernel + nr_user]: the block's address (0 when
 *    not known), so a later EMBER_REC_FREE can be matched, and the size
 *    asked for (weight / size = the allocations it stands for); hdr.size
 *    includes them.
 */
#define EMBER_ALLOC_ADDR(s)	((s)->ips[(s)->nr_kernel + (s)->nr_user])
#define EMBER_ALLOC_SIZE(s)	((s)->ips[(s)->nr_kernel + (s)->nr_user + 1])

/*
 * Lock contention (EMBER_EV_LOCK).
 *
 * EMBER_REC_LOCK: one contended wait that lasted at least LOCK_MIN_NS,
 * written by the waiter when the wait ends. It is an ember_sample (the
 * waiter's stack at the end of the wait: its user stack is the call site
 * that waited; weight_ns = the wait in ns, time_ns = its end), followed by
 * struct ember_lock_wait after ips[nr_kernel + nr_user] (hdr.size
 * includes it). The waits:
 *  - EMBER_LOCK_FUTEX: futex(2) FUTEX_WAIT, FUTEX_WAIT_BITSET and
 *    FUTEX_WAIT_REQUEUE_PI; addr = uaddr (for WAIT_REQUEUE_PI, the
 *    condition variable's futex);
 *  - EMBER_LOCK_FUTEX_PI: FUTEX_LOCK_PI and FUTEX_LOCK_PI2; addr = uaddr;
 *  - EMBER_LOCK_FUTEX_WAITV: futex_waitv(2); addr = the first waiter's;
 *  - EMBER_LOCK_KERNEL: lock:contention_begin .. contention_end (5.19+);
 *    addr = the kernel lock, flags say which kind (EMBER_LOCK_F_SPIN ...).
 * A wait from the wait syscall's entry to its exit is what it cost the
 * thread; a futex wait that returned at once (the value had changed) is
 * shorter than any sane LOCK_MIN_NS and so never recorded.
 *
 * EMBER_REC_LOCK_WAKER: the stack of the thread that woke a waiter whose
 * wait had lasted LOCK_MIN_NS by then (sched_waking, in the waker's
 * context: for a futex, the unlocking thread inside FUTEX_WAKE; for a
 * kernel mutex or rwsem, the unlocking task). An ember_sample of the
 * waker (pid, tid, comm, stacks are the waker's; weight_ns = the wait so
 * far, time_ns = now) followed by struct ember_lock_waker. At most one
 * per wait, written before the waiter's EMBER_REC_LOCK, but possibly in
 * another CPU's ring: a reader joins them on (waiter_tid, start_ns) and
 * must tolerate either order. The LOCK record's waker_tid says one was
 * written; a wait ended by its timeout or a signal keeps no waker
 * (EMBER_LOCK_F_TIMEOUT, EMBER_LOCK_F_INTR) and its WAKER, if any, is an
 * orphan the reader drops.
 */
enum ember_lock_kind {
	EMBER_LOCK_NONE		= 0,
	EMBER_LOCK_FUTEX	= 1,
	EMBER_LOCK_FUTEX_PI	= 2,
	EMBER_LOCK_FUTEX_WAITV	= 3,
	EMBER_LOCK_KERNEL	= 4,
};

/* ember_lock_wait.flags; the low six are the kernel's LCB_F_* values */
#define EMBER_LOCK_F_SPIN	(1U << 0)	/* spinning lock (spinlock_t, rwlock_t) */
#define EMBER_LOCK_F_READ	(1U << 1)	/* reader side of an rw lock */
#define EMBER_LOCK_F_WRITE	(1U << 2)	/* writer side */
#define EMBER_LOCK_F_RT		(1U << 3)	/* rt_mutex (and PREEMPT_RT locks) */
#define EMBER_LOCK_F_PERCPU	(1U << 4)	/* percpu_rw_semaphore */
#define EMBER_LOCK_F_MUTEX	(1U << 5)	/* struct mutex */
#define EMBER_LOCK_F_KERNEL_MASK 0x3fU
#define EMBER_LOCK_F_MMAP_LOCK	(1U << 8)	/* addr is the waiter's mm->mmap_lock */
#define EMBER_LOCK_F_TIMEOUT	(1U << 9)	/* the wait ended by its timeout */
#define EMBER_LOCK_F_INTR	(1U << 10)	/* ... by a signal */

struct ember_lock_wait {
	__u64 addr;		/* futex uaddr, or the kernel lock's address */
	__u64 start_ns;		/* when the wait began (the waker's key) */
	__u32 waker_tid;	/* tid of the EMBER_REC_LOCK_WAKER's thread,
				 * 0 when none was written */
	__u8 kind;		/* enum ember_lock_kind */
	__u8 futex_op;		/* FUTEX_* command (op & FUTEX_CMD_MASK) */
	__u16 flags;		/* EMBER_LOCK_F_* */
};
#define EMBER_LOCK_WAIT(s)	((const struct ember_lock_wait *)	\
				 &(s)->ips[(s)->nr_kernel + (s)->nr_user])

struct ember_lock_waker {
	__u64 start_ns;		/* the wait's ember_lock_wait.start_ns */
	__u64 addr;		/* the wait's ember_lock_wait.addr */
	__u32 waiter_pid;
	__u32 waiter_tid;
};
#define EMBER_LOCK_WAKER(s)	((const struct ember_lock_waker *)	\
				 &(s)->ips[(s)->nr_kernel + (s)->nr_user])

/* The default LOCK_MIN_NS (the agent's --lock-min). */
#define EMBER_DEFAULT_LOCK_MIN_NS	10000
#define EMBER_MAX_LOCK_MIN_NS		60000000000ULL

/* EMBER_REC_FREE: a block reported by an EMBER_REC_ALLOC was freed */
struct ember_free {
	struct ember_rec_header hdr;
	__u64 time_ns;
	__u32 pid;
	__u32 tid;
	__u64 addr;
};

/* EMBER_REC_EXEC: a process called execve (after the new image is loaded) */
struct ember_exec {
	struct ember_rec_header hdr;
	__u64 time_ns;
	__u32 pid;
	__u32 tid;
	char comm[EMBER_COMM_LEN];
	__u32 filename_len;	/* bytes in filename[], NUL included */
	__u32 __reserved;
	char filename[];	/* NUL-terminated, zero-padded to 8 bytes */
};

/*
 * EMBER_REC_MMAP (EMBER_CAP_MMAP, with EMBER_EV_LIFECYCLE): an executable
 * mapping was made (mmap, an mprotect that adds exec, and the executable's
 * and the loader's mappings made by exec itself, which come before the
 * EXEC record), the way perf's MMAP2 records tell it, so the agent needs
 * no /proc/PID/maps for a process that exec'd while it ran. Only
 * executable mappings: file-backed, anonymous code (EMBER_MMAP_F_ANON,
 * JITs) and, where the hook sees it, the vDSO (EMBER_MMAP_F_VDSO); every
 * record also says where the address space's vDSO is once it has one
 * (exec maps it after the executable and the loader). A record over an older range
 * replaces it; munmap is not told (a stale range stays until a newer
 * mapping covers it). mm_gen tells address spaces apart (a keyed hash of
 * the mm, random per session): a pid's first record with a new mm_gen
 * starts its mappings again (its exec). path: as the kernel names the
 * file for the process (d_path), or with EMBER_MMAP_F_MNT_PATH only
 * within its mount (the eBPF backend when the mount walk was cut).
 */
#define EMBER_MMAP_PATH_MAX	4096	/* longer paths are cut (NUL-ended) */
#define EMBER_MMAP_F_ANON	(1U << 0)	/* no file: JIT code; path "" */
#define EMBER_MMAP_F_VDSO	(1U << 1)	/* the vDSO; path "[vdso]" */
#define EMBER_MMAP_F_MNT_PATH	(1U << 2)	/* path is within its mount */
#define EMBER_MMAP_F_CUT	(1U << 3)	/* path cut (too long or deep) */
#define EMBER_MMAP_F_DELETED	(1U << 4)	/* the file was unlinked */
#define EMBER_MMAP_PROT_READ	(1U << 0)
#define EMBER_MMAP_PROT_WRITE	(1U << 1)
#define EMBER_MMAP_PROT_EXEC	(1U << 2)
#define EMBER_MMAP_SHARED	(1U << 3)
struct ember_mmap {
	struct ember_rec_header hdr;
	__u64 time_ns;
	__u32 pid;
	__u32 tid;
	__u64 start;
	__u64 len;
	__u64 pgoff;		/* in bytes */
	__u64 ino;
	__u64 cgroup_id;	/* cgroup v2 id of the mapping task */
	__u32 dev_major;	/* the inode's superblock s_dev */
	__u32 dev_minor;
	__u32 prot;		/* EMBER_MMAP_PROT_*, EMBER_MMAP_SHARED */
	__u32 flags;		/* EMBER_MMAP_F_* */
	__u32 mm_gen;
	__u32 path_len;		/* bytes in path[], NUL included */
	__u64 vdso;		/* the address space's vDSO start, 0: none yet */
	char path[];		/* NUL-terminated, zero-padded to 8 bytes */
};

/* EMBER_REC_EXIT: the last thread of a process exited */
struct ember_exit {
	struct ember_rec_header hdr;
	__u64 time_ns;
	__u32 pid;
	__u32 tid;
	char comm[EMBER_COMM_LEN];
	__s32 exit_code;
	__u32 __reserved;
};

/* EMBER_REC_LOST: records the producer had to drop since the last one */
struct ember_lost {
	struct ember_rec_header hdr;
	__u64 time_ns;
	__u64 lost;
	__u32 cpu;
	__u32 __reserved;
};

/*
 * EMBER_REC_UNWIND_MISS: the user unwinder met a PC that no loaded table
 * covers in a process it profiles (the process is not bound yet, or the
 * PC is in a mapping added since: exec, dlopen, a JIT). The agent answers
 * by reading /proc/PID/maps and loading tables and a binding (see "Unwind
 * tables" below). Rate-limited per process by the producer.
 */
struct ember_unwind_miss {
	struct ember_rec_header hdr;
	__u64 time_ns;
	__u32 pid;
	__u32 tid;
	__u64 pc;		/* the uncovered PC (0: process not bound) */
};

/*
 * EMBER_REC_USER_STACK, test mode only (EMBER_F_STACK_COPY): the user
 * registers and a bounded copy of the user stack of the sample record
 * that precedes it in the same ring, so the agent can unwind the same
 * sample independently (agent/unwind/oracle.c) and compare. Nothing is
 * copied for kernel threads, 32-bit tasks or when the user stack is
 * unreadable.
 *
 * Outside test mode, with EMBER_A_STACK_COPY > 0 (EMBER_CAP_STACK_COPY):
 * written only for a sample whose user walk was cut or ran without
 * tables (EMBER_SF_USER_CUT, EMBER_SF_USER_FP, or no EMBER_SF_USER_CFI;
 * never for 32-bit tasks, stacks that start with a uretprobe's lead, or
 * a walk proven whole, EMBER_SF_USER_COMPLETE), that many bytes (stack_len may be less), and BEFORE
 * its sample, which then carries EMBER_SF_USER_COPIED: the agent unwinds
 * the copy once it has tables for the process. Same ring, same tid and
 * time_ns; other CPUs' records may come between in a shared ring.
 */
#define EMBER_STACK_COPY_MAX	16384
#define EMBER_STACK_COPY_UNIT	256	/* EMBER_A_STACK_COPY is a multiple */
#define EMBER_DEFAULT_STACK_COPY 12288
/*
 * regs[]: the stack pointer is regs[EMBER_UREG_SP] and the PC
 * regs[EMBER_UREG_PC] on both architectures.
 * x86_64, DWARF order: rax rdx rcx rbx rsi rdi rbp rsp r8..r15, rip.
 * aarch64 (the registers CFI may need, no argument registers):
 * x19..x25 (0..6), sp (7), x26..x28 (8..10), x29 (11), x30 (12), the PAC
 * mask the producer stripped return addresses with (13; 0: none),
 * 0 (14, 15), pc (16). x30 is as the task left it (not stripped).
 */
#define EMBER_NR_UREGS		17
#define EMBER_UREG_SP		7
#define EMBER_UREG_PC		16
#define EMBER_UREG_A64_X19	0	/* x19..x25 */
#define EMBER_UREG_A64_X26	8	/* x26..x28 */
#define EMBER_UREG_A64_X29	11
#define EMBER_UREG_A64_X30	12
#define EMBER_UREG_A64_PAC_MASK	13
struct ember_user_stack {
	struct ember_rec_header hdr;
	__u64 time_ns;		/* == the sample's */
	__u32 pid;
	__u32 tid;
	__u64 regs[EMBER_NR_UREGS];
	__u32 stack_len;	/* bytes in stack[], from regs[EMBER_UREG_SP] up */
	__u32 __reserved;
	__u8 stack[];		/* zero-padded to 8 bytes */
};

/*
 * Python frames (EMBER_CAP_PYTHON)
 *
 * The agent finds CPython in a process (version, _PyRuntime, where the
 * current thread state lives, struct offsets) and hands the backend a
 * struct ember_py_proc for it (EMBER_CMD_PY_BIND, or the eBPF backend's
 * py_procs map). While walking that process's user stack, a backend that
 * meets a frame whose PC lies in one of eval_start[i]..eval_end[i] (the
 * interpreter loop: _PyEval_EvalFrameDefault and its .cold part) writes,
 * in place of that native frame, the Python frames that activation runs,
 * leaf first, and then goes on with the native walk. So native and Python
 * frames keep their true order: a C extension called from Python sits
 * above (leafward of) its Python caller.
 *
 * Python frames live in the user run of ips[] (they count in nr_user):
 *   EMBER_IP_PY | code	the code object's address (user VA), then
 *   one more slot:	(check << 32) | (instruction pointer - code) in
 *			bytes, 0xffffffff when that is negative or >= 4 GiB
 *   EMBER_IP_PY_CUT | why	the Python chain stopped here (enum
 *			ember_py_cut): what follows (if anything) is native
 * check = EMBER_PY_CHECK(firstlineno, argcount, flags), the code object's
 * co_firstlineno, co_argcount and co_flags (32-bit ints) as read at sample
 * time: the agent reads the code object later and gives a name only when
 * its own check agrees (a freed and reused address never gets an old
 * name). No Python frame is ever made up: a thread state, frame or code
 * object that cannot be read, or a chain that does not end where the
 * activation's entry is expected, ends the walk with EMBER_IP_PY_CUT and
 * EMBER_SF_USER_CUT.
 *
 * One activation of the eval loop runs frames from the thread state's
 * current frame (the first activation met) or where the previous one
 * stopped, through `previous`, to its entry frame:
 *  - EMBER_PY_ENTRY_FLAG (3.11): the frame whose byte at fr_owner equals
 *    entry_value (is_entry == 1) is written, and ends the activation;
 *  - EMBER_PY_ENTRY_SHIM (3.12+): the frame whose byte at fr_owner equals
 *    entry_value (owner == FRAME_OWNED_BY_CSTACK) is the loop's own shim:
 *    it is not written, and ends the activation.
 * The thread state (EMBER_PY_TS_*), read at sample time:
 *  - EMBER_PY_TS_TLS (3.13+: _Py_tss_tstate): *(tp + tstate_off);
 *  - EMBER_PY_TS_TSD (3.11, 3.12 on glibc: pthread_getspecific of the
 *    GIL-state key): key = *(__s32 *)key_addr, 0 <= key < 32, then
 *    *(tp + tstate_off + key * 16);
 * where tp is the thread pointer (x86_64: the FS base; aarch64: TPIDR_EL0)
 * and tstate_off is signed. From the thread state to the newest frame:
 * frame = *(tstate + ts_frame[0]), then, when ts_frame_nr is 2, frame =
 * *(frame + ts_frame[1]) (3.11/3.12: tstate->cframe->current_frame; 3.13:
 * tstate->current_frame). code = *(frame + fr_code) & ~code_tag_mask
 * (3.14's _PyStackRef is tagged).
 *
 * When the native walk stops short of the outermost frame (cut: an
 * unbound library, no rule, a frame-pointer chain that ends; never when
 * it ended complete or truncated) while activations of the chain are
 * left, they are written after it, each after one
 * EMBER_IP_PY_CUT | EMBER_PY_CUT_NATIVE marker (an activation that writes
 * nothing, a 3.12+ shim alone, leaves its marker alone), and the sample
 * gets EMBER_SF_USER_CUT: the Python callers of a sample taken in code
 * not yet bound are kept, and the native frames around each activation
 * are honestly missing. An agent holding the sample's stack copy puts
 * each activation back at its eval-loop frame of the replayed stack.
 *
 * The leaf's eval loop: a sample whose first frame is in the eval loop
 * may catch it in its prologue or epilogue, before it made its frame the
 * thread's current one or after it gave it back. Its activation is then
 * empty, and the frames written there belong to the next eval-loop frame
 * out, and so on: the chain runs out one eval-loop frame early. A backend
 * that meets that (the first activation was at the leaf and wrote
 * frames, and a later eval-loop frame finds no frame left) writes
 * EMBER_IP_PY_CUT | EMBER_PY_CUT_SHIFT and then the leaf's PC instead of
 * that eval-loop frame, and walks on natively (no more Python). The agent
 * moves each activation past the native frames that follow it and puts
 * the leaf's PC first: the true order. The stack is not cut by that.
 */
#define EMBER_IP_TAG_SHIFT	56
#define EMBER_IP_TAG(ip)	((__u64)(ip) >> EMBER_IP_TAG_SHIFT)
#define EMBER_IP_PY		(0xf1ULL << EMBER_IP_TAG_SHIFT)
#define EMBER_IP_PY_CUT		(0xf2ULL << EMBER_IP_TAG_SHIFT)
#define EMBER_IP_VALUE(ip)	((__u64)(ip) & ((1ULL << EMBER_IP_TAG_SHIFT) - 1))
#define EMBER_PY_NO_OFFSET	0xffffffffU
#define EMBER_PY_CHECK(firstlineno, argcount, flags)			\
	((__u32)(firstlineno) ^ ((__u32)(argcount) << 16) ^		\
	 ((__u32)(flags) << 20))
#define EMBER_MAX_PY_FRAMES	128	/* per sample, all activations */
#define EMBER_MAX_PY_PROCS	4096	/* bound processes per session */

enum ember_py_cut {
	EMBER_PY_CUT_TSTATE	= 1,	/* no readable thread state/frame */
	EMBER_PY_CUT_FRAME	= 2,	/* a frame or its code unreadable */
	EMBER_PY_CUT_DEPTH	= 3,	/* EMBER_MAX_PY_FRAMES or ustack max */
	EMBER_PY_CUT_ENTRY	= 4,	/* chain ended before the entry frame */
	EMBER_PY_CUT_NATIVE	= 5,	/* not a Python cut: the native walk's;
					 * an activation further out follows */
	EMBER_PY_CUT_SHIFT	= 6,	/* not a cut: see "The leaf's eval loop" */
};

enum ember_py_tstate {
	EMBER_PY_TS_TLS		= 1,
	EMBER_PY_TS_TSD		= 2,
};

enum ember_py_entry {
	EMBER_PY_ENTRY_FLAG	= 1,
	EMBER_PY_ENTRY_SHIM	= 2,
};

#define EMBER_PY_MAX_OFFSET	4096	/* every struct offset below it */

struct ember_py_proc {
	__u32 version;		/* PY_VERSION_HEX, e.g. 0x030b02f0 */
	__u8 tstate_kind;	/* enum ember_py_tstate */
	__u8 entry_kind;	/* enum ember_py_entry */
	__u8 entry_value;	/* the byte at fr_owner that marks the entry */
	__u8 ts_frame_nr;	/* 1 or 2 */
	__s64 tstate_off;	/* from the thread pointer */
	__u64 key_addr;		/* EMBER_PY_TS_TSD: the __s32 key; else 0 */
	__u64 eval_start[2];	/* the eval loop's code, [start, end), */
	__u64 eval_end[2];	/* absolute; an unused range is 0, 0 */
	__u64 code_tag_mask;	/* cleared from the code pointer (3.14: 1) */
	__u16 ts_frame[2];	/* thread state -> newest frame */
	__u16 fr_previous;	/* _PyInterpreterFrame.previous */
	__u16 fr_code;		/* f_code / f_executable */
	__u16 fr_instr;		/* prev_instr / instr_ptr */
	__u16 fr_owner;		/* is_entry (3.11) / owner (3.12+), a byte */
	__u16 co_firstlineno;	/* PyCodeObject members, __s32 each */
	__u16 co_argcount;
	__u16 co_flags;
	__u16 __reserved[7];
};

/*
 * Rings (module backend)
 *
 * /dev/ember exposes one ring per possible CPU. Ring N is mapped with
 *	mmap(NULL, EMBER_RING_MAP_SIZE(page, data), PROT_READ | PROT_WRITE,
 *	     MAP_SHARED, fd, N * EMBER_RING_MAP_SIZE(page, data))
 * where page is the page size and data the ring's data size (a power of two
 * reported by EMBER_CMD_GET_INFO as EMBER_A_RING_SIZE). The first page is
 * struct ember_ring_ctrl; the data area follows it.
 *
 * producer and consumer are free-running byte counts; the record at count c
 * starts at data[c & (data_size - 1)] and never wraps (a PAD record fills
 * the tail instead). The reader loads producer with acquire semantics,
 * consumes records, then stores consumer with release semantics. Only the
 * consumer field is writable in effect: the kernel never trusts it beyond
 * computing free space.
 */
#define EMBER_RING_MAP_SIZE(page, data)	((__u64)(page) + (__u64)(data))

struct ember_ring_ctrl {
	__u32 version;		/* EMBER_ABI_VERSION */
	__u32 cpu;
	__u64 data_size;
	__u64 data_offset;	/* from the start of this page */
	__u64 lost;		/* records dropped because the ring was full */
	__u64 __pad0[4];
	__u64 producer;		/* written by the kernel, own cache line */
	__u64 __pad1[7];
	__u64 consumer;		/* written by the reader, own cache line */
	__u64 __pad2[7];
};

/*
 * Unwind tables: user stacks without frame pointers (x86_64, aarch64)
 *
 * The agent compiles a file's call-frame information (.eh_frame,
 * .debug_frame) into one table per file, and describes each profiled
 * process's executable mappings as a list of ember_unwind_mapping. Both
 * backends consume exactly these bytes: the module copies them in over
 * netlink (EMBER_CMD_UNWIND_*), the eBPF backend loads them into maps.
 * Every consumer validates a table completely before use (the rules are
 * spelled out in include/ember_unwind.h, shared code both sides run).
 *
 * A table is one contiguous blob:
 *	struct ember_unwind_table	header (32 bytes)
 *	__u32 page_row[nr_pages + 1]	first row of each 64 KiB page
 *	struct ember_unwind_row	rows[nr_rows]
 *	struct ember_unwind_rule	rules[nr_rules]
 * Addresses are the file's ELF virtual addresses (what symbol tables use);
 * a mapping's bias turns a PC into one: vaddr = pc - bias. Page p covers
 * [base + p * 64 KiB, base + (p + 1) * 64 KiB); its rows are
 * rows[page_row[p] .. page_row[p + 1]), sorted by strictly increasing
 * pc_low, and a non-empty page's first row has pc_low 0 (the builder
 * repeats the rule in force at each page start), so a lookup is one index
 * plus a binary search of at most 16 steps. A row holds from its pc_low up
 * to the next row's. Rows are 4 bytes; rules, shared by every row that
 * needs them, 8 bytes.
 */
#define EMBER_UNWIND_MAGIC		0x31574e55	/* "UNW1" */
#define EMBER_UNWIND_VERSION		1
#define EMBER_UNWIND_PAGE_SHIFT		16
#define EMBER_UNWIND_MAX_PAGES		(1U << 16)	/* 4 GiB of text */
#define EMBER_UNWIND_MAX_RULES		(1U << 16)	/* row.rule is 16 bits */
#define EMBER_UNWIND_MAX_ROWS		(1U << 24)
#define EMBER_UNWIND_MAX_CFA_OFF	(1 << 24)	/* |cfa_off|, bytes */
#define EMBER_UNWIND_MAX_TABLE		(64U << 20)	/* bytes, one table */
#define EMBER_UNWIND_MAX_MAPPINGS	2000		/* per process binding */
#define EMBER_UNWIND_CHUNK_MAX		60000		/* bytes per UNWIND_DATA */

/* How to find the Canonical Frame Address (the caller's stack pointer). */
enum ember_cfa_type {
	EMBER_CFA_NONE		= 0,	/* no CFI here: cut (or FP step) */
	EMBER_CFA_SP		= 1,	/* rsp + cfa_off */
	EMBER_CFA_FP		= 2,	/* rbp + cfa_off */
	EMBER_CFA_PLT1		= 3,	/* lazy PLT: rsp + 8 + ((pc & 15) >= 11 ? 8 : 0) */
	EMBER_CFA_PLT2		= 4,	/* same with 10 (.plt.sec / IBT PLT) */
	EMBER_CFA_DEREF_FP	= 5,	/* *(rbp + cfa_off): realigned stack */
	EMBER_CFA_DEREF_SP	= 6,	/* *(rsp + cfa_off) */
	EMBER_CFA_SIGNAL	= 7,	/* rt_sigreturn trampoline: the interrupted
					 * registers are in the ucontext at rsp */
	EMBER_CFA_END		= 8,	/* outermost frame: the stack is complete */
	EMBER_CFA_DEREF_FP_ADD	= 9,	/* *(rbp + off) + add, both packed in
					 * cfa_off (EMBER_CFA_DEREF_OFF/_ADD) */
	EMBER_CFA_DEREF_SP_ADD	= 10,	/* *(rsp + off) + add: OpenSSL's and
					 * libgcrypt's perlasm (saved rsp + 8) */
	EMBER_CFA_SIGNAL_A64	= 11,	/* aarch64 __kernel_rt_sigreturn: the
					 * interrupted registers are in the
					 * rt_sigframe at sp */
	__EMBER_CFA_MAX,
};

/*
 * The _ADD forms pack two offsets into cfa_off: the low 16 bits (signed)
 * are added before the load, the high 16 bits (signed) after it. The
 * |cfa_off| bound still applies, which keeps the second within +-255.
 */
#define EMBER_CFA_DEREF_PACK(off, add)					\
	((__s32)(((__u32)(__u16)(__s16)(add) << 16) | (__u16)(__s16)(off)))
#define EMBER_CFA_DEREF_OFF(cfa_off)	((__s64)(__s16)((__u32)(cfa_off) & 0xffff))
#define EMBER_CFA_DEREF_ADD(cfa_off)	((__s64)(__s16)((__u32)(cfa_off) >> 16))

/*
 * "fp" below is the frame-pointer register: rbp on x86_64, x29 on aarch64;
 * "sp" is rsp or sp. A rule's fp_type byte holds two rules: the low four
 * bits where the caller's frame pointer is (enum ember_fp_rule), the high
 * four bits where the return address is (enum ember_ra_rule, always 0 on
 * x86_64). Use EMBER_RULE_FP(), EMBER_RULE_RA() and EMBER_RULE_FP_RA().
 */
enum ember_fp_rule {
	EMBER_FP_SAME		= 0,	/* unchanged: the caller's fp is fp */
	EMBER_FP_AT_CFA		= 1,	/* saved at CFA + fp_off */
	EMBER_FP_AT_FP		= 2,	/* saved at fp + fp_off (realigned) */
	EMBER_FP_UNKNOWN	= 3,	/* clobbered: the caller's fp is unknown */
	__EMBER_FP_MAX,
};

enum ember_ra_rule {
	EMBER_RA_CFA_M8		= 0,	/* at CFA - 8 (x86_64: pushed by call) */
	EMBER_RA_LR		= 1,	/* aarch64: still in x30 (leaf function,
					 * prologue, epilogue, PLT); valid only
					 * for the interrupted frame itself */
	EMBER_RA_AT_CFA		= 2,	/* aarch64: saved at CFA + fp_off; the
					 * fp rule is then SAME or UNKNOWN */
	EMBER_RA_PAIR		= 3,	/* aarch64: saved at CFA + fp_off + 8,
					 * next to the caller's x29 (fp rule
					 * AT_CFA): stp x29, x30 */
	__EMBER_RA_MAX,
};

#define EMBER_RULE_FP(fp_type)		((fp_type) & 0xf)
#define EMBER_RULE_RA(fp_type)		(((fp_type) >> 4) & 0xf)
#define EMBER_RULE_FP_RA(fp, ra)	((__u8)((fp) | (ra) << 4))

struct ember_unwind_rule {
	__u8 cfa_type;		/* enum ember_cfa_type */
	__u8 fp_type;		/* EMBER_RULE_FP_RA(fp rule, ra rule) */
	__s16 fp_off;		/* multiple of 8 */
	__s32 cfa_off;		/* |cfa_off| <= EMBER_UNWIND_MAX_CFA_OFF */
};

struct ember_unwind_row {
	__u16 pc_low;		/* low 16 bits of the first address */
	__u16 rule;		/* index into rules[] */
};

struct ember_unwind_table {
	__u32 magic;		/* EMBER_UNWIND_MAGIC */
	__u16 version;		/* EMBER_UNWIND_VERSION */
	__u16 flags;		/* none defined: must be 0 */
	__u64 base;		/* ELF vaddr of page 0, 64 KiB aligned */
	__u32 nr_pages;		/* 1..EMBER_UNWIND_MAX_PAGES */
	__u32 nr_rows;		/* 1..EMBER_UNWIND_MAX_ROWS */
	__u32 nr_rules;		/* 1..EMBER_UNWIND_MAX_RULES */
	__u32 size;		/* bytes of the whole blob, header included */
};

#define EMBER_UNWIND_TABLE_SIZE(pages, rows, rules)			\
	(sizeof(struct ember_unwind_table) +				\
	 ((__u64)(pages) + 1) * sizeof(__u32) +				\
	 (__u64)(rows) * sizeof(struct ember_unwind_row) +		\
	 (__u64)(rules) * sizeof(struct ember_unwind_rule))

/* One executable mapping of a bound process. */
struct ember_unwind_mapping {
	__u64 start;		/* [start, end) in the process, page aligned */
	__u64 end;
	__u64 bias;		/* file vaddr = pc - bias */
	__u32 table_id;		/* a loaded table, 0 = none (FP steps only) */
	__u32 flags;		/* EMBER_UMF_* */
};

#define EMBER_UMF_ANON		(1U << 0)	/* anonymous (JIT) code */
#define EMBER_UMF_VDSO		(1U << 1)

/*
 * EMBER_CFA_SIGNAL: where the interrupted registers are, from rsp at the
 * trampoline (x86_64 struct rt_sigframe after its pretcode was popped:
 * ucontext first, uc_mcontext at 40, struct sigcontext's rbp, rsp, rip).
 */
#define EMBER_SIGFRAME_RBP	(40 + 80)	/* uc_mcontext.rbp */
#define EMBER_SIGFRAME_RSP	(40 + 120)	/* uc_mcontext.rsp */
#define EMBER_SIGFRAME_RIP	(40 + 128)	/* uc_mcontext.rip */

/*
 * EMBER_CFA_SIGNAL_A64: the same from sp at __kernel_rt_sigreturn on
 * aarch64 (arch/arm64/kernel/signal.c struct rt_sigframe: siginfo, 128
 * bytes, then the ucontext, whose 16-aligned uc_mcontext is at 176;
 * struct sigcontext: fault_address, regs[31], sp, pc).
 */
#define EMBER_A64_SIGFRAME_MC	(128 + 176)
#define EMBER_A64_SIGFRAME_X29	(EMBER_A64_SIGFRAME_MC + 8 + 29 * 8)
#define EMBER_A64_SIGFRAME_X30	(EMBER_A64_SIGFRAME_MC + 8 + 30 * 8)
#define EMBER_A64_SIGFRAME_SP	(EMBER_A64_SIGFRAME_MC + 8 + 31 * 8)
#define EMBER_A64_SIGFRAME_PC	(EMBER_A64_SIGFRAME_MC + 8 + 32 * 8)

/*
 * Control: generic netlink family "ember". Every command needs
 * CAP_PERFMON or CAP_SYS_ADMIN.
 */
enum ember_cmd {
	EMBER_CMD_UNSPEC,
	EMBER_CMD_GET_INFO,	/* -> VERSION, CAPS, RUNNING, NR_RINGS, RING_SIZE, ... */
	EMBER_CMD_START,	/* EVENTS, FREQ, ... -> as GET_INFO */
	EMBER_CMD_STOP,
	EMBER_CMD_GET_STATS,	/* dump: one message per CPU */
	EMBER_CMD_SET_FILTER,	/* FILTER_PIDS and/or FILTER_CGROUP; empty clears */
	/*
	 * Unwind tables, while a session runs (freed when it stops). A table
	 * arrives in chunks: UNWIND_TABLE_ID, UNWIND_TABLE_SIZE (whole blob),
	 * UNWIND_OFFSET and UNWIND_DATA (<= 60000 bytes), in order; the chunk
	 * that completes it has it validated and published, or refused with
	 * an extack message.
	 */
	EMBER_CMD_UNWIND_LOAD,
	EMBER_CMD_UNWIND_DROP,	/* UNWIND_TABLE_ID */
	/* UNWIND_PID and UNWIND_MAPPINGS (array of ember_unwind_mapping,
	 * sorted, not overlapping); no UNWIND_MAPPINGS unbinds the process */
	EMBER_CMD_UNWIND_BIND,
	/*
	 * Allocation probes, while an EMBER_EV_ALLOC session runs (removed
	 * when it stops): ALLOC_PATH (an absolute path, a regular file) and
	 * ALLOC_PROBES (struct ember_alloc_probe[]); every probe is checked
	 * before any is placed, and all or none are. ALLOC_PID (optional,
	 * needed by EMBER_PROBE_ENTRY_*) limits them to one process's
	 * address space; ALLOC_RATE sets the entry probes' sampling. Up to
	 * EMBER_MAX_ALLOC_SETS ATTACHes per session, one per (file,
	 * process): another is refused (EBUSY) until ALLOC_DETACH, which
	 * removes them all.
	 */
	EMBER_CMD_ALLOC_ATTACH,
	EMBER_CMD_ALLOC_DETACH,
	/*
	 * Python frames (EMBER_CAP_PYTHON), while a session runs (dropped
	 * when it stops): PY_PID and PY_PROC (struct ember_py_proc, every
	 * field checked: kinds known, offsets < EMBER_PY_MAX_OFFSET, eval
	 * ranges ordered user addresses); no PY_PROC unbinds the process.
	 * At most EMBER_MAX_PY_PROCS processes (ENOSPC past that).
	 */
	EMBER_CMD_PY_BIND,
	__EMBER_CMD_MAX,
};
#define EMBER_CMD_MAX (__EMBER_CMD_MAX - 1)

/* EMBER_A_EVENTS bits */
#define EMBER_EV_ONCPU		(1U << 0)
#define EMBER_EV_OFFCPU		(1U << 1)
#define EMBER_EV_LIFECYCLE	(1U << 2)	/* exec/exit records */
#define EMBER_EV_FAULTS		(1U << 3)	/* EMBER_REC_FAULT */
#define EMBER_EV_ALLOC		(1U << 4)	/* EMBER_REC_ALLOC/FREE from probes */
#define EMBER_EV_LOCK		(1U << 5)	/* EMBER_REC_LOCK (+ _WAKER) */

/*
 * One sample per 512 page faults (2 MiB of base pages first touched). On a
 * fault-bound loop (make bench, section 9) sampling then adds ~2% where 64
 * added ~6%, on top of ~4% that the enabled page-fault software event
 * costs every fault whatever the period.
 */
#define EMBER_DEFAULT_FAULT_PERIOD	512	/* page faults per sample */
#define EMBER_MIN_FAULT_PERIOD		1
#define EMBER_MAX_FAULT_PERIOD		1000000

/* EMBER_A_CLOCK_EVENT */
enum ember_clock_event {
	EMBER_CLOCK_CPU_CLOCK	= 0,	/* software cpu-clock, always there */
	EMBER_CLOCK_CYCLES	= 1,	/* hardware cycles; falls back to cpu-clock */
};

/* EMBER_A_FLAGS */
#define EMBER_F_INCLUDE_IDLE	(1U << 0)
#define EMBER_F_STACK_COPY	(1U << 1)	/* test mode: EMBER_REC_USER_STACK
						 * after each sample with a user stack */
#define EMBER_F_LOCK_WAKER	(1U << 2)	/* EMBER_EV_LOCK: also write
						 * EMBER_REC_LOCK_WAKER records */

/* EMBER_A_CAPS bits */
#define EMBER_CAP_ONCPU		(1ULL << 0)
#define EMBER_CAP_OFFCPU	(1ULL << 1)
#define EMBER_CAP_LIFECYCLE	(1ULL << 2)
#define EMBER_CAP_CYCLES	(1ULL << 3)	/* a hardware PMU answered */
#define EMBER_CAP_CGROUP_FILTER	(1ULL << 4)
#define EMBER_CAP_USER_STACKS	(1ULL << 5)
#define EMBER_CAP_KERNEL_STACKS	(1ULL << 6)
#define EMBER_CAP_UNWIND_CFI	(1ULL << 7)	/* EMBER_CMD_UNWIND_* tables */
#define EMBER_CAP_FAULTS	(1ULL << 8)	/* EMBER_EV_FAULTS */
#define EMBER_CAP_ALLOC		(1ULL << 9)	/* EMBER_EV_ALLOC, EMBER_CMD_ALLOC_* */
#define EMBER_CAP_ALLOC_ENTRY	(1ULL << 10)	/* EMBER_PROBE_ENTRY_*, ALLOC_PID/RATE */
#define EMBER_CAP_ALLOC_INUSE	(1ULL << 11)	/* ENTRY_FREE/REALLOC, ALLOC_INUSE */
#define EMBER_CAP_LOCK_FUTEX	(1ULL << 12)	/* EMBER_EV_LOCK: futex waits */
#define EMBER_CAP_LOCK_KERNEL	(1ULL << 13)	/* ... kernel lock contention
						 * (lock:contention_*, 5.19+) */
#define EMBER_CAP_LOCK_WAITV	(1ULL << 14)	/* ... futex_waitv (5.16+) */
#define EMBER_CAP_PYTHON	(1ULL << 15)	/* EMBER_CMD_PY_BIND, EMBER_IP_PY */
#define EMBER_CAP_MMAP		(1ULL << 16)	/* EMBER_REC_MMAP records */
#define EMBER_CAP_STACK_COPY	(1ULL << 17)	/* EMBER_A_STACK_COPY */

/*
 * EMBER_A_ALLOC_PROBES: where to put uprobes in the file ALLOC_PATH names.
 * The probed instruction is the first of a function whose arguments
 * follow the x86_64 ABI (rdi, rsi, rdx) or on aarch64 AAPCS64 (x0, x1,
 * x2: the kinds' RDI, RSI, RDX mean the first, second, third integer
 * argument there); the return value is rax / x0.
 */
enum ember_alloc_probe_kind {
	/* preload/ember_alloc.c's ember_alloc_probe(ptr, size, weight):
	 * an EMBER_REC_ALLOC with weight bytes, the address and the size */
	EMBER_PROBE_SAMPLED_ALLOC	= 1,
	/* ember_free_probe(ptr): an EMBER_REC_FREE */
	EMBER_PROBE_SAMPLED_FREE	= 2,
	/*
	 * An allocator's own entry point in a process that runs without the
	 * sampler: every call traps, and the kernel side samples by bytes
	 * (a per-thread countdown, EMBER_A_ALLOC_RATE on average). The size
	 * is in rdi (malloc, valloc), rsi (realloc, memalign,
	 * aligned_alloc), rdi x rsi (calloc) or rdx (posix_memalign). The
	 * EMBER_REC_ALLOC has weight 0 (the reader scales it by the rate)
	 * and address 0 (not followed to its free).
	 */
	EMBER_PROBE_ENTRY_SIZE_RDI	= 3,
	EMBER_PROBE_ENTRY_SIZE_RSI	= 4,
	EMBER_PROBE_ENTRY_NMEMB_SIZE	= 5,
	EMBER_PROBE_ENTRY_SIZE_RDX	= 6,
	/*
	 * In-use tracking under ALLOC_PID (EMBER_CAP_ALLOC_INUSE): with
	 * EMBER_A_ALLOC_INUSE every EMBER_PROBE_ENTRY_* also gets a return
	 * probe, and a sampled call's EMBER_REC_ALLOC (the stack of its
	 * entry) is written at its return, with the address it returned
	 * (posix_memalign: the one it stored), which goes into a bounded
	 * table of the session's (EMBER_ALLOC_LIVE_MAX blocks; full: the
	 * record has address 0 and EMBER_SF_ALLOC_UNTRACKED). A NULL
	 * return is no allocation: no record.
	 * ENTRY_FREE: free(ptr), operator delete (sized too): rdi is freed;
	 * an EMBER_REC_FREE when it is in the table.
	 * ENTRY_REALLOC: realloc(ptr, size): frees rdi as ENTRY_FREE does,
	 * then samples size (rsi) as ENTRY_SIZE_RSI.
	 */
	EMBER_PROBE_ENTRY_FREE		= 7,
	EMBER_PROBE_ENTRY_REALLOC	= 8,
};

struct ember_alloc_probe {
	__u64 offset;		/* file offset of the probed instruction */
	__u64 ref_ctr_offset;	/* file offset of a __u16 semaphore the
				 * kernel raises while attached; 0 = none */
	__u32 kind;		/* enum ember_alloc_probe_kind */
	__u32 __reserved;	/* 0 */
};
#define EMBER_MAX_ALLOC_PROBES	12	/* 8 before EMBER_CAP_ALLOC_INUSE */
/* sampled blocks followed to their free at once (about 32 GiB in use at
 * the default rate); more are reported with EMBER_SF_ALLOC_UNTRACKED */
#define EMBER_ALLOC_LIVE_MAX	65536
#define EMBER_MAX_ALLOC_SETS	16	/* ALLOC_ATTACHes per session */
#define EMBER_DEFAULT_ALLOC_RATE	(512 * 1024)	/* no ALLOC_RATE */
#define EMBER_MAX_ALLOC_RATE	(1ULL << 40)

enum ember_attr {
	EMBER_A_UNSPEC,
	EMBER_A_PAD,			/* alignment for u64 attributes */
	EMBER_A_VERSION,		/* u32: EMBER_ABI_VERSION */
	EMBER_A_CAPS,			/* u64: EMBER_CAP_* */
	EMBER_A_RUNNING,		/* u8: a session is running */
	EMBER_A_EVENTS,			/* u32: EMBER_EV_* */
	EMBER_A_CLOCK_EVENT,		/* u32: enum ember_clock_event asked */
	EMBER_A_CLOCK_EVENT_USED,	/* u32: what is in use after fallback */
	EMBER_A_FREQ,			/* u32: Hz, EMBER_MIN_FREQ..EMBER_MAX_FREQ */
	EMBER_A_KSTACK_MAX,		/* u32: 0..EMBER_MAX_FRAMES, 0 = none */
	EMBER_A_USTACK_MAX,		/* u32: 0..EMBER_MAX_FRAMES, 0 = none */
	EMBER_A_FLAGS,			/* u32: EMBER_F_* */
	EMBER_A_RING_SIZE,		/* u32: data bytes per ring, power of two */
	EMBER_A_NR_RINGS,		/* u32: rings mappable (nr_cpu_ids) */
	EMBER_A_WATERMARK,		/* u32: bytes that wake a poller */
	EMBER_A_FILTER_PIDS,		/* binary: array of u32 tgids */
	EMBER_A_FILTER_CGROUP,		/* u64: cgroup v2 id, 0 = none */
	EMBER_A_OFFCPU_MIN_NS,		/* u64: shorter intervals are not emitted */
	EMBER_A_OFFCPU_SAMPLE_PPM,	/* u32: keep this many per million, 0 = all */
	EMBER_A_STATS,			/* nested ember_stat_attr, in GET_STATS dumps */
	EMBER_A_UNWIND_TABLE_ID,	/* u32, nonzero, chosen by the agent */
	EMBER_A_UNWIND_TABLE_SIZE,	/* u32: bytes of the whole table */
	EMBER_A_UNWIND_OFFSET,		/* u32: where this chunk goes */
	EMBER_A_UNWIND_DATA,		/* binary: a chunk of the table */
	EMBER_A_UNWIND_PID,		/* u32: tgid to bind */
	EMBER_A_UNWIND_MAPPINGS,	/* binary: ember_unwind_mapping[] */
	EMBER_A_UNWIND_MEM_USED,	/* u64: bytes of tables and bindings */
	EMBER_A_UNWIND_MEM_CAP,		/* u64: the module parameter's cap */
	EMBER_A_UNWIND_TABLES,		/* u32: tables loaded */
	EMBER_A_UNWIND_BOUND,		/* u32: processes bound */
	EMBER_A_FAULT_PERIOD,		/* u32: page faults per EMBER_REC_FAULT */
	EMBER_A_RING_MEM_USED,		/* u64: bytes of the current rings */
	EMBER_A_RING_MEM_CAP,		/* u64: the ring_mem_max parameter */
	EMBER_A_ALLOC_PATH,		/* string: file to probe (< PATH_MAX) */
	EMBER_A_ALLOC_PROBES,		/* binary: struct ember_alloc_probe[] */
	EMBER_A_ALLOC_PID,		/* u32: tgid whose address space alone
					 * gets the probes; 0 or none = all */
	EMBER_A_ALLOC_RATE,		/* u64: mean bytes between entry probe
					 * samples, 1..EMBER_MAX_ALLOC_RATE */
	EMBER_A_ALLOC_INUSE,		/* flag: follow sampled blocks of the
					 * entry probes to their free */
	EMBER_A_LOCK_MIN_NS,		/* u64: shorter lock waits are not
					 * recorded (EMBER_DEFAULT_LOCK_MIN_NS
					 * when absent, <= EMBER_MAX_LOCK_MIN_NS) */
	EMBER_A_PY_PID,			/* u32: tgid (EMBER_CMD_PY_BIND) */
	EMBER_A_PY_PROC,		/* binary: struct ember_py_proc */
	EMBER_A_STACK_COPY,		/* u32: bytes of user stack copied for
					 * a cut/unbound sample, 0 (none) ..
					 * EMBER_STACK_COPY_MAX, a multiple of
					 * EMBER_STACK_COPY_UNIT; absent = 0 */
	__EMBER_A_MAX,
};
#define EMBER_A_MAX (__EMBER_A_MAX - 1)

enum ember_stat_attr {
	EMBER_STAT_UNSPEC,
	EMBER_STAT_PAD,
	EMBER_STAT_CPU,			/* u32 */
	EMBER_STAT_ONLINE,		/* u8: the CPU's event is active */
	EMBER_STAT_SAMPLES,		/* u64: on-CPU handler calls */
	EMBER_STAT_FILTERED,		/* u64: samples dropped by filters/idle */
	EMBER_STAT_RECORDS,		/* u64: records written */
	EMBER_STAT_LOST,		/* u64: records dropped, ring full */
	EMBER_STAT_HANDLER_NS,		/* u64: time spent in the sample handler */
	EMBER_STAT_OFFCPU_SWITCHES,	/* u64: sched_switch probe calls */
	EMBER_STAT_OFFCPU_OVERFLOW,	/* u64: in-flight table full */
	EMBER_STAT_OFFCPU_NS,		/* u64: time spent in scheduler probes */
	EMBER_STAT_USTACK_CFI,		/* u64: user stacks unwound with tables */
	EMBER_STAT_USTACK_FP,		/* u64: ... needing >= 1 FP step */
	EMBER_STAT_USTACK_CUT,		/* u64: ... cut short (EMBER_SF_USER_CUT) */
	EMBER_STAT_UNWIND_MISS,		/* u64: miss records emitted */
	EMBER_STAT_UNWIND_MISS_LIMITED,	/* u64: misses not reported (rate limit) */
	EMBER_STAT_ALLOC_HITS,		/* u64: allocation probe hits (ALLOC and
					 * FREE) past the filters: each one a
					 * record or one LOST */
	EMBER_STAT_LOCK_WAITS,		/* u64: wait syscalls/contentions seen */
	EMBER_STAT_LOCK_OVERFLOW,	/* u64: in-flight wait table full */
	EMBER_STAT_LOCK_WAKERS,		/* u64: EMBER_REC_LOCK_WAKER written */
	__EMBER_STAT_MAX,
};
#define EMBER_STAT_MAX (__EMBER_STAT_MAX - 1)

#endif /* _UAPI_EMBER_H */
