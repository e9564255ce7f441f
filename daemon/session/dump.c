// SPDX-License-Identifier: Apache-2.0
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "daemon/base/atomic_file.h"
#include "daemon/session/dump.h"
#include "daemon/session/frozen.h"
#include "output/analyses.h"
#include "output/output.h"
#include "output/model/profile.h"

/* The smallest first: a dump cut short by its budget keeps the reports and the stacks. */
const char *const dump__files[] = {
	"gpu-report.txt", "gpu-report.json", "job.json",
	"stacks.folded",  "profile.pb.gz",   "timeline.json",
	"trace.json",	  "manifest.json",   NULL,
};

/* dir/name into buf; false (nothing to do with it) when it does not fit. */
static bool join_path(char *buf, size_t size, const char *dir, const char *name)
{
	int n = snprintf(buf, size, "%s/%s", dir, name);

	return n >= 0 && (size_t)n < size;
}

static const enum output_format file_formats[] = {
	OUTPUT_GPU_TEXT, OUTPUT_GPU_REPORT, OUTPUT_JOB_REPORT,	OUTPUT_FOLDED,
	OUTPUT_PPROF,	 OUTPUT_TIMELINE,   OUTPUT_CHROME_JSON,
};

const char *dump__content_type(const char *file)
{
	for (size_t i = 0; dump__files[i]; i++)
		if (!strcmp(dump__files[i], file))
			return i < sizeof(file_formats) / sizeof(file_formats[0])
				       ? output__format_info(file_formats[i])->content_type
				       : "application/json"; /* manifest.json */
	return NULL;
}

/* Whether a process of pd says its place in a job (a job report is worth writing). */
static bool has_ranks(const struct profile_data *pd, const uint32_t *pids, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		const char *l = pd->process_labels
					? pd->process_labels(pd->process_labels_ctx, pids[i])
					: NULL;

		if (l && strstr(l, "job.rank="))
			return true;
	}
	return false;
}

/* The processes of every slice, sorted, once each: *ret (free it). */
static int all_pids(const struct dump_request *r, uint32_t **ret, size_t *ret_n)
{
	size_t n = 0, total = 0;
	uint32_t *v;

	for (size_t i = 0; i < r->nr_slices; i++) {
		size_t k;

		frozen__pids(r->slices[i], &k);
		total += k;
	}
	v = malloc((total ? total : 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < r->nr_slices; i++) {
		size_t k;
		const uint32_t *p = frozen__pids(r->slices[i], &k);

		for (size_t j = 0; j < k; j++) {
			size_t at = n;

			/* Insertion, once each: a dump's processes are few. */
			while (at > 0 && v[at - 1] > p[j])
				at--;
			if (at > 0 && v[at - 1] == p[j])
				continue;
			memmove(v + at + 1, v + at, (n - at) * sizeof(*v));
			v[at] = p[j];
			n++;
		}
	}
	*ret = v;
	*ret_n = n;
	return 0;
}

static void add_u64(struct json_object *o, const char *k, uint64_t v)
{
	json_object_object_add(o, k, json_object_new_uint64(v));
}

/* One label "key=value" of a set as a member of the object ctx. */
static void add_label(void *ctx, const char *key, size_t klen, const char *val, size_t vlen)
{
	char k[64];

	snprintf(k, sizeof(k), "%.*s", (int)(klen < sizeof(k) - 1 ? klen : sizeof(k) - 1), key);
	json_object_object_add(ctx, k, json_object_new_string_len(val, (int)vlen));
}

static struct json_object *processes_json(const struct dump_request *r,
					  const struct profile_data *pd, const uint32_t *pids,
					  size_t n)
{
	struct json_object *a = json_object_new_array();

	for (size_t i = 0; a && i < n; i++) {
		struct json_object *p = json_object_new_object(), *labels;
		const char *comm = pd->name ? pd->name(pd->ctx, pids[i], 0) : NULL;
		const char *set = pd->process_labels
					  ? pd->process_labels(pd->process_labels_ctx, pids[i])
					  : NULL;
		uint32_t uid = 0;

		for (size_t s = 0; s < r->nr_slices; s++) {
			size_t k;
			const uint32_t *v = frozen__pids(r->slices[s], &k);

			for (size_t j = 0; j < k; j++)
				if (v[j] == pids[i])
					uid = frozen__uid(r->slices[s]);
		}
		add_u64(p, "pid", pids[i]);
		add_u64(p, "uid", uid);
		json_object_object_add(p, "comm", json_object_new_string(comm ? comm : ""));
		if (set) {
			labels = json_object_new_object();
			profile__label_set_each(set, add_label, labels);
			json_object_object_add(p, "labels", labels);
		}
		json_object_array_add(a, p);
	}
	return a;
}

struct manifest_ctx {
	const char *text;
};

static int write_text(FILE *f, void *ctx)
{
	const struct manifest_ctx *m = ctx;

	errno = 0;
	if (fputs(m->text, f) < 0 || fputc('\n', f) < 0)
		return errno ? -errno : -EIO;
	return 0;
}

static int write_manifest(const struct dump_request *r, const struct profile_data *pd,
			  const uint32_t *pids, size_t n, const struct dump_result *res,
			  const char *path)
{
	struct json_object *m = json_object_new_object(), *trig, *span, *counts, *files;
	struct manifest_ctx mc;
	int err;

	if (!m)
		return -ENOMEM;
	json_object_object_add(m, "schema", json_object_new_string("xsprof-dump/1"));
	json_object_object_add(m, "name", json_object_new_string(r->name));
	json_object_object_add(m, "host", json_object_new_string(r->host ? r->host : ""));
	trig = r->trigger_json ? json_tokener_parse(r->trigger_json) : NULL;
	json_object_object_add(m, "trigger", trig ? trig : json_object_new_object());
	span = json_object_new_object();
	add_u64(span, "from_mono_ns", res->from_ns);
	add_u64(span, "to_mono_ns", res->to_ns);
	json_object_object_add(
		span, "from_unix_s",
		json_object_new_double((double)((int64_t)res->from_ns + pd->realtime_offset_ns) /
				       1e9));
	json_object_object_add(span, "seconds",
			       json_object_new_double((double)(res->to_ns - res->from_ns) / 1e9));
	json_object_object_add(m, "span", span);
	json_object_object_add(m, "processes", processes_json(r, pd, pids, n));
	{
		struct timespec ts;

		clock_gettime(CLOCK_MONOTONIC, &ts);
		add_u64(m, "written_mono_ns",
			(uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec);
	}
	counts = json_object_new_object();
	add_u64(counts, "samples", res->samples);
	add_u64(counts, "launches", res->launches);
	add_u64(counts, "kernels", res->kernels);
	add_u64(counts, "ranges", res->ranges);
	add_u64(counts, "slices", r->nr_slices);
	json_object_object_add(m, "counts", counts);
	files = json_object_new_array();
	for (size_t i = 0; dump__files[i]; i++) {
		char p[PATH_MAX];
		struct stat sb;

		if (!strcmp(dump__files[i], "manifest.json") ||
		    (join_path(p, sizeof(p), path, dump__files[i]) && !stat(p, &sb)))
			json_object_array_add(files, json_object_new_string(dump__files[i]));
	}
	json_object_object_add(m, "files", files);
	if (res->partial) {
		json_object_object_add(m, "partial", json_object_new_boolean(true));
		json_object_object_add(m, "partial_reason",
				       json_object_new_string(res->partial_why));
	}
	mc.text = json_object_to_json_string_ext(m, JSON_C_TO_STRING_PRETTY |
							    JSON_C_TO_STRING_NOSLASHESCAPE);
	{
		char p[PATH_MAX];

		err = join_path(p, sizeof(p), path, "manifest.json")
			      ? atomic_file__write(p, write_text, &mc)
			      : -ENAMETOOLONG;
	}
	json_object_put(m);
	return err;
}

/* The directory and what is in it (one level: a bundle has no subdirectories). */
/*
 * Removes the bundle NAME in DIR and the files in it, relative to descriptors: a bundle that
 * was swapped for a link is removed as the link, never followed (root must not delete what a
 * link points at), and an entry in it that is a directory or a link is removed as itself.
 */
/* Room kept in a budget for manifest.json, written last. */
#define DUMP_MANIFEST_ROOM (64u << 10)

static void remove_entry(const char *dir, const char *name)
{
	int pfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), fd;
	DIR *d;
	struct dirent *e;

	if (pfd < 0)
		return;
	fd = openat(pfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ENOTDIR || errno == ELOOP)
			unlinkat(pfd, name, 0); /* a link or a file where a bundle was */
		close(pfd);
		return;
	}
	d = fdopendir(fd);
	if (!d)
		close(fd);
	while (d && (e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (unlinkat(fd, e->d_name, 0) && errno == EISDIR)
			unlinkat(fd, e->d_name, AT_REMOVEDIR);
	}
	if (d)
		closedir(d);
	unlinkat(pfd, name, AT_REMOVEDIR);
	close(pfd);
}

void dump__remove(const char *dir, const char *name)
{
	remove_entry(dir, name);
}

uint64_t dump__bytes(const char *path)
{
	DIR *d = opendir(path);
	struct dirent *e;
	uint64_t n = 0;

	while (d && (e = readdir(d))) {
		char p[PATH_MAX];
		struct stat sb;

		if (e->d_name[0] != '.' && join_path(p, sizeof(p), path, e->d_name) &&
		    !lstat(p, &sb) && S_ISREG(sb.st_mode))
			n += (uint64_t)sb.st_size;
	}
	if (d)
		closedir(d);
	return n;
}

int dump__write(const struct dump_request *r, struct dump_result *ret, char *msg, size_t size)
{
	struct frozen_join *j = NULL;
	const struct profile_data *pd;
	char tmp[PATH_MAX], final[PATH_MAX];
	struct output_analyses an = {0};
	struct output_meta meta = {0};
	uint32_t *pids = NULL;
	size_t nr_pids = 0;
	bool ranks;
	int err;

	memset(ret, 0, sizeof(*ret));
	msg[0] = '\0';
	if ((size_t)snprintf(tmp, sizeof(tmp), "%s/.%s.tmp", r->dir, r->name) >= sizeof(tmp) ||
	    (size_t)snprintf(final, sizeof(final), "%s/%s", r->dir, r->name) >= sizeof(final)) {
		snprintf(msg, size, "the dump directory's path is too long");
		return -ENAMETOOLONG;
	}
	err = frozen_join__new(r->slices, r->nr_slices, r->from_ns, r->to_ns, &j);
	if (err) {
		snprintf(msg, size, "joining the slices: %s", strerror(-err));
		return err;
	}
	pd = frozen_join__profile(j);
	ret->from_ns = pd->start_ns;
	ret->to_ns = pd->end_ns;
	ret->samples = pd->nr_samples;
	ret->launches = pd->nr_launches;
	for (size_t i = 0; i < pd->nr_gpu; i++) {
		ret->kernels += pd->gpu[i].kind == CORR_GPU_KERNEL;
		ret->ranges += pd->gpu[i].kind == CORR_GPU_NVTX;
	}
	err = all_pids(r, &pids, &nr_pids);
	ret->processes = nr_pids;
	remove_entry(r->dir, tmp + strlen(r->dir) + 1); /* one cut short before (xsprofd died) */
	if (!err && mkdir(tmp, 0750)) {
		err = -errno;
		snprintf(msg, size, "creating %s: %s", tmp, strerror(errno));
	}
	/* The GPU report (two files) and the job report, built once for the files. */
	ranks = has_ranks(pd, pids, nr_pids);
	if (!err) {
		err = output_analyses__build(
			pd, OUTPUT_NEEDS_GPU_REPORT | (ranks ? OUTPUT_NEEDS_JOB_REPORT : 0), &an);
		if (err)
			snprintf(msg, size, "building the reports: %s", strerror(-err));
	}
	meta.an = &an;
	for (size_t i = 0; !err && i < sizeof(file_formats) / sizeof(file_formats[0]); i++) {
		uint64_t used = r->max_bytes ? dump__bytes(tmp) : 0, left = 0;
		char p[PATH_MAX];

		if (file_formats[i] == OUTPUT_JOB_REPORT && !ranks)
			continue;
		/* What is left of the budget, the manifest's room kept aside. */
		if (r->max_bytes)
			left = used + DUMP_MANIFEST_ROOM < r->max_bytes
				       ? r->max_bytes - used - DUMP_MANIFEST_ROOM
				       : 1;
		err = join_path(p, sizeof(p), tmp, dump__files[i])
			      ? output__write_profile_file_capped(pd, file_formats[i], p, &meta,
								  left)
			      : -ENAMETOOLONG;
		if (err == -EFBIG && r->max_bytes) {
			ret->partial = true;
			snprintf(ret->partial_why, sizeof(ret->partial_why),
				 "its budget of %.1f MiB was reached writing %s: it and the files "
				 "after it are left out",
				 (double)r->max_bytes / (1 << 20), dump__files[i]);
			err = 0;
			break;
		}
		if (err)
			snprintf(msg, size, "writing %s: %s", dump__files[i], strerror(-err));
	}
	if (!err) {
		err = write_manifest(r, pd, pids, nr_pids, ret, tmp);
		if (err)
			snprintf(msg, size, "writing manifest.json: %s", strerror(-err));
	}
	if (!err && rename(tmp, final)) {
		err = -errno;
		snprintf(msg, size, "renaming %s to %s: %s", tmp, final, strerror(errno));
	}
	if (!err)
		atomic_file__sync_dir_of(final);
	if (err)
		remove_entry(r->dir, tmp + strlen(r->dir) + 1);
	else
		ret->bytes = dump__bytes(final);
	output_analyses__release(&an);
	free(pids);
	frozen_join__free(j);
	return err;
}
