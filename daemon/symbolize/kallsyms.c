// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <limits.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon/base/sort.h"
#include "daemon/base/vec.h"
#include "daemon/symbolize/kallsyms.h"

/*
 * A symbol as kept: 16 bytes, its name an offset into one block of names (each followed, after
 * its NUL, by the index of its module as two bytes: 0 for vmlinux). 120 k symbols took 7 MiB
 * as {addr, end, name, module} with names in an arena; 5 MiB this way.
 */
struct kent {
	uint64_t addr;
	uint32_t name; /* offset in names */
	uint32_t size; /* end - addr (at most KALLSYMS_MAX_TAIL); while loading, rank and order */
};

#define MAX_MODULES 65535

struct kallsyms {
	struct kent *syms;
	size_t nr_syms, syms_bytes; /* syms_bytes: the mapping's size */
	char *names;
	size_t names_len, names_cap;
	char **modules; /* modules[i - 1] is module index i */
	size_t nr_modules, cap_modules;
	struct ksym view; /* what lookups return */
	bool available;
};

/*
 * The symbols and the names live in anonymous mappings grown with mremap: a grown table is
 * not copied, so the peak is what is used (doubling with realloc held the old and the new
 * array at once), and the file is read once (counting its lines first read it twice: the
 * kernel's formatting of kallsyms is most of the cost of loading it).
 */
static int map_grow(void **p, size_t *cap, size_t need)
{
	size_t ncap = *cap ? *cap : 1 << 20;
	void *np;

	/* Doubled by hand, not vec_reserve: mremap, not realloc, is what keeps the peak down. */
	while (ncap < need) {
		if (ncap > SIZE_MAX / 2)
			return -ENOMEM;
		ncap *= 2;
	}
	if (ncap == *cap)
		return 0;
	np = *p ? mremap(*p, *cap, ncap, MREMAP_MAYMOVE)
		: mmap(NULL, ncap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (np == MAP_FAILED)
		return -ENOMEM;
	*p = np;
	*cap = ncap;
	return 0;
}

/* Give back the pages past used (whole pages only). */
static void map_trim(void *p, size_t *cap, size_t used)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE), keep = (used + page - 1) & ~(page - 1);

	if (!keep)
		keep = page;
	if (p && keep < *cap && mremap(p, *cap, keep, 0) != MAP_FAILED)
		*cap = keep;
}

static void map_free(void *p, size_t cap)
{
	if (p)
		munmap(p, cap);
}

/* One parsed line; name and module point into the line (NUL-terminated in place). */
struct kline {
	uint64_t addr;
	const char *name;
	const char *module;
	int rank; /* lower wins at one address; text symbols only */
	bool text;
};

static bool is_hex(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

static int text_rank(char type, const char *name)
{
	int rank, underscores = 0;

	switch (type) {
	case 'T':
		rank = 0;
		break;
	case 'W':
		rank = 1;
		break;
	case 't':
		rank = 2;
		break;
	case 'w':
		rank = 3;
		break;
	default:
		return -1;
	}
	/* At one address, "_text"/"_stext" are markers and "__foo" a wrapper; name the function. */
	while (name[underscores] == '_' && underscores < 3)
		underscores++;
	return rank * 4 + underscores;
}

/* "ADDR TYPE NAME[\t[MODULE]]"; modifies the line in place. false for a malformed line. */
static bool parse_line(char *p, char *end, struct kline *l)
{
	uint64_t addr = 0;
	int digits = 0, rank;
	char type, *name, *mod;

	while (p < end && is_hex(*p)) {
		if (++digits > 16)
			return false;
		addr = addr << 4 | (uint64_t)(*p <= '9' ? *p - '0' : (*p | 0x20) - 'a' + 10);
		p++;
	}
	if (!digits || end - p < 3 || p[0] != ' ' || p[2] != ' ')
		return false;
	type = p[1];
	p += 3;
	name = p;
	while (p < end && *p != ' ' && *p != '\t')
		p++;
	if (p == name)
		return false;
	mod = NULL;
	if (p < end) {
		*p++ = '\0';
		while (p < end && (*p == ' ' || *p == '\t'))
			p++;
		if (p < end && *p == '[' && end[-1] == ']' && end - p > 2) {
			mod = p + 1;
			end[-1] = '\0';
		}
	}
	*end = '\0';
	/* End-of-text markers bound the symbols before them but name nothing. */
	rank = strcmp(name, "_etext") && strcmp(name, "_einittext") ? text_rank(type, name) : -1;
	l->addr = addr;
	l->name = name;
	l->module = mod;
	l->text = rank >= 0;
	l->rank = rank;
	return true;
}

/*
 * Loading state. The file (~5 MiB, ~120k lines) is streamed: only text symbols are kept, in
 * the final array, with their rank and file position parked in .size until they are sorted.
 * Other symbols only bound the text before them, so just their addresses are kept.
 */
struct loader {
	struct kallsyms *k;
	uint64_t *bounds; /* addresses of non-text symbols */
	size_t nr_bounds, cap_bounds;
	uint16_t last_mod; /* module lines come in runs: look each name up once */
	char last_mod_buf[64];
	uint64_t etext;
	uint32_t seq;
};

/* Rank (0..15) and file order, sortable as one number, in the 32 bits of .size. */
#define LOAD_ORDER(rank, seq) ((uint32_t)(rank) << 27 | ((seq) & ((1u << 27) - 1)))

static int names_append(struct kallsyms *k, const char *s, size_t len, uint16_t mod,
			uint32_t *ret_off)
{
	size_t need = len + 3;

	if (k->names_len + need > k->names_cap) {
		if (k->names_len + need > UINT32_MAX)
			return -EFBIG;
		if (map_grow((void **)&k->names, &k->names_cap, k->names_len + need))
			return -ENOMEM;
	}
	*ret_off = (uint32_t)k->names_len;
	memcpy(k->names + k->names_len, s, len);
	k->names[k->names_len + len] = '\0';
	memcpy(k->names + k->names_len + len + 1, &mod, sizeof(mod));
	k->names_len += need;
	return 0;
}

/* The index of module name (1-based), added if new. */
static int module_index(struct loader *ld, const char *name, uint16_t *ret)
{
	struct kallsyms *k = ld->k;

	if (ld->last_mod && !strcmp(ld->last_mod_buf, name)) {
		*ret = ld->last_mod;
		return 0;
	}
	for (size_t i = 0; i < k->nr_modules; i++)
		if (!strcmp(k->modules[i], name)) {
			*ret = (uint16_t)(i + 1);
			goto found;
		}
	if (k->nr_modules == MAX_MODULES)
		return -EFBIG;
	if (vec_reserve(&k->modules, &k->cap_modules, k->nr_modules + 1))
		return -ENOMEM;
	k->modules[k->nr_modules] = strdup(name);
	if (!k->modules[k->nr_modules])
		return -ENOMEM;
	*ret = (uint16_t)++k->nr_modules;
found:
	ld->last_mod = *ret;
	snprintf(ld->last_mod_buf, sizeof(ld->last_mod_buf), "%s", name);
	return 0;
}

static int loader__add(struct loader *ld, const struct kline *l)
{
	struct kallsyms *k = ld->k;
	uint16_t mod = 0;
	struct kent *s;
	int err;

	if (!l->text) {
		if (vec_reserve(&ld->bounds, &ld->cap_bounds, ld->nr_bounds + 1))
			return -ENOMEM;
		ld->bounds[ld->nr_bounds++] = l->addr;
		return 0;
	}
	if ((k->nr_syms + 1) * sizeof(*k->syms) > k->syms_bytes &&
	    map_grow((void **)&k->syms, &k->syms_bytes, (k->nr_syms + 1) * sizeof(*k->syms)))
		return -ENOMEM;
	if (l->module && (err = module_index(ld, l->module, &mod)))
		return err;
	s = &k->syms[k->nr_syms];
	s->addr = l->addr;
	s->size = LOAD_ORDER(l->rank, ld->seq++);
	err = names_append(k, l->name, strlen(l->name), mod, &s->name);
	if (err)
		return err;
	k->nr_syms++;
	return 0;
}

static int cmp_loading(const void *a, const void *b)
{
	const struct kent *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	/* Best name first, then file order (.size holds LOAD_ORDER(rank, position)). */
	return x->size < y->size ? -1 : x->size > y->size;
}

static uint16_t module_of(const struct kallsyms *k, const struct kent *s)
{
	uint16_t mod;
	const char *name = k->names + s->name;

	memcpy(&mod, name + strlen(name) + 1, sizeof(mod));
	return mod;
}

/* Sort, keep the best name per address, and bound each symbol by whatever follows it. */
static void loader__finish(struct loader *ld)
{
	struct kallsyms *k = ld->k;
	size_t i, out = 0, b = 0;

	/* The kernel lists its symbols in address order: then only the runs at one address are
	 * sorted (by rank), not the whole table. */
	for (i = 1; i < k->nr_syms && k->syms[i - 1].addr <= k->syms[i].addr; i++)
		;
	if (i < k->nr_syms) {
		qsort(k->syms, k->nr_syms, sizeof(*k->syms), cmp_loading);
	} else {
		for (i = 0; i < k->nr_syms; i = b) {
			for (b = i + 1; b < k->nr_syms && k->syms[b].addr == k->syms[i].addr; b++)
				;
			if (b - i > 1)
				qsort(k->syms + i, b - i, sizeof(*k->syms), cmp_loading);
		}
		b = 0;
	}
	if (ld->nr_bounds)
		qsort(ld->bounds, ld->nr_bounds, sizeof(*ld->bounds), cmp_u64);
	for (i = 0; i < k->nr_syms; i++) {
		if (out && k->syms[out - 1].addr == k->syms[i].addr)
			continue;
		k->syms[out++] = k->syms[i];
	}
	k->nr_syms = out;
	for (i = 0; i < out; i++) {
		struct kent *s = &k->syms[i];
		uint64_t end = UINT64_MAX - s->addr < KALLSYMS_MAX_TAIL
				       ? UINT64_MAX
				       : s->addr + KALLSYMS_MAX_TAIL;

		if (i + 1 < out && k->syms[i + 1].addr < end)
			end = k->syms[i + 1].addr;
		while (b < ld->nr_bounds && ld->bounds[b] <= s->addr)
			b++;
		if (b < ld->nr_bounds && ld->bounds[b] < end)
			end = ld->bounds[b];
		if (!module_of(k, s) && ld->etext && s->addr < ld->etext && end > ld->etext)
			end = ld->etext;
		s->size = (uint32_t)(end - s->addr);
	}
	/* Give back the slack. */
	map_trim(k->syms, &k->syms_bytes, out * sizeof(*k->syms));
	map_trim(k->names, &k->names_cap, k->names_len);
}

static int loader__line(struct loader *ld, char *p, char *eol)
{
	struct kline l;

	if (!parse_line(p, eol, &l))
		return 0;
	/* Zero means hidden by kptr_restrict, not a symbol at 0. */
	if (!l.addr)
		return 0;
	if (!l.module && !strcmp(l.name, "_etext"))
		ld->etext = l.addr;
	return loader__add(ld, &l);
}

/* A kernel line whose symbol moves while the kernel runs: BPF programs, ftrace and kprobe
 * trampolines. Left out of the cache (read fresh from /proc/kallsyms when a frame needs one). */
static bool dynamic_line(const char *p, const char *eol)
{
	const char *m = memchr(p, '[', (size_t)(eol - p));

	return m && (!strncmp(m, "[bpf]", 5) || !strncmp(m, "[__builtin__", 12));
}

/* Load from fd; each static line is also written to tee (NULL: none). */
static struct kallsyms *load_fd(int fd, FILE *tee)
{
	enum { CHUNK = 64 << 10 };
	struct loader ld = {};
	struct kallsyms *k;
	char *buf = NULL;
	size_t have = 0, total = 0;
	int err = 0;

	k = calloc(1, sizeof(*k));
	if (!k)
		return NULL;
	ld.k = k;
	buf = malloc(CHUNK + 1);
	if (!buf) {
		err = -ENOMEM;
		goto out;
	}
	for (;;) {
		ssize_t n = read(fd, buf + have, CHUNK - have);
		char *p, *eol, *end;

		if (n < 0) {
			if (errno == EINTR)
				continue;
			err = -errno;
			goto out;
		}
		total += (size_t)n;
		if (total > KALLSYMS_MAX_SIZE) {
			err = -EFBIG;
			goto out;
		}
		have += (size_t)n;
		end = buf + have;
		for (p = buf; (eol = memchr(p, '\n', (size_t)(end - p))); p = eol + 1) {
			if (tee && !dynamic_line(p, eol))
				fwrite(p, 1, (size_t)(eol - p) + 1, tee);
			err = loader__line(&ld, p, eol);
			if (err)
				goto out;
		}
		/* A line longer than the buffer is not kallsyms: drop it, keep going. */
		if (p == buf && have == CHUNK)
			p = end;
		have = (size_t)(end - p);
		memmove(buf, p, have);
		if (n == 0)
			break;
	}
	if (have) { /* last line without a newline */
		err = loader__line(&ld, buf, buf + have);
		if (err)
			goto out;
	}
	k->available = k->nr_syms > 0 || ld.nr_bounds > 0;
	loader__finish(&ld);
out:
	free(buf);
	free(ld.bounds);
	if (err) {
		kallsyms__free(k);
		errno = -err;
		return NULL;
	}
	return k;
}

struct kallsyms *kallsyms__load(const char *path)
{
	int fd = open(path ? path : "/proc/kallsyms", O_RDONLY | O_CLOEXEC), saved;
	struct kallsyms *k;

	if (fd < 0)
		return NULL;
	k = load_fd(fd, NULL);
	saved = errno;
	close(fd);
	errno = saved;
	return k;
}

/*
 * The key of this boot's static kernel symbols: the boot id, and a hash of /proc/modules (its
 * names, sizes and load addresses: a module loaded, unloaded or moved changes it).
 */
static int cache_key(char *out, size_t n)
{
	char boot[64] = "", buf[4096];
	uint64_t h = 0xcbf29ce484222325ull;
	ssize_t r;
	int fd;

	fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	r = read(fd, boot, sizeof(boot) - 1);
	close(fd);
	if (r <= 0)
		return -EIO;
	boot[strcspn(boot, "\n")] = '\0';
	fd = open("/proc/modules", O_RDONLY | O_CLOEXEC);
	if (fd >= 0) { /* a kernel without modules has none */
		while ((r = read(fd, buf, sizeof(buf))) > 0)
			for (ssize_t i = 0; i < r; i++)
				h = (h ^ (uint8_t)buf[i]) * 0x100000001b3ull;
		close(fd);
	}
	snprintf(out, n, "xsprof-kallsyms 1 %s %016llx\n", boot, (unsigned long long)h);
	return 0;
}

struct kallsyms *kallsyms__load_cached(const char *cache, bool *ret_cached)
{
	char key[160], head[160], tmp[PATH_MAX];
	struct kallsyms *k;
	FILE *tee = NULL;
	ssize_t n;
	int fd, tfd;

	*ret_cached = false;
	if (!cache || cache_key(key, sizeof(key)))
		return kallsyms__load(NULL);
	fd = open(cache, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd >= 0) {
		struct stat st;

		n = pread(fd, head, sizeof(head) - 1, 0);
		head[n > 0 ? n : 0] = '\0';
		/* Ours (root's, not writable by others) and of this boot: the header line is
		 * not a symbol, so the loader skips it. */
		if (!fstat(fd, &st) && st.st_uid == 0 && !(st.st_mode & 022) &&
		    !strncmp(head, key, strlen(key))) {
			k = load_fd(fd, NULL);
			close(fd);
			if (k && kallsyms__available(k)) {
				*ret_cached = true;
				return k;
			}
			kallsyms__free(k);
		} else {
			close(fd);
		}
	}
	/* Read /proc/kallsyms, and keep its static lines for the next run (best effort). */
	fd = open("/proc/kallsyms", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.XXXXXX", cache) < sizeof(tmp) &&
	    (tfd = mkostemp(tmp, O_CLOEXEC)) >= 0) {
		tee = fdopen(tfd, "w");
		if (!tee) {
			close(tfd);
			unlink(tmp);
		} else {
			fputs(key, tee);
		}
	}
	k = load_fd(fd, tee);
	close(fd);
	if (tee) {
		/* Only a table with addresses is worth keeping (not one kptr_restrict hid). */
		if (fclose(tee) || !k || !kallsyms__available(k) || rename(tmp, cache))
			unlink(tmp);
	}
	return k;
}

void kallsyms__free(struct kallsyms *k)
{
	if (!k)
		return;
	for (size_t i = 0; i < k->nr_modules; i++)
		free(k->modules[i]);
	free(k->modules);
	map_free(k->names, k->names_cap);
	map_free(k->syms, k->syms_bytes);
	free(k);
}

bool kallsyms__available(const struct kallsyms *k)
{
	return k->available;
}

size_t kallsyms__count(const struct kallsyms *k)
{
	return k->nr_syms;
}

size_t kallsyms__bytes(const struct kallsyms *k)
{
	return sizeof(*k) + k->syms_bytes + k->names_cap + k->nr_modules * 32;
}

/* The view of symbol s that the lookups return (valid until the next one). */
static const struct ksym *view(const struct kallsyms *k, const struct kent *s)
{
	struct kallsyms *w = (struct kallsyms *)k; /* the view is scratch, not the table */
	uint16_t mod = module_of(k, s);

	w->view.addr = s->addr;
	w->view.end = s->addr + s->size;
	w->view.name = k->names + s->name;
	w->view.module = mod && mod <= k->nr_modules ? k->modules[mod - 1] : NULL;
	return &w->view;
}

const struct ksym *kallsyms__at(const struct kallsyms *k, size_t idx)
{
	return idx < k->nr_syms ? view(k, &k->syms[idx]) : NULL;
}

const struct ksym *kallsyms__lookup(const struct kallsyms *k, uint64_t addr)
{
	size_t lo = 0, hi = k->nr_syms;
	const struct kent *s;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (k->syms[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return NULL;
	s = &k->syms[lo - 1];
	return addr - s->addr < s->size ? view(k, s) : NULL;
}

const struct ksym *kallsyms__find(const struct kallsyms *k, const char *name)
{
	for (size_t i = 0; i < k->nr_syms; i++)
		if (!strcmp(k->names + k->syms[i].name, name))
			return view(k, &k->syms[i]);
	return NULL;
}
