/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Finding the separate debug file of a stripped binary, in the order gdb uses: the build-id
 * path in each debug directory (DIR/.build-id/xx/rest.debug), then .gnu_debuglink next to the
 * binary, in its .debug/ folder, and under each debug directory with the binary's own folder
 * appended; then, when asked for and DEBUGINFOD_URLS is set, debuginfod. A candidate is taken
 * only when its build-id equals the binary's or, for a debuglink without build-ids to compare,
 * when its CRC-32 matches the link's.
 */
#ifndef XSPROF_DAEMON_SYMBOLIZE_DEBUGINFO_H
#define XSPROF_DAEMON_SYMBOLIZE_DEBUGINFO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct elf_symtab;
struct debuginfo;

/* Most debug directories searched. */
#define DEBUGINFO_MAX_DIRS 16
/* Largest debug file whose CRC is computed (reading it whole is the cost). */
#define DEBUGINFO_MAX_CRC_BYTES (4ull << 30)

struct debuginfo_opts {
	const char *const *dirs; /* NULL: { "/usr/lib/debug" } */
	size_t nr_dirs;
	bool debuginfod; /* ask the servers in DEBUGINFOD_URLS (libdebuginfod, loaded on use) */
	unsigned int debuginfod_timeout_ms; /* per request; 0: 5000 */
};

/* NULL with errno set. opts may be NULL. */
struct debuginfo *debuginfo__new(const struct debuginfo_opts *opts);
void debuginfo__free(struct debuginfo *d);

/*
 * Finds and reads the debug file of bin. bin_path is the binary's path as its process sees it
 * and root the prefix that reaches that view ("" for ours, "/proc/PID/root" for another mount
 * namespace); a NULL bin_path skips the places next to the binary. Returns the debug file's
 * symbols, with *ret_path (malloc'd) naming it, or NULL with errno ENOENT when there is none.
 */
struct elf_symtab *debuginfo__find(struct debuginfo *d, const struct elf_symtab *bin,
				   const char *root, const char *bin_path, char **ret_path);

/* CRC-32 (the zlib/gdb polynomial) of fd's whole contents; -EFBIG past DEBUGINFO_MAX_CRC_BYTES. */
int debuginfo__crc32(int fd, uint32_t *ret_crc);

#endif
