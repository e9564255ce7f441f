/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The Location, Function and Mapping tables of a pprof profile, made from the frame names of
 * its stacks and where each came from (output/model/frame_sites.h):
 * - a frame with a site is a location at its address in its file's mapping (path, build id,
 *   executable segment) or in [kernel.kallsyms]; its function has the source file, the
 *   location the line, when --debug-info gave them; frames inlined into the next one out share
 *   that one's location, innermost line first, as profile.proto has it;
 * - a "[gpu] kernel" leaf is a location of the [gpu] mapping;
 * - any other frame (placeholders, interpreter frames, sites not recorded) is a location by
 *   name only, at address 0 with no mapping.
 * Every mapping says it has functions, so readers do not symbolize again.
 */
#ifndef XSPROF_OUTPUT_PPROF_LOCATIONS_H
#define XSPROF_OUTPUT_PPROF_LOCATIONS_H

#include <stddef.h>
#include <stdint.h>

struct buf;
struct frame_sites;
struct pprof_locs;
struct strtab;

/* Names are interned into strs, which must outlive the tables. sites may be NULL. */
struct pprof_locs *pprof_locs__new(struct strtab *strs, const struct frame_sites *sites);
void pprof_locs__free(struct pprof_locs *l);

/*
 * The location ids of a stack of n frames given root first, leaf first in *ret (valid until
 * the next call): fewer than n when inlined frames share a location. Returns how many, or
 * -ENOMEM.
 */
int pprof_locs__stack(struct pprof_locs *l, const char *const *frames, size_t n,
		      const uint64_t **ret);

/* Calls emit for each Mapping (3), Location (4) and Function (5) message. 0 or -errno. */
int pprof_locs__write(struct pprof_locs *l,
		      void (*emit)(void *ctx, unsigned int field, const struct buf *m), void *ctx);

#endif
