// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/base/hash.h"
#include "daemon/base/hashmap.h"
#include "daemon/base/vec.h"
#include "output/model/frame_sites.h"

#define MAX_NAME  4096 /* longer frame names are not recorded (written by name only) */
#define MAX_MAPS  65536
#define ENT_BYTES 96 /* a hash map slot and allocator overhead per entry, roughly */

struct site_ent {
	struct frame_site site;
	char *frame; /* the key; the site's strings follow it in the same block */
};

struct frame_sites {
	struct hashmap *names; /* (hash, length) of the frame -> struct site_ent */
	struct hashmap *maps;  /* (path, build id + offset) hashed -> 1-based index, as a pointer */
	struct frame_map *map_v; /* by index - 1; path and build id owned */
	size_t nr_maps, maps_cap;
	uint64_t max_bytes, bytes;
	struct frame_sites_stats stats;
};

struct frame_sites *frame_sites__new(uint64_t max_bytes)
{
	struct frame_sites *fs = calloc(1, sizeof(*fs));

	if (!fs)
		return NULL;
	fs->max_bytes = max_bytes ? max_bytes : FRAME_SITES_DEFAULT_BYTES;
	fs->names = hashmap__new();
	fs->maps = hashmap__new();
	if (!fs->names || !fs->maps) {
		frame_sites__free(fs);
		errno = ENOMEM;
		return NULL;
	}
	return fs;
}

static void free_ent(void *val, void *ctx)
{
	(void)ctx;
	free(val);
}

static void drop_all(struct frame_sites *fs)
{
	hashmap__for_each(fs->names, free_ent, NULL);
	hashmap__free(fs->names);
	hashmap__free(fs->maps);
	for (size_t i = 0; i < fs->nr_maps; i++) {
		free((char *)fs->map_v[i].path);
		free((char *)fs->map_v[i].build_id);
	}
	free(fs->map_v);
	fs->map_v = NULL;
	fs->nr_maps = fs->maps_cap = 0;
	fs->bytes = 0;
}

void frame_sites__free(struct frame_sites *fs)
{
	if (!fs)
		return;
	drop_all(fs);
	free(fs);
}

static int reset(struct frame_sites *fs)
{
	drop_all(fs);
	fs->stats.resets++;
	fs->names = hashmap__new();
	fs->maps = hashmap__new();
	return fs->names && fs->maps ? 0 : -ENOMEM;
}

static uint32_t map_index(struct frame_sites *fs, const struct frame_map *m)
{
	const char *bid = m->build_id ? m->build_id : "";
	/* A file's segments are mappings of their own: one per file offset. */
	uint64_t k1 = hash_str(m->path), k2 = hash_combine(hash_str(bid), m->offset);
	uintptr_t idx = (uintptr_t)hashmap__get(fs->maps, k1, k2);
	struct frame_map *e;

	if (idx) {
		e = &fs->map_v[idx - 1];
		if (strcmp(e->path, m->path) || strcmp(e->build_id, bid) || e->offset != m->offset)
			return 0; /* another file with the same hashes: no mapping for this one */
		/* Only the kernel's grows: a file's segment is the same wherever it is seen. */
		if (m->start < e->start)
			e->start = m->start;
		if (m->limit > e->limit)
			e->limit = m->limit;
		return (uint32_t)idx;
	}
	if (fs->nr_maps >= MAX_MAPS)
		return 0;
	if (vec_reserve(&fs->map_v, &fs->maps_cap, fs->nr_maps + 1))
		return 0;
	e = &fs->map_v[fs->nr_maps];
	*e = *m;
	e->path = strdup(m->path);
	e->build_id = strdup(bid);
	if (!e->path || !e->build_id ||
	    hashmap__put(fs->maps, k1, k2, (void *)(uintptr_t)(fs->nr_maps + 1))) {
		free((char *)e->path);
		free((char *)e->build_id);
		return 0;
	}
	fs->bytes += sizeof(*e) + strlen(m->path) + strlen(bid) + 2 + ENT_BYTES;
	return (uint32_t)++fs->nr_maps;
}

static size_t len0(const char *s)
{
	return s ? strlen(s) + 1 : 0;
}

/* Copies s (when not NULL) to *pos and moves it on. */
static const char *put_str(char **pos, const char *s)
{
	char *at = *pos;
	size_t n = len0(s);

	if (!s)
		return NULL;
	memcpy(at, s, n);
	*pos += n;
	return at;
}

static const struct site_ent *lookup(const struct frame_sites *fs, const char *frame, size_t len)
{
	const struct site_ent *e = hashmap__get(fs->names, hash_str(frame), len);

	return e && !strcmp(e->frame, frame) ? e : NULL;
}

int frame_sites__add(struct frame_sites *fs, const char *frame, const struct frame_site *site,
		     const struct frame_map *map)
{
	size_t len = strlen(frame), need;
	struct site_ent *e;
	char *pos;
	int err;

	if (len > MAX_NAME) {
		fs->stats.refused++;
		return -ENAMETOOLONG;
	}
	e = hashmap__get(fs->names, hash_str(frame), len);
	if (e) {
		if (!strcmp(e->frame, frame))
			return 0;
		fs->stats.refused++;
		return -EEXIST;
	}
	need = sizeof(*e) + len + 1 + len0(site->function) + len0(site->system_name) +
	       len0(site->file);
	if (fs->bytes + need + ENT_BYTES > fs->max_bytes && (err = reset(fs))) {
		fs->stats.refused++;
		return err;
	}
	e = malloc(need);
	if (!e) {
		fs->stats.refused++;
		return -ENOMEM;
	}
	e->site = *site;
	pos = (char *)(e + 1);
	e->frame = (char *)put_str(&pos, frame);
	e->site.function = put_str(&pos, site->function);
	e->site.system_name = put_str(&pos, site->system_name);
	e->site.file = put_str(&pos, site->file);
	e->site.map = map && map->path ? map_index(fs, map) : 0;
	if (hashmap__put(fs->names, hash_str(frame), len, e)) {
		free(e);
		fs->stats.refused++;
		return -ENOMEM;
	}
	fs->bytes += need + ENT_BYTES;
	return 0;
}

bool frame_sites__has(const struct frame_sites *fs, const char *frame)
{
	return fs && lookup(fs, frame, strlen(frame));
}

const struct frame_site *frame_sites__get(const struct frame_sites *fs, const char *frame)
{
	const struct site_ent *e = fs ? lookup(fs, frame, strlen(frame)) : NULL;

	return e ? &e->site : NULL;
}

const struct frame_map *frame_sites__map_at(const struct frame_sites *fs, uint32_t idx)
{
	return fs && idx >= 1 && idx <= fs->nr_maps ? &fs->map_v[idx - 1] : NULL;
}

size_t frame_sites__nr_maps(const struct frame_sites *fs)
{
	return fs ? fs->nr_maps : 0;
}

void frame_sites__stats(const struct frame_sites *fs, struct frame_sites_stats *ret)
{
	*ret = fs->stats;
	ret->names = hashmap__count(fs->names);
	ret->maps = fs->nr_maps;
	ret->bytes = fs->bytes;
}
