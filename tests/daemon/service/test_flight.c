// SPDX-License-Identifier: Apache-2.0
/*
 * The flight recorder's parts alone: trigger specs (daemon/base/flight_rule.c), frozen profiles
 * and their join (daemon/session/frozen.c), and the ring, the triggers and the dumps
 * (daemon/service/flight.c, compiled in) on synthetic slices: the cap held over 10 minutes of
 * 10,000 kernels a second, the user holding the most losing first, each trigger tripping where
 * it should and not elsewhere, cooldowns, dumps written whole by the writer thread, retention.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <malloc.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon/base/clock.h"
#include "daemon/base/flight_rule.h"
#include "daemon/service/flight.h"
#include "daemon/session/dump.h"
#include "daemon/session/frozen.h"

#define MS 1000000ull
#define S  1000000000ull

/* ---- trigger specs ---- */

Test(flight_rule, parses_each_kind_with_defaults_and_formats_back)
{
	const char *specs[] = {"gpu-idle,percent=40,seconds=60", "slow-step,range=step,factor=3",
			       "hang,seconds=120,range=allreduce", "death,before=20,cooldown=0"};
	char msg[256], buf[256];

	for (size_t i = 0; i < sizeof(specs) / sizeof(specs[0]); i++) {
		struct flight_rule r, back;

		cr_assert_eq(flight_rule__parse(specs[i], &r, msg, sizeof(msg)), 0, "%s: %s",
			     specs[i], msg);
		flight_rule__format(&r, buf, sizeof(buf));
		cr_assert_eq(flight_rule__parse(buf, &back, msg, sizeof(msg)), 0, "%s", buf);
		cr_assert_eq(memcmp(&r, &back, sizeof(r)), 0, "%s does not parse back", buf);
	}
	{
		struct flight_rule r;

		flight_rule__parse("slow-step,range=step,factor=3", &r, msg, sizeof(msg));
		cr_assert_eq(r.min_steps, 10);
		cr_assert_float_eq(r.cooldown_s, 300, 1e-9);
		cr_assert_eq(r.per_hour, 6);
		cr_assert_float_eq(r.before_s, 60, 1e-9);
		cr_assert_float_eq(r.after_s, 0.5, 1e-9);
	}
}

/* Every row of the kinds' table holds together: its example parses and writes back, each of
 * its required keys left out is refused with what it needs, a key of another kind is refused. */
Test(flight_rule, every_kind_row_holds_together)
{
	char msg[256], buf[512];

	for (enum flight_kind k = FLIGHT_GPU_IDLE; k < FLIGHT_NR_KINDS; k++) {
		const struct flight_kind_info *ki = flight_kind__info(k);
		struct flight_rule r, back;

		cr_assert(ki && ki->name && ki->example && ki->watches, "kind %d", k);
		cr_assert_eq(flight_rule__parse(ki->example, &r, msg, sizeof(msg)), 0, "%s: %s",
			     ki->example, msg);
		cr_expect_eq(r.kind, k);
		cr_expect_float_eq(r.after_s, ki->after_s, 1e-9, "%s", ki->name);
		flight_rule__format(&r, buf, sizeof(buf));
		cr_assert_eq(flight_rule__parse(buf, &back, msg, sizeof(msg)), 0, "%s", buf);
		cr_expect_eq(memcmp(&r, &back, sizeof(r)), 0, "%s", buf);
		for (unsigned j = 0; j < ki->nr_required; j++) {
			/* The example without its j-th required key. */
			char spec[256], key[32];

			snprintf(key, sizeof(key), ",%s=", ki->keys[j]);
			snprintf(spec, sizeof(spec), "%s", ki->example);
			char *at = strstr(spec, key), *end;

			cr_assert(at, "%s lacks %s", ki->example, key);
			end = strchr(at + 1, ',');
			memmove(at, end ? end : at + strlen(at), strlen(end ? end : "") + 1);
			cr_expect_eq(flight_rule__parse(spec, &r, msg, sizeof(msg)), -EINVAL, "%s",
				     spec);
			cr_expect(strstr(msg, ki->needs), "%s: %s", spec, msg);
		}
		cr_expect_null(flight_kind__info(FLIGHT_NR_KINDS));
	}
	cr_expect_eq(
		flight_rule__parse("death,factor=3", &(struct flight_rule){0}, msg, sizeof(msg)),
		-EINVAL);
	cr_expect(strstr(msg, "a death trigger takes no key 'factor'"), "%s", msg);
}

Test(flight_rule, refuses_nonsense_with_the_reason)
{
	struct {
		const char *spec, *why;
	} bad[] = {
		{"", "empty"},
		{"boom", "unknown trigger"},
		{"gpu-idle,percent=40", "needs percent=P and seconds=S"},
		{"gpu-idle,percent=0,seconds=10", "percent=0"},
		{"gpu-idle,percent=nan,seconds=10", "percent=nan"},
		{"slow-step,factor=3", "needs range=NAME"},
		{"slow-step,range=step,factor=1", "factor=1"},
		{"hang", "needs seconds=S"},
		{"hang,seconds=1e9", "seconds=1e9"},
		{"death,percent=3", "takes no key 'percent'"},
		{"death,per-hour=0", "per-hour=0"},
		{"death,cooldown", "key=value expected"},
	};
	char msg[256];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct flight_rule r;

		msg[0] = '\0';
		cr_assert_eq(flight_rule__parse(bad[i].spec, &r, msg, sizeof(msg)), -EINVAL, "%s",
			     bad[i].spec);
		cr_assert(strstr(msg, bad[i].why), "'%s': %s", bad[i].spec, msg);
	}
}

/* ---- a synthetic slice ---- */

static const char *const frames_a[] = {"main", "train", "xs_step"};
static const char *const frames_b[] = {"main", "load"};

static int stack_of(void *ctx, uint32_t pid, uint32_t stack_id, const char *const **ret, size_t *n)
{
	(void)ctx;
	(void)pid;
	if (stack_id == 7) {
		*ret = frames_a;
		*n = 3;
		return 0;
	}
	if (stack_id == 8) {
		*ret = frames_b;
		*n = 2;
		return 0;
	}
	return -ENOENT;
}

static const char *name_of(void *ctx, uint32_t pid, uint32_t tid)
{
	(void)ctx;
	(void)tid;
	return pid == 100 ? "uid:1000\x1ftrain.py" : pid == 200 ? "uid:0\x1fserve" : NULL;
}

static const char *labels_of(void *ctx, uint32_t pid)
{
	(void)ctx;
	return pid == 100 ? "job.id=j1\x1fjob.rank=3\x1fjob.world_size=4" : NULL;
}

/* A slice [t0, t0 + 10 s) of process pid with n kernels (each launched from stack 7, joined),
 * n samples (stack 7, every 3rd one stack 9: not named) and one NVTX range. The arrays are the
 * caller's to free (one block). */
struct slice {
	struct profile_data pd;
	void *block;
};

static void make_slice(struct slice *s, uint32_t pid, uint64_t t0, size_t n)
{
	size_t bytes = n * (sizeof(struct profile_sample) + sizeof(struct corr_cpu_rec) +
			    2 * sizeof(struct corr_gpu_rec) + sizeof(struct profile_join)) +
		       sizeof(struct corr_gpu_rec);
	char *p = calloc(1, bytes);
	struct profile_sample *smp = (void *)p;
	struct corr_cpu_rec *l = (void *)(smp + n);
	struct corr_gpu_rec *g = (void *)(l + n);
	struct profile_join *j = (void *)(g + n + 1);

	cr_assert(p);
	for (size_t i = 0; i < n; i++) {
		uint64_t t = t0 + i * (10 * S / (n ? n : 1));

		smp[i] = (struct profile_sample){
			.time_ns = t, .pid = pid, .tid = pid, .stack_id = i % 3 == 2 ? 9 : 7};
		l[i] = (struct corr_cpu_rec){.pid = pid,
					     .tid = pid,
					     .time_ns = t,
					     .stack_id = 7,
					     .api_name = "cudaLaunchKernel",
					     .corr_id = (uint32_t)i};
		g[i] = (struct corr_gpu_rec){.kind = CORR_GPU_KERNEL,
					     .pid = pid,
					     .start_ns = t + 1000,
					     .end_ns = t + 2000,
					     .corr_id = (uint32_t)i,
					     .name = i % 2 ? "gemm" : "relu"};
		j[i] = (struct profile_join){.launch = i, .gpu = i};
	}
	g[n] = (struct corr_gpu_rec){.kind = CORR_GPU_NVTX,
				     .pid = pid,
				     .tid = pid,
				     .start_ns = t0 + S,
				     .end_ns = t0 + 2 * S,
				     .name = "step"};
	s->block = p;
	s->pd = (struct profile_data){.samples = smp,
				      .nr_samples = n,
				      .launches = l,
				      .nr_launches = n,
				      .gpu = g,
				      .nr_gpu = n + 1,
				      .joins = j,
				      .nr_joins = n,
				      .stack = stack_of,
				      .name = name_of,
				      .sample_period_ns = 10 * MS,
				      .start_ns = t0,
				      .end_ns = t0 + 10 * S};
}

static struct frozen *freeze(uint32_t pid, uint32_t uid, uint64_t t0, size_t n)
{
	struct slice s;
	struct frozen *f;
	struct frozen_opts o = {
		.labels = labels_of, .uid = uid, .start_ns = t0, .end_ns = t0 + 10 * S};

	make_slice(&s, pid, t0, n);
	cr_assert_eq(frozen__make(&s.pd, &o, &f), 0);
	free(s.block);
	return f;
}

Test(frozen, keeps_what_a_slice_names_and_outlives_it)
{
	struct frozen *f = freeze(100, 1000, 50 * S, 30);
	struct frozen_counts c;
	struct frozen_join *j;
	const struct profile_data *pd;
	const char *const *fr;
	size_t n;

	frozen__counts(f, &c);
	cr_assert_eq(c.samples, 20, "samples %zu (every third is not named)", c.samples);
	cr_assert_eq(c.samples_unnamed, 10);
	cr_assert_eq(c.launches, 30);
	cr_assert_eq(c.kernels, 30);
	cr_assert_eq(c.ranges, 1);
	cr_assert_eq(c.joins, 30);
	cr_assert_eq(c.stacks, 1, "one distinct stack, stored once");
	cr_assert_str_eq(frozen__comm(f, 100), "train.py");
	cr_assert_str_eq(frozen__labels(f, 100), "job.id=j1\x1fjob.rank=3\x1fjob.world_size=4");
	cr_assert_eq(frozen__uid(f), 1000);
	frozen__put(f);
	/* Two slices (20 launches each, every 0.5 s) joined over part of their span: ids
	 * shifted, the joins inside kept. */
	{
		struct frozen *a = freeze(100, 1000, 50 * S, 20),
			      *g = freeze(100, 1000, 60 * S, 20);
		struct frozen *v[] = {a, g};

		cr_assert_eq(frozen_join__new(v, 2, 55 * S, 65 * S, &j), 0);
		frozen__put(g);
		frozen__put(a); /* the join holds its own references */
	}
	pd = frozen_join__profile(j);
	cr_assert_eq(pd->nr_launches, 20, "half of each slice's 20 launches: %zu", pd->nr_launches);
	cr_assert_eq(pd->nr_joins, 20);
	for (size_t i = 0; i < pd->nr_joins; i++)
		cr_assert_eq(pd->launches[pd->joins[i].launch].corr_id,
			     pd->gpu[pd->joins[i].gpu].corr_id);
	cr_assert_eq(pd->stack(pd->ctx, 100, pd->launches[0].stack_id, &fr, &n), 0);
	cr_assert_eq(n, 3);
	cr_assert_str_eq(fr[2], "xs_step");
	cr_assert_eq(pd->stack(pd->ctx, 100, pd->launches[19].stack_id, &fr, &n), 0);
	cr_assert_str_eq(pd->name(pd->ctx, 100, 0), "train.py");
	cr_assert_eq(pd->start_ns, 55 * S, "the span asked for");
	cr_assert_eq(pd->end_ns, 65 * S);
	frozen_join__free(j);
}

/* ---- the ring ---- */

static char dump_dir[256];
static uint64_t keep_bytes = 1ull << 30; /* new_flight's --dump-keep-mb */

static struct flight *new_flight(size_t max_bytes, unsigned keep)
{
	struct flight_opts o = {.max_bytes = max_bytes,
				.max_age_ns = 3600 * S,
				.dir = dump_dir,
				.keep = keep,
				.keep_bytes = keep_bytes,
				.host = "test"};
	char msg[256];
	struct flight *f;

	snprintf(dump_dir, sizeof(dump_dir), "/tmp/xsprof-test-flight-XXXXXX");
	cr_assert(mkdtemp(dump_dir));
	f = flight__new(&o, msg, sizeof(msg));
	cr_assert(f, "%s", msg);
	return f;
}

static void remove_dir(const char *path)
{
	char cmd[512];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", path);
	cr_assert_eq(system(cmd), 0);
}

Test(flight, holds_its_cap_over_ten_minutes_of_ten_thousand_kernels_a_second, .timeout = 240)
{
	size_t cap = 64u << 20;
	struct flight *f = new_flight(cap, 5);
	struct flight_stats st;
	struct mallinfo2 before = mallinfo2(), now;

	/* 60 slices of 10 s, 100,000 kernels each (and their launches, joins, samples). */
	for (int i = 0; i < 60; i++) {
		flight__keep(f, freeze(100, 1000, (uint64_t)i * 10 * S, 100000));
		flight__stats(f, &st);
		cr_assert_leq(st.bytes, cap, "slice %d: the ring holds %zu of %zu", i, st.bytes,
			      cap);
	}
	flight__stats(f, &st);
	now = mallinfo2();
	cr_assert_gt(st.evicted_cap, 0);
	cr_assert_gt(st.parts, 1);
	/* What the process holds follows the ring: within its cap and a slice's copy. */
	cr_assert_leq(now.uordblks, before.uordblks + cap + (32u << 20), "heap %zu -> %zu",
		      before.uordblks, now.uordblks);
	cr_log_info("ring: %zu parts, %zu MiB, %llu evicted at the cap", st.parts, st.bytes >> 20,
		    (unsigned long long)st.evicted_cap);
	flight__free(f);
	remove_dir(dump_dir);
}

Test(flight, the_user_holding_the_most_loses_first)
{
	struct flight *f;
	struct flight_stats st;
	size_t one;
	struct frozen *probe = freeze(100, 1000, 0, 2000);

	one = frozen__bytes(probe);
	frozen__put(probe);
	f = new_flight(6 * one + one / 2, 5);
	/* A member's process floods (4 slices per round), root's keeps one slice a round. */
	for (int i = 0; i < 6; i++) {
		for (int k = 0; k < 4; k++)
			flight__keep(f, freeze(100, 1000, (uint64_t)(i * 4 + k) * 10 * S, 2000));
		flight__keep(f, freeze(200, 0, (uint64_t)i * 10 * S, 2000));
	}
	flight__stats(f, &st);
	cr_assert_eq(st.users, 2);
	cr_assert_leq(st.bytes, 6 * one + one / 2);
	{
		struct json_object *a;
		uint64_t now = clock__mono_ns();
		char name[64];

		/* Root's dump holds root's parts only when asked for its own (not all). */
		cr_assert_eq(flight__request(f, 0, false, 3600, 0, NULL, now, name, sizeof(name)),
			     0);
		a = flight__list_json(f, 0, false);
		cr_assert_eq(json_object_array_length(a), 1);
		json_object_put(a);
		a = flight__list_json(f, 1000, false);
		cr_assert_eq(json_object_array_length(a), 0, "a member sees root's dump");
		json_object_put(a);
	}
	flight__free(f);
	remove_dir(dump_dir);
}

/* Wait for the writer to say a dump is done, and settle it. */
static void reap(struct flight *f)
{
	struct pollfd p = {.fd = flight__fd(f), .events = POLLIN};

	cr_assert_eq(poll(&p, 1, 30000), 1, "the writer said nothing in 30 s");
	flight__reap(f);
}

static const char *state_of(struct flight *f, const char *name, uint32_t uid, bool all)
{
	char path[512], err[256];

	return flight__find(f, name, uid, all, path, sizeof(path), err, sizeof(err));
}

Test(flight, slow_step_trips_once_per_cooldown_and_its_dump_is_whole, .timeout = 60)
{
	struct flight *f = new_flight(256u << 20, 2);
	struct flight_rule r;
	char msg[256], name[64] = "", path[512], err[256];
	struct flight_stats st;
	uint64_t t = clock__mono_ns() - 40 * S;
	struct json_object *a, *m, *v;

	cr_assert_eq(
		flight_rule__parse("slow-step,range=step,factor=3,after=0", &r, msg, sizeof(msg)),
		0);
	cr_assert_eq(flight__add_rule(f, &r, NULL), 0);
	flight__keep(f, freeze(100, 1000, t, 300));
	flight__keep(f, freeze(100, 1000, t + 10 * S, 300));
	/* 20 steps of 100 ms, and one of 150 ms: slower, not 3 times. */
	for (int i = 0; i < 20; i++)
		flight__on_range(f, 100, 1000, "step", t + i * 200 * MS,
				 t + i * 200 * MS + 100 * MS);
	flight__on_range(f, 100, 1000, "step", t + 5 * S, t + 5 * S + 150 * MS);
	flight__on_range(f, 100, 1000, "other", t + 6 * S, t + 16 * S);
	flight__stats(f, &st);
	cr_assert_eq(st.pending, 0, "no trip yet");
	/* 500 ms: 5 times the median, ending with the second slice. */
	flight__on_range(f, 100, 1000, "step", t + 19500 * MS, t + 20 * S);
	flight__stats(f, &st);
	cr_assert_eq(st.pending, 1);
	/* Again within the cooldown: held back, counted. */
	flight__on_range(f, 100, 1000, "step", t + 20 * S, t + 20 * S + 600 * MS);
	flight__stats(f, &st);
	cr_assert_eq(st.pending, 1);
	cr_assert_eq(st.suppressed[FLIGHT_SLOW_STEP], 1);
	cr_assert_leq(flight__next_due(f), clock__mono_ns());
	flight__start_due(f, clock__mono_ns());
	reap(f);
	a = flight__list_json(f, 1000, false);
	cr_assert_eq(json_object_array_length(a), 1);
	snprintf(name, sizeof(name), "%s",
		 json_object_get_string(
			 json_object_object_get(json_object_array_get_idx(a, 0), "name")));
	json_object_put(a);
	cr_assert_str_eq(flight__find(f, name, 1000, false, path, sizeof(path), err, sizeof(err)),
			 "done", "%s", err);
	strcat(path, "/manifest.json");
	m = json_object_from_file(path);
	cr_assert(m);
	cr_assert(json_object_object_get_ex(m, "trigger", &v));
	cr_assert_str_eq(json_object_get_string(json_object_object_get(v, "kind")), "slow-step");
	v = json_object_object_get(v, "step");
	cr_assert_float_eq(json_object_get_double(json_object_object_get(v, "times_median")), 5.0,
			   0.01);
	v = json_object_object_get(m, "counts");
	cr_assert_eq(json_object_get_int(json_object_object_get(v, "kernels")), 600);
	v = json_object_object_get(
		json_object_array_get_idx(json_object_object_get(m, "processes"), 0), "labels");
	cr_assert_str_eq(json_object_get_string(json_object_object_get(v, "job.rank")), "3");
	json_object_put(m);
	{
		const char *files[] = {"trace.json",	"timeline.json", "gpu-report.json",
				       "profile.pb.gz", "stacks.folded", "job.json"};
		char p[600];
		struct stat sb;

		for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
			snprintf(p, sizeof(p), "%s/%s/%s", dump_dir, name, files[i]);
			cr_assert_eq(stat(p, &sb), 0, "%s", p);
			cr_assert_gt(sb.st_size, 0, "%s", p);
		}
	}
	cr_assert_null(state_of(f, name, 2000, false), "another member finds it");
	flight__free(f);
	remove_dir(dump_dir);
}

Test(flight, hang_death_and_gpu_idle_trip_where_they_should, .timeout = 60)
{
	struct flight *f = new_flight(256u << 20, 10);
	const char *specs[] = {"hang,seconds=5", "death", "gpu-idle,percent=40,seconds=20"};
	struct flight_stats st;
	uint64_t now = clock__mono_ns();
	char msg[256];

	for (size_t i = 0; i < 3; i++) {
		struct flight_rule r;

		cr_assert_eq(flight_rule__parse(specs[i], &r, msg, sizeof(msg)), 0);
		cr_assert_eq(flight__add_rule(f, &r, NULL), 0);
	}
	/* A wait that returns in time, and one that does not. */
	flight__on_wait(f, 100, 101, 1000, "cudaStreamSynchronize", now - 8 * S, 0);
	flight__on_wait(f, 100, 101, 1000, "cudaStreamSynchronize", now - 8 * S, now - 7 * S);
	flight__on_wait(f, 100, 102, 1000, "cudaDeviceSynchronize", now - 3 * S, 0);
	flight__tick(f, now);
	flight__stats(f, &st);
	cr_assert_eq(st.pending, 0, "no wait has lasted 5 s");
	flight__tick(f, now + 3 * S);
	flight__stats(f, &st);
	cr_assert_eq(st.pending, 1, "the one still waiting after 5 s");
	flight__tick(f, now + 4 * S);
	flight__stats(f, &st);
	cr_assert_eq(st.pending, 1, "once per wait");
	/* A collective's NVTX range still open (hang,range=): once it has been 10 s. */
	{
		struct flight_rule r;

		cr_assert_eq(
			flight_rule__parse("hang,seconds=10,range=allreduce", &r, msg, sizeof(msg)),
			0);
		cr_assert_eq(flight__add_rule(f, &r, NULL), 0);
		flight__on_open_range(f, 100, 1000, 103, "allreduce", now - 4 * S, now);
		flight__on_open_range(f, 100, 1000, 104, "forward", now - 40 * S, now);
		flight__stats(f, &st);
		cr_assert_eq(st.pending, 1, "not yet 10 s open; another name");
		flight__on_open_range(f, 100, 1000, 103, "allreduce", now - 4 * S, now + 7 * S);
		flight__on_open_range(f, 100, 1000, 103, "allreduce", now - 4 * S, now + 8 * S);
		flight__stats(f, &st);
		cr_assert_eq(st.pending, 2, "open 11 s: once");
		flight__remove_rule(f, 4);
	}
	/* Death: a GPU process killed, another that exited, one nobody knew of. */
	flight__on_exit(f, 300, 1000, "train", 0, now, true);
	flight__on_exit(f, 301, 1000, "other", 9, now, false);
	flight__stats(f, &st);
	cr_assert_eq(st.pending, 2);
	flight__on_exit(f, 302, 1000, "train", 11, now, true);
	flight__stats(f, &st);
	cr_assert_eq(st.pending, 3);
	/* GPU idle: a compute-bound process (5% idle), then an input-bound one (70%). */
	for (int i = 0; i < 3; i++) {
		uint64_t s0 = now + (uint64_t)i * 10 * S;

		flight__on_gpu_figures(f, 400, 1000, "compute", 0, s0, s0 + 10 * S, 9500 * MS,
				       500 * MS);
	}
	flight__stats(f, &st);
	cr_assert_eq(st.pending, 3, "compute-bound: no trip");
	flight__on_gpu_figures(f, 500, 1000, "input", 0, now, now + 10 * S, 3 * S, 7 * S);
	flight__stats(f, &st);
	cr_assert_eq(st.pending, 3, "10 s seen of the 20 asked: not yet");
	flight__on_gpu_figures(f, 500, 1000, "input", 0, now + 10 * S, now + 20 * S, 3 * S, 7 * S);
	flight__stats(f, &st);
	cr_assert_eq(st.pending, 4, "input-bound over 20 s: a trip");
	flight__free(f);
	remove_dir(dump_dir);
}

Test(flight, keeps_the_newest_dumps_and_lists_them_again_at_start, .timeout = 60)
{
	struct flight *f = new_flight(256u << 20, 2);
	struct flight_opts o = {.max_bytes = 1 << 20,
				.max_age_ns = 60 * S,
				.keep = 2,
				.keep_bytes = 1ull << 30,
				.host = "test"};
	char name[3][64], msg[256];
	struct json_object *a;
	int n = 0;
	DIR *d;
	struct dirent *e;

	flight__keep(f, freeze(100, 1000, clock__mono_ns() - 20 * S, 100));
	for (int i = 0; i < 3; i++) {
		cr_assert_eq(flight__request(f, 0, true, 60, 0, "by hand", clock__mono_ns(),
					     name[i], sizeof(name[i])),
			     0);
		flight__start_due(f, clock__mono_ns());
		reap(f);
	}
	cr_assert_null(state_of(f, name[0], 0, true), "the oldest went");
	cr_assert_str_eq(state_of(f, name[2], 0, true), "done");
	d = opendir(dump_dir);
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	cr_assert_eq(n, 2);
	flight__free(f);
	/* A service started again lists them. */
	o.dir = dump_dir;
	f = flight__new(&o, msg, sizeof(msg));
	cr_assert(f, "%s", msg);
	a = flight__list_json(f, 0, true);
	cr_assert_eq(json_object_array_length(a), 2);
	cr_assert_str_eq(json_object_get_string(
				 json_object_object_get(json_object_array_get_idx(a, 0), "name")),
			 name[2]);
	cr_assert_str_eq(json_object_get_string(json_object_object_get(
				 json_object_array_get_idx(a, 0), "trigger")),
			 "manual");
	json_object_put(a);
	flight__free(f);
	remove_dir(dump_dir);
}

Test(flight, keeps_its_dumps_within_their_bytes, .timeout = 60)
{
	struct flight *f;
	struct flight_stats st;
	char name[4][64];

	keep_bytes = 1; /* every dump is more: only the newest stays */
	f = new_flight(256u << 20, 100);
	keep_bytes = 1ull << 30;
	flight__keep(f, freeze(100, 1000, clock__mono_ns() - 20 * S, 100));
	for (int i = 0; i < 4; i++) {
		cr_assert_eq(flight__request(f, 0, true, 60, 0, NULL, clock__mono_ns(), name[i],
					     sizeof(name[i])),
			     0);
		flight__start_due(f, clock__mono_ns());
		reap(f);
	}
	flight__stats(f, &st);
	cr_assert_eq(st.dumps, 1);
	cr_assert_eq(st.dumps_removed, 3);
	cr_assert_str_eq(state_of(f, name[3], 0, true), "done", "the newest always stays");
	flight__free(f);
	remove_dir(dump_dir);
}

Test(flight, a_user_holds_half_the_trigger_tables_at_most)
{
	struct flight *f = new_flight(256u << 20, 10);
	struct flight_rule r;
	struct flight_stats st;
	uint64_t now = clock__mono_ns();
	char msg[256];

	cr_assert_eq(flight_rule__parse("hang,seconds=5", &r, msg, sizeof(msg)), 0);
	cr_assert_eq(flight__add_rule(f, &r, NULL), 0);
	cr_assert_eq(flight_rule__parse("slow-step,range=step,factor=3,min-steps=3", &r, msg,
					sizeof(msg)),
		     0);
	cr_assert_eq(flight__add_rule(f, &r, NULL), 0);
	/* A member's 3,000 threads in synchronize: 2,048 watched, the rest counted. */
	for (uint32_t t = 0; t < 3000; t++)
		flight__on_wait(f, 100, 10000 + t, 1000, "cudaStreamSynchronize", now, 0);
	flight__stats(f, &st);
	cr_assert_eq(st.tables_full, 3000 - 2048);
	/* Root's wait is still watched: it trips. */
	flight__on_wait(f, 200, 20000, 0, "cudaDeviceSynchronize", now - 10 * S, 0);
	flight__tick(f, now + 1 * S);
	flight__stats(f, &st);
	cr_assert_geq(st.pending, 1, "root's hang was not watched");
	/* The member's process exits: its waits go, room for the member again. */
	flight__on_exit(f, 100, 1000, "train", 0, now, true);
	flight__on_wait(f, 101, 30000, 1000, "cudaStreamSynchronize", now, 0);
	flight__stats(f, &st);
	cr_assert_eq(st.tables_full, 3000 - 2048);
	/* A member's 300 range names: root's step history stays, its slow step trips. */
	for (int i = 0; i < 5; i++)
		flight__on_range(f, 200, 0, "step", now + i * S, now + i * S + 100 * MS);
	for (int i = 0; i < 300; i++) {
		char name[32];

		snprintf(name, sizeof(name), "r%d", i);
		flight__on_range(f, 101, 1000, name, now, now + MS);
	}
	flight__stats(f, &st);
	size_t before = st.pending;
	flight__on_range(f, 200, 0, "step", now + 10 * S, now + 10 * S + 900 * MS);
	flight__stats(f, &st);
	cr_assert_eq(st.pending, before + 1, "root's steps were pushed out");
	flight__free(f);
	remove_dir(dump_dir);
}

/* Issue 53 H6: an outsider's 500 ranges left open under a hang rule's name, seen tick after tick,
 * are 5 warning lines and a count, not one line each (44,502 in 10 s). */
Test(flight, a_flood_of_one_trigger_kind_is_a_few_lines_and_a_count, .timeout = 60)
{
	struct flight *f = new_flight(256u << 20, 10);
	struct flight_rule r;
	struct flight_stats st;
	uint64_t now = clock__mono_ns();
	char msg[256], line[512];
	FILE *log = tmpfile();
	int saved = dup(2);
	size_t lines = 0, calls = 0;

	cr_assert(log && saved >= 0);
	cr_assert_eq(flight_rule__parse("hang,seconds=5,range=allreduce", &r, msg, sizeof(msg)), 0);
	cr_assert_eq(flight__add_rule(f, &r, NULL), 0);
	fflush(stderr);
	cr_assert_eq(dup2(fileno(log), 2), 2);
	for (int tick = 0; tick < 20; tick++)
		for (uint32_t tid = 1; tid <= 500; tid++, calls++)
			flight__on_open_range(f, 4242, 65534, tid, "allreduce", now - 60 * S,
					      now + (uint64_t)tick * S / 2);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	rewind(log);
	while (fgets(line, sizeof(line), log))
		lines += strstr(line, "has been open for") != NULL;
	fclose(log);
	flight__stats(f, &st);
	cr_expect_leq(lines, 5, "%zu warning lines for one flood", lines);
	cr_expect_geq(lines, 1, "the flood is still said");
	cr_expect_geq(st.log_lines_held_back, 500 - 5, "held back: %llu",
		      (unsigned long long)st.log_lines_held_back);
	flight__free(f);
}

/* Issue 53 H2: retention is per user. Root's dump of every user stays while a member asks for
 * more dumps than --dump-keep (2) allows; the member's own oldest goes. */
Test(flight, a_members_dumps_never_remove_roots, .timeout = 60)
{
	struct flight *f = new_flight(256u << 20, 2);
	char root_dump[64], mine[3][64];

	flight__keep(f, freeze(100, 1000, clock__mono_ns() - 20 * S, 100));
	cr_assert_eq(flight__request(f, 0, true, 60, 0, "incident", clock__mono_ns(), root_dump,
				     sizeof(root_dump)),
		     0);
	flight__start_due(f, clock__mono_ns());
	reap(f);
	for (int i = 0; i < 3; i++) {
		cr_assert_eq(flight__request(f, 1000, false, 60, 0, "mine", clock__mono_ns(),
					     mine[i], sizeof(mine[i])),
			     0);
		flight__start_due(f, clock__mono_ns());
		reap(f);
	}
	cr_expect_str_eq(state_of(f, root_dump, 0, true), "done", "root's dump was removed");
	cr_expect_null(state_of(f, mine[0], 0, true), "the member's oldest went");
	cr_expect_str_eq(state_of(f, mine[1], 0, true), "done");
	cr_expect_str_eq(state_of(f, mine[2], 0, true), "done");
	flight__free(f);
	remove_dir(dump_dir);
}

/* The dump directory is ours: one another user owns, or others may write, is refused at
 * start with the reason (in it, a bundle swapped for a link would have root remove what the
 * link points at). */
Test(flight, a_dump_directory_others_may_write_is_refused)
{
	struct flight_opts o = {.max_bytes = 64u << 20,
				.max_age_ns = 3600 * S,
				.dir = dump_dir,
				.keep = 4,
				.keep_bytes = keep_bytes,
				.host = "test"};
	char msg[512];
	struct flight *f;

	snprintf(dump_dir, sizeof(dump_dir), "/tmp/xsprof-test-flight-XXXXXX");
	cr_assert(mkdtemp(dump_dir));
	cr_assert_eq(chmod(dump_dir, 0777), 0);
	f = flight__new(&o, msg, sizeof(msg));
	cr_assert_null(f, "accepted a world-writable dump directory");
	cr_assert(strstr(msg, "writable by others") && strstr(msg, "--dump-dir"), "%s", msg);
	cr_assert_eq(chmod(dump_dir, 0750), 0);
	cr_assert_eq(chown(dump_dir, 65534, 65534), 0);
	f = flight__new(&o, msg, sizeof(msg));
	cr_assert_null(f, "accepted another user's dump directory");
	cr_assert(strstr(msg, "another user's"), "%s", msg);
	cr_assert_eq(chown(dump_dir, geteuid(), getegid()), 0);
	f = flight__new(&o, msg, sizeof(msg));
	cr_assert_not_null(f, "%s", msg);
	flight__free(f);
	remove_dir(dump_dir);
}

/* Removing a bundle never follows a link: a bundle swapped for a link to another directory,
 * and a file in a bundle swapped for a link, are removed as links; what they point at stays. */
Test(flight, removing_a_dump_never_follows_a_link)
{
	char dir[] = "/tmp/xsprof-test-dumps-XXXXXX", victim[] = "/tmp/xsprof-test-victim-XXXXXX";
	char p[512], q[512];
	struct stat st;
	int fd;

	cr_assert(mkdtemp(dir) && mkdtemp(victim));
	snprintf(p, sizeof(p), "%s/keep", victim);
	fd = open(p, O_WRONLY | O_CREAT, 0600);
	cr_assert_geq(fd, 0);
	close(fd);
	/* A bundle that is a link to the victim's directory. */
	snprintf(q, sizeof(q), "%s/20261204-000000-manual-1", dir);
	cr_assert_eq(symlink(victim, q), 0);
	dump__remove(dir, "20261204-000000-manual-1");
	cr_assert_eq(stat(p, &st), 0, "the link's target lost its file");
	cr_assert_neq(lstat(q, &st), 0, "the link was not removed");
	/* A bundle whose file is a link to the victim's file. */
	snprintf(q, sizeof(q), "%s/20261204-000001-manual-2", dir);
	cr_assert_eq(mkdir(q, 0750), 0);
	snprintf(q, sizeof(q), "%s/20261204-000001-manual-2/profile.folded", dir);
	cr_assert_eq(symlink(p, q), 0);
	dump__remove(dir, "20261204-000001-manual-2");
	cr_assert_eq(stat(p, &st), 0, "the linked file was removed");
	snprintf(q, sizeof(q), "%s/20261204-000001-manual-2", dir);
	cr_assert_neq(lstat(q, &st), 0, "the bundle was not removed");
	remove_dir(dir);
	remove_dir(victim);
}

/* Cooldowns and hourly limits are per (rule, user): an outsider's dying process made the one
 * death dump of the cooldown, and root's death 5 s later was held back (issue 53 H1). */
Test(flight, another_users_trip_never_holds_back_roots, .timeout = 60)
{
	struct flight *f = new_flight(256u << 20, 10);
	struct flight_stats st;
	struct flight_rule r;
	uint64_t now = clock__mono_ns();
	char msg[256];

	cr_assert_eq(flight_rule__parse("death,cooldown=300", &r, msg, sizeof(msg)), 0);
	cr_assert_eq(flight__add_rule(f, &r, NULL), 0);
	flight__on_exit(f, 300, 65534, "outsider", 9, now, true);
	flight__stats(f, &st);
	cr_assert_eq(st.pending, 1, "the outsider's death");
	flight__on_exit(f, 301, 65534, "outsider", 9, now + 1 * S, true);
	flight__stats(f, &st);
	cr_assert_eq(st.pending, 1, "the outsider's second, within its cooldown: held back");
	flight__on_exit(f, 302, 0, "train", 9, now + 5 * S, true);
	flight__stats(f, &st);
	cr_assert_eq(st.pending, 2, "root's death is not held back by the outsider's");
	flight__on_exit(f, 303, 0, "train", 9, now + 6 * S, true);
	flight__stats(f, &st);
	cr_assert_eq(st.pending, 2, "root's own cooldown holds");
	flight__free(f);
	remove_dir(dump_dir);
}

/* A dump has a byte budget checked while it is written (issue 53 H3: a member's flood made one
 * 391 MiB dump, the cap checked only after): past --dump-keep-mb the file being written and
 * those after it are left out, and the manifest says so. */
Test(flight, a_dump_stays_within_its_budget_while_written, .timeout = 60)
{
	struct flight_stats st;
	struct flight *f;
	char name[64], path[512], *text;
	struct json_object *m, *v;
	uint64_t bytes;

	keep_bytes = 256u << 10;
	f = new_flight(256u << 20, 100);
	keep_bytes = 1ull << 30;
	flight__keep(f, freeze(100, 1000, clock__mono_ns() - 20 * S, 20000));
	cr_assert_eq(flight__request(f, 0, true, 60, 0, NULL, clock__mono_ns(), name, sizeof(name)),
		     0);
	flight__start_due(f, clock__mono_ns());
	reap(f);
	cr_assert_str_eq(state_of(f, name, 0, true), "done");
	snprintf(path, sizeof(path), "%s/%s", dump_dir, name);
	bytes = dump__bytes(path);
	cr_assert_leq(bytes, 256u << 10, "%" PRIu64 " bytes past a 256 KiB budget", bytes);
	snprintf(path, sizeof(path), "%s/%s/manifest.json", dump_dir, name);
	m = json_object_from_file(path);
	cr_assert_not_null(m, "no manifest");
	cr_assert(json_object_object_get_ex(m, "partial", &v) && json_object_get_boolean(v),
		  "not marked partial");
	cr_assert(json_object_object_get_ex(m, "partial_reason", &v));
	text = (char *)json_object_get_string(v);
	cr_assert(strstr(text, "budget of 0.2 MiB"), "%s", text);
	json_object_put(m);
	flight__stats(f, &st);
	cr_assert_eq(st.dumps_partial, 1);
	flight__free(f);
	remove_dir(dump_dir);
}
