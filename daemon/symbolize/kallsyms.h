/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Kernel text symbols from /proc/kallsyms (vmlinux and modules), sorted for binary search.
 * When kptr_restrict hides addresses (all read as 0) the table is "unavailable" and every
 * lookup misses.
 */
#ifndef XSPROF_DAEMON_SYMBOLIZE_KALLSYMS_H
#define XSPROF_DAEMON_SYMBOLIZE_KALLSYMS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* kallsyms is ~10 MiB with many modules loaded. */
#define KALLSYMS_MAX_SIZE (512u << 20)
/*
 * How far the last symbol of a module (or any symbol with nothing after it) is taken to reach:
 * further than the largest kernel function, short of naming unrelated memory.
 */
#define KALLSYMS_MAX_TAIL (256u << 10)

struct ksym {
	uint64_t addr;
	uint64_t end; /* exclusive */
	const char *name;
	const char *module; /* NULL for vmlinux; "nvidia", "bpf", "__builtin__ftrace", ... */
};

struct kallsyms;

/* Reads path ("/proc/kallsyms" when NULL). NULL with errno set (open's errno, EFBIG, ENOMEM). */
struct kallsyms *kallsyms__load(const char *path);
void kallsyms__free(struct kallsyms *k);
/*
 * /proc/kallsyms through a cache file (root's, mode 0600, e.g. under /run): the kernel's
 * formatting of 120k lines is most of what reading kallsyms costs, and its static symbols do
 * not change within a boot while the modules stay. The file holds the static lines (not BPF
 * programs' or trampolines', which come and go) under a key of the boot id and /proc/modules;
 * read when the key matches (*ret_cached), else written anew from /proc/kallsyms. NULL cache:
 * kallsyms__load(NULL).
 */
struct kallsyms *kallsyms__load_cached(const char *cache, bool *ret_cached);

/* False when no symbol had an address (kptr_restrict, or not root). */
bool kallsyms__available(const struct kallsyms *k);
size_t kallsyms__count(const struct kallsyms *k);
/*
 * The lookups return a view of the symbol, valid until the next lookup on k (its name and
 * module strings as long as k): the table keeps its symbols compact.
 */
/* The idx-th text symbol in address order, NULL past the end. */
const struct ksym *kallsyms__at(const struct kallsyms *k, size_t idx);
/* The text symbol whose [addr, end) holds addr, or NULL. */
const struct ksym *kallsyms__lookup(const struct kallsyms *k, uint64_t addr);
/* A text symbol by name (the first in address order), or NULL; linear, not for hot paths. */
const struct ksym *kallsyms__find(const struct kallsyms *k, const char *name);
/* Memory held, for the symbolizer's cache accounting. */
size_t kallsyms__bytes(const struct kallsyms *k);

#endif
