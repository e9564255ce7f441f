// SPDX-License-Identifier: Apache-2.0
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "daemon/base/clock.h"
#include "daemon/symbolize/debuginfo.h"
#include "daemon/symbolize/elf_symtab.h"

#define DEFAULT_DEBUG_DIR	      "/usr/lib/debug"
#define DEFAULT_DEBUGINFOD_TIMEOUT_MS 5000
#define CRC_CHUNK		      (256u << 10)

/* libdebuginfod's API (elfutils/debuginfod.h), loaded with dlopen so it costs nothing when off. */
typedef struct debuginfod_client debuginfod_client;
typedef int (*debuginfod_progressfn_t)(debuginfod_client *c, long a, long b);
struct debuginfod_api {
	void *lib;
	debuginfod_client *(*begin)(void);
	void (*end)(debuginfod_client *c);
	int (*find_debuginfo)(debuginfod_client *c, const unsigned char *id, int len, char **path);
	void (*set_progressfn)(debuginfod_client *c, debuginfod_progressfn_t fn);
};

struct debuginfo {
	char **dirs;
	size_t nr_dirs;
	bool debuginfod;
	bool debuginfod_tried; /* dlopen once */
	unsigned int timeout_ms;
	struct debuginfod_api api;
	debuginfod_client *client;
	uint64_t deadline_ns;
};

static uint32_t crc_table[256];

static void crc_init(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;

		for (int k = 0; k < 8; k++)
			c = c & 1 ? 0xedb88320u ^ (c >> 1) : c >> 1;
		crc_table[i] = c;
	}
}

int debuginfo__crc32(int fd, uint32_t *ret_crc)
{
	static bool ready;
	uint32_t crc = 0xffffffffu;
	uint64_t total = 0;
	unsigned char *buf;
	ssize_t n;

	if (!ready) {
		crc_init();
		ready = true;
	}
	buf = malloc(CRC_CHUNK);
	if (!buf)
		return -ENOMEM;
	for (;;) {
		n = pread(fd, buf, CRC_CHUNK, (off_t)total);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			free(buf);
			return -errno;
		}
		if (n == 0)
			break;
		total += (uint64_t)n;
		if (total > DEBUGINFO_MAX_CRC_BYTES) {
			free(buf);
			return -EFBIG;
		}
		for (ssize_t i = 0; i < n; i++)
			crc = crc_table[(crc ^ buf[i]) & 0xff] ^ (crc >> 8);
	}
	free(buf);
	*ret_crc = crc ^ 0xffffffffu;
	return 0;
}

struct debuginfo *debuginfo__new(const struct debuginfo_opts *opts)
{
	static const char *const default_dirs[] = {DEFAULT_DEBUG_DIR};
	const char *const *dirs = opts && opts->dirs ? opts->dirs : default_dirs;
	size_t n = opts && opts->dirs ? opts->nr_dirs : 1;
	struct debuginfo *d;

	if (n > DEBUGINFO_MAX_DIRS) {
		errno = E2BIG;
		return NULL;
	}
	d = calloc(1, sizeof(*d));
	if (!d)
		return NULL;
	d->dirs = calloc(n ? n : 1, sizeof(*d->dirs));
	if (!d->dirs)
		goto fail;
	for (size_t i = 0; i < n; i++) {
		/* Paths are joined by hand below: drop trailing slashes once here. */
		size_t len = strlen(dirs[i]);

		while (len > 1 && dirs[i][len - 1] == '/')
			len--;
		d->dirs[i] = strndup(dirs[i], len);
		if (!d->dirs[i])
			goto fail;
		d->nr_dirs++;
	}
	d->debuginfod = opts && opts->debuginfod;
	d->timeout_ms = opts && opts->debuginfod_timeout_ms ? opts->debuginfod_timeout_ms
							    : DEFAULT_DEBUGINFOD_TIMEOUT_MS;
	return d;
fail:
	debuginfo__free(d);
	errno = ENOMEM;
	return NULL;
}

void debuginfo__free(struct debuginfo *d)
{
	if (!d)
		return;
	if (d->client)
		d->api.end(d->client);
	/* libdebuginfod stays loaded: libcurl's global state cannot be unloaded cleanly. */
	for (size_t i = 0; i < d->nr_dirs; i++)
		free(d->dirs[i]);
	free(d->dirs);
	free(d);
}

static bool same_build_id(const struct elf_symtab *a, const struct elf_symtab *b)
{
	const uint8_t *ia, *ib;
	size_t la = elf_symtab__build_id(a, &ia), lb = elf_symtab__build_id(b, &ib);

	return la && la == lb && !memcmp(ia, ib, la);
}

/* Opens path as bin's debug file if it is one; crc_check: the debuglink's CRC to compare. */
static struct elf_symtab *try_candidate(struct debuginfo *d, const struct elf_symtab *bin,
					const char *path, bool debuglink, uint32_t want_crc)
{
	struct elf_symtab *t;
	const uint8_t *id;
	uint32_t crc;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0)
		return NULL;
	t = elf_symtab__open_fd(fd);
	if (!t)
		goto reject;
	/* The binary itself (a debuglink naming its own file) holds nothing new. */
	if (!elf_symtab__has_symtab(t) && !elf_symtab__has_dwarf(t))
		goto reject;
	if (!debuglink || (elf_symtab__build_id(bin, &id) && elf_symtab__build_id(t, &id))) {
		/* Build-ids on both sides: they decide, as gdb does. */
		if (!same_build_id(bin, t))
			goto reject;
	} else if (debuginfo__crc32(fd, &crc) || crc != want_crc) {
		goto reject;
	}
	close(fd);
	return t;
reject:
	elf_symtab__free(t);
	close(fd);
	return NULL;
}

static struct elf_symtab *by_build_id(struct debuginfo *d, const struct elf_symtab *bin,
				      char **ret_path)
{
	char path[PATH_MAX], *p;
	const uint8_t *id;
	size_t len = elf_symtab__build_id(bin, &id);
	struct elf_symtab *t;

	if (len < 2)
		return NULL;
	for (size_t i = 0; i < d->nr_dirs; i++) {
		int n = snprintf(path, sizeof(path), "%s/.build-id/%02x/", d->dirs[i], id[0]);

		if (n < 0 || (size_t)n + 2 * len + 8 >= sizeof(path))
			continue;
		p = path + n;
		for (size_t k = 1; k < len; k++)
			p += sprintf(p, "%02x", id[k]);
		strcpy(p, ".debug");
		t = try_candidate(d, bin, path, false, 0);
		if (t) {
			*ret_path = strdup(path);
			return t;
		}
	}
	return NULL;
}

static struct elf_symtab *by_debuglink(struct debuginfo *d, const struct elf_symtab *bin,
				       const char *root, const char *bin_path, char **ret_path)
{
	char dir[PATH_MAX], path[PATH_MAX];
	const char *link, *slash;
	struct elf_symtab *t;
	uint32_t crc = 0;
	int n;

	link = elf_symtab__debuglink(bin, &crc);
	if (!link || !bin_path || bin_path[0] != '/')
		return NULL;
	slash = strrchr(bin_path, '/');
	if ((size_t)(slash - bin_path) >= sizeof(dir))
		return NULL;
	memcpy(dir, bin_path, (size_t)(slash - bin_path));
	dir[slash - bin_path] = '\0';
	root = root ? root : "";
	/* Next to the binary, in its .debug/, then under each debug directory. */
	for (size_t i = 0; i < 2 + d->nr_dirs; i++) {
		if (i == 0)
			n = snprintf(path, sizeof(path), "%s%s/%s", root, dir, link);
		else if (i == 1)
			n = snprintf(path, sizeof(path), "%s%s/.debug/%s", root, dir, link);
		else
			n = snprintf(path, sizeof(path), "%s%s/%s", d->dirs[i - 2], dir, link);
		if (n < 0 || (size_t)n >= sizeof(path))
			continue;
		t = try_candidate(d, bin, path, true, crc);
		if (t) {
			*ret_path = strdup(path);
			return t;
		}
	}
	return NULL;
}

/*
 * The request in flight, for the progress callback (libdebuginfod before 0.180 has no user
 * data). Symbolizers are used from one thread, so one slot is enough.
 */
static struct debuginfo *progress_owner;

/* Called by libdebuginfod while it waits; non-zero cancels the transfer: our timeout. */
static int debuginfod_progress_deadline(debuginfod_client *c, long a, long b)
{
	return progress_owner && clock__mono_ns() > progress_owner->deadline_ns;
}

static bool debuginfod_load(struct debuginfo *d)
{
	struct debuginfod_api *api = &d->api;

	if (d->debuginfod_tried)
		return d->client != NULL;
	d->debuginfod_tried = true;
	api->lib = dlopen("libdebuginfod.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!api->lib)
		return false;
	api->begin = (debuginfod_client * (*)(void)) dlsym(api->lib, "debuginfod_begin");
	api->end = (void (*)(debuginfod_client *))dlsym(api->lib, "debuginfod_end");
	api->find_debuginfo = (int (*)(debuginfod_client *, const unsigned char *, int,
				       char **))dlsym(api->lib, "debuginfod_find_debuginfo");
	api->set_progressfn = (void (*)(debuginfod_client *, debuginfod_progressfn_t))dlsym(
		api->lib, "debuginfod_set_progressfn");
	if (!api->begin || !api->end || !api->find_debuginfo || !api->set_progressfn)
		return false;
	d->client = api->begin();
	if (!d->client)
		return false;
	api->set_progressfn(d->client, debuginfod_progress_deadline);
	return true;
}

static struct elf_symtab *by_debuginfod(struct debuginfo *d, const struct elf_symtab *bin,
					char **ret_path)
{
	const char *urls = getenv("DEBUGINFOD_URLS");
	struct elf_symtab *t;
	const uint8_t *id;
	size_t len = elf_symtab__build_id(bin, &id);
	char *path = NULL;
	int fd;

	if (!d->debuginfod || !len || !urls || !*urls || !debuginfod_load(d))
		return NULL;
	d->deadline_ns = clock__mono_ns() + (uint64_t)d->timeout_ms * 1000000ULL;
	progress_owner = d;
	fd = d->api.find_debuginfo(d->client, id, (int)len, &path);
	progress_owner = NULL;
	if (fd < 0) {
		free(path);
		return NULL;
	}
	/* libdebuginfod keeps its own cache (DEBUGINFOD_CACHE_PATH); the file is checked here. */
	t = elf_symtab__open_fd(fd);
	if (t && !same_build_id(bin, t)) {
		elf_symtab__free(t);
		t = NULL;
	}
	close(fd);
	if (!t) {
		free(path);
		return NULL;
	}
	*ret_path = path;
	return t;
}

struct elf_symtab *debuginfo__find(struct debuginfo *d, const struct elf_symtab *bin,
				   const char *root, const char *bin_path, char **ret_path)
{
	struct elf_symtab *t;
	char *path = NULL;

	t = by_build_id(d, bin, &path);
	if (!t)
		t = by_debuglink(d, bin, root, bin_path, &path);
	if (!t)
		t = by_debuginfod(d, bin, &path);
	if (!t) {
		errno = ENOENT;
		return NULL;
	}
	if (!path) {
		elf_symtab__free(t);
		errno = ENOMEM;
		return NULL;
	}
	*ret_path = path;
	return t;
}
