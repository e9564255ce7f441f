/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Names addresses: kernel ones through /proc/kallsyms, user ones through a snapshot of the
 * process's mappings and the ELF symbol tables of the mapped files.
 */
#ifndef XSPROF_SYMBOLIZER_H
#define XSPROF_SYMBOLIZER_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct symbolizer;

struct symbolizer_opts {
	const char *proc_root;	   /* "/proc" when NULL (tests point it elsewhere) */
	const char *kallsyms_path; /* "/proc/kallsyms" when NULL */
	bool no_demangle;	   /* keep C++ names mangled */
};

struct symbolizer_stats {
	uint64_t processes;	  /* processes whose mappings were snapshotted */
	uint64_t files_loaded;	  /* ELF files read (each once) */
	uint64_t files_failed;	  /* ELF files that could not be read */
	uint64_t user_lookups;
	uint64_t user_unresolved; /* named module+0xOFF or [unknown] */
	uint64_t kernel_lookups;
	uint64_t kernel_unresolved;
};

/* NULL with errno set on failure. opts may be NULL. */
struct symbolizer *symbolizer__new(const struct symbolizer_opts *opts);
void symbolizer__free(struct symbolizer *s);

/*
 * Snapshot pid's mappings now (call when the process first appears: it may be gone by the time
 * the profile is written). Replaces any earlier snapshot of that pid. -ESRCH when it is gone.
 */
int symbolizer__add_process(struct symbolizer *s, pid_t pid);
void symbolizer__forget_process(struct symbolizer *s, pid_t pid);

/*
 * Name an address. Never NULL: a symbol (demangled), else "module+0xADDR" (module is the file's
 * basename, ADDR the ELF virtual address, as addr2line -e takes it), else "[unknown]". The
 * string is owned by the symbolizer and valid until symbolizer__free. Callers pass return
 * addresses minus one so a call that ends a function names that function.
 */
const char *symbolizer__user(struct symbolizer *s, pid_t pid, uint64_t addr);
const char *symbolizer__kernel(struct symbolizer *s, uint64_t addr);

void symbolizer__stats(const struct symbolizer *s, struct symbolizer_stats *ret_stats);

#endif
