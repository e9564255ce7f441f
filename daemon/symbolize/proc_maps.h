/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A snapshot of one process's /proc/PID/maps, parsed into mappings sorted by start address.
 * The text comes from the kernel but its paths come from the profiled process, so the parser
 * checks every byte against the buffer's end and skips (and counts) lines it cannot read.
 */
#ifndef XSPROF_DAEMON_SYMBOLIZE_PROC_MAPS_H
#define XSPROF_DAEMON_SYMBOLIZE_PROC_MAPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define PROC_MAP_READ	 0x1
#define PROC_MAP_WRITE	 0x2
#define PROC_MAP_EXEC	 0x4
#define PROC_MAP_PRIVATE 0x8 /* 'p'; 's' (shared) leaves it clear */

/* Largest maps file read: a JVM with 100k mappings is ~10 MiB. */
#define PROC_MAPS_MAX_SIZE (256u << 20)

struct proc_map {
	uint64_t start;
	uint64_t end; /* exclusive */
	uint64_t offset;
	uint64_t inode;
	uint32_t dev_major;
	uint32_t dev_minor;
	/* NULL for anonymous mappings; "[heap]", "[vdso]", ... kept as printed; owned by the snapshot. */
	const char *path;
	uint8_t perms; /* PROC_MAP_* */
	bool deleted;  /* " (deleted)" was printed after the path (and is not part of path) */
};

struct proc_maps;

/* Parses maps text (need not be NUL-terminated). NULL with errno set (ENOMEM) on failure. */
struct proc_maps *proc_maps__parse(const char *buf, size_t len);
/*
 * Reads and parses PROC_ROOT/PID/maps ("/proc" when proc_root is NULL). NULL with errno set:
 * ESRCH when the process does not exist, EACCES, EFBIG past PROC_MAPS_MAX_SIZE, ENOMEM.
 */
struct proc_maps *proc_maps__read(const char *proc_root, pid_t pid);
void proc_maps__free(struct proc_maps *m);

size_t proc_maps__count(const struct proc_maps *m);
/* Lines that were not empty but could not be parsed. */
size_t proc_maps__skipped(const struct proc_maps *m);
/* The idx-th mapping in address order, NULL past the end. */
const struct proc_map *proc_maps__at(const struct proc_maps *m, size_t idx);
/* Index of the mapping containing addr, or -ENOENT. */
ssize_t proc_maps__index(const struct proc_maps *m, uint64_t addr);
/* The mapping containing addr, or NULL. */
const struct proc_map *proc_maps__find(const struct proc_maps *m, uint64_t addr);

#endif
