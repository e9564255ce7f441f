/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Where the frames of the call trees came from, for the writers that keep addresses (pprof).
 * The trees hold frames by name; as stacks are named (daemon/stacks/fold.c), each name is
 * recorded here once with an address that gave it, the file mapped there (path, build id and
 * the executable segment: start, limit, file offset) and, with --debug-info, the function,
 * source file and line, and whether it was inlined into the frame outside it.
 *
 * Addresses of files are ELF virtual addresses (as `addr2line -e FILE` takes them), and a file's
 * mapping is its executable segment at its link address: the same library in every process is
 * one mapping, so profiles merge by build id. Kernel frames are addresses of the
 * [kernel.kallsyms] mapping.
 *
 * Memory is capped: when a name would take the table past its cap, the table is emptied first
 * (counted), so a long-lived daemon keeps the names of its recent profiles. A frame with no
 * site is written by name only.
 */
#ifndef XSPROF_OUTPUT_FRAME_SITES_H
#define XSPROF_OUTPUT_FRAME_SITES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define FRAME_SITES_DEFAULT_BYTES (32ull << 20)
#define FRAME_SITES_KERNEL	  "[kernel.kallsyms]"

/* A mapped file (or the kernel). */
struct frame_map {
	const char *path;      /* as the process mapped it; FRAME_SITES_KERNEL for the kernel */
	const char *build_id;  /* lowercase hex, "" when the file has none */
	uint64_t start, limit; /* addresses it covers (limit exclusive) */
	uint64_t offset;       /* file offset of start */
};

/* One frame name's origin. Strings are owned by the table. */
struct frame_site {
	uint32_t map;		 /* 1-based index of its frame_map; 0: none */
	uint64_t addr;		 /* an address the name was given for */
	const char *function;	 /* the function's name: the frame's name without " (file:line)" */
	const char *system_name; /* as the symbol table spells it (the kernel's: no suffix) */
	const char *file;	 /* source file, NULL without --debug-info */
	uint32_t line;		 /* 0 without --debug-info */
	bool inlined;		 /* inlined into the frame outside it */
};

struct frame_sites_stats {
	uint64_t names;	  /* names held now */
	uint64_t maps;	  /* mappings held now */
	uint64_t bytes;	  /* memory held now (estimate) */
	uint64_t resets;  /* the cap was reached: emptied */
	uint64_t refused; /* names that could not be recorded (collision, too long, no memory) */
};

struct frame_sites;

/* max_bytes 0: FRAME_SITES_DEFAULT_BYTES. NULL with errno set. */
struct frame_sites *frame_sites__new(uint64_t max_bytes);
void frame_sites__free(struct frame_sites *fs);

/*
 * Records frame's site unless frame already has one; map (NULL: none) is where site->addr
 * lies, kept once per path and build id (a known one's range grows to cover it), and
 * site->map is ignored. 0, or -errno (-ENAMETOOLONG, -EEXIST for another name with the same
 * hash, -ENOMEM): counted as refused.
 */
int frame_sites__add(struct frame_sites *fs, const char *frame, const struct frame_site *site,
		     const struct frame_map *map);
/* Whether frame has a site (cheap: the fold asks before it works one out). */
bool frame_sites__has(const struct frame_sites *fs, const char *frame);
/* frame's site, or NULL. */
const struct frame_site *frame_sites__get(const struct frame_sites *fs, const char *frame);
/* Mapping idx (1-based), or NULL. */
const struct frame_map *frame_sites__map_at(const struct frame_sites *fs, uint32_t idx);
size_t frame_sites__nr_maps(const struct frame_sites *fs);
void frame_sites__stats(const struct frame_sites *fs, struct frame_sites_stats *ret);

#endif
