// SPDX-License-Identifier: Apache-2.0
/* Merged CPU+GPU call trees (modes, units) and choosing the GPU-aware formats. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "output/analyses.h"
#include "output/model/calltree.h"
#include "output/output.h"
#include "output/model/profile.h"
#include "tests/lib/test_gpu_fixture.h"

static char *folded_of(const struct profile_data *pd)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	cr_assert(f);
	cr_assert_eq(output__write_profile(pd, OUTPUT_FOLDED, f, NULL), 0);
	cr_assert_eq(fclose(f), 0);
	return buf;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The lines of text, sorted, joined with '|' (order of lines is the tree's, not the test's). */
static char *sorted_lines(char *text)
{
	char *lines[64], *save = NULL, *tok, *out;
	size_t n = 0, i, len = 1;

	for (tok = strtok_r(text, "\n", &save); tok && n < 64; tok = strtok_r(NULL, "\n", &save))
		lines[n++] = tok;
	qsort(lines, n, sizeof(*lines), cmp_str);
	for (i = 0; i < n; i++)
		len += strlen(lines[i]) + 1;
	out = calloc(1, len);
	for (i = 0; i < n; i++) {
		strcat(out, lines[i]);
		strcat(out, "|");
	}
	return out;
}

static void expect_folded(enum gpu_mode mode, enum weight_unit unit, const char *const *want,
			  size_t n)
{
	struct profile_data pd;
	char *text, *got, *exp;
	size_t i, len = 1;

	fx_profile(&pd, mode, unit);
	text = folded_of(&pd);
	got = sorted_lines(text);
	for (i = 0; i < n; i++)
		len += strlen(want[i]) + 1;
	exp = calloc(1, len);
	for (i = 0; i < n; i++) {
		strcat(exp, want[i]);
		strcat(exp, "\n");
	}
	free(text);
	text = exp;
	exp = sorted_lines(text);
	cr_expect_str_eq(got, exp, "mode %s unit %s\ngot  %s\nwant %s", profile__mode_name(mode),
			 profile__unit_name(unit), got, exp);
	free(text);
	free(got);
	free(exp);
}

static const char *const cpu_samples[] = {
	"trainer;main;train_step;forward;matmul_cpu 2",
	"trainer;main;train_step;forward;cudaLaunchKernel 1",
	"trainer;main;load;decode 1",
	"trainer;[unknown] 1",
};

static const char *const gpu_samples[] = {
	"# xsprof folded stacks: mode gpu, weights in samples (GPU time as samples at the CPU "
	"sampling rate)",
	"trainer;main;train_step;forward;cudaLaunchKernel;[gpu] gemm<float> 5",
	"trainer;main;train_step;backward;cudaLaunchKernel;[gpu] relu 8",
	"trainer;main;load;cudaMemcpyAsync;[gpu] memcpy HtoD 3",
	"trainer;main;train_step;cudaGraphLaunch;[gpu] g1 1",
	"trainer;main;train_step;cudaGraphLaunch;[gpu] g2 1",
	"trainer;main;train_step;cudaGraphLaunch;[gpu] g3 2",
	"other;main;infer;cudaLaunchKernel;[gpu] conv 3",
	"trainer;main;sync;cudaStreamSynchronize;[gpu] sync 4",
	"trainer;[no launch stack];[gpu] orphan\x01?<&> 2", /* \xff is not UTF-8: repaired */
};

Test(profile, cpu_mode_is_the_cpu_profile)
{
	static const char *const in_us[] = {
		"# xsprof folded stacks: mode cpu, weights in us",
		"trainer;main;train_step;forward;matmul_cpu 200",
		"trainer;main;train_step;forward;cudaLaunchKernel 100",
		"trainer;main;load;decode 100",
		"trainer;[unknown] 100",
	};

	/* In samples, exactly the foundation's folded file: no header line. */
	expect_folded(GPU_MODE_CPU, WEIGHT_SAMPLES, cpu_samples, 4);
	expect_folded(GPU_MODE_CPU, WEIGHT_US, in_us, 5);
}

/* An off-CPU or wall profile's header names its CPU mode, with the GPU mode when GPU time is
 * in too. */
Test(profile, the_header_names_an_off_cpu_or_wall_mode)
{
	struct output_meta meta = {.cpu_mode = "offcpu"};
	struct profile_data pd;
	char *buf = NULL;
	size_t len = 0;
	FILE *f;

	fx_profile(&pd, GPU_MODE_CPU, WEIGHT_US);
	f = open_memstream(&buf, &len);
	cr_assert(f);
	cr_assert_eq(output__write_profile(&pd, OUTPUT_FOLDED, f, &meta), 0);
	cr_assert_eq(fclose(f), 0);
	cr_expect(!strncmp(buf, "# xsprof folded stacks: mode offcpu, weights in us\n", 51), "%s",
		  buf);
	free(buf);
	buf = NULL;
	fx_profile(&pd, GPU_MODE_MERGED, WEIGHT_US);
	meta.cpu_mode = "wall";
	f = open_memstream(&buf, &len);
	cr_assert(f);
	cr_assert_eq(output__write_profile(&pd, OUTPUT_FOLDED, f, &meta), 0);
	cr_assert_eq(fclose(f), 0);
	cr_expect(!strncmp(buf, "# xsprof folded stacks: mode merged+wall, weights in us\n", 56),
		  "%s", buf);
	free(buf);
}

Test(profile, gpu_mode_in_samples)
{
	expect_folded(GPU_MODE_GPU, WEIGHT_SAMPLES, gpu_samples, 10);
}

Test(profile, merged_in_microseconds)
{
	static const char *const want[] = {
		"# xsprof folded stacks: mode merged, weights in us",
		"trainer;main;train_step;forward;matmul_cpu 200",
		"trainer;main;train_step;forward;cudaLaunchKernel 100",
		"trainer;main;load;decode 100",
		"trainer;[unknown] 100",
		"trainer;main;train_step;forward;cudaLaunchKernel;[gpu] gemm<float> 500",
		"trainer;main;train_step;backward;cudaLaunchKernel;[gpu] relu 800",
		"trainer;main;load;cudaMemcpyAsync;[gpu] memcpy HtoD 300",
		"trainer;main;train_step;cudaGraphLaunch;[gpu] g1 100",
		"trainer;main;train_step;cudaGraphLaunch;[gpu] g2 100",
		"trainer;main;train_step;cudaGraphLaunch;[gpu] g3 200",
		"other;main;infer;cudaLaunchKernel;[gpu] conv 300",
		"trainer;main;sync;cudaStreamSynchronize;[gpu] sync 400",
		"trainer;[no launch stack];[gpu] orphan\x01?<&> 200",
	};

	expect_folded(GPU_MODE_MERGED, WEIGHT_US, want, sizeof(want) / sizeof(want[0]));
}

Test(profile, cpu_tree_is_used_and_scaled)
{
	struct profile_data pd;
	struct calltree *cpu = calltree__new(), *t = NULL;
	const char *frames[] = {"app", "main", "work"};

	cr_assert_eq(calltree__add(cpu, frames, 3, 7), 0);
	fx_profile(&pd, GPU_MODE_CPU, WEIGHT_US);
	pd.cpu_tree = cpu; /* preferred over the samples */
	cr_assert_eq(profile__build_tree(&pd, &t), 0);
	cr_expect_eq(calltree__total(t), 700);
	calltree__free(t);
	calltree__free(cpu);
}

Test(profile, short_kernels_add_up_before_rounding)
{
	struct corr_gpu_rec g[10];
	struct profile_join j[10];
	struct corr_cpu_rec l = fx_launches[0];
	struct profile_data pd = {
		.sample_period_ns = FX_PERIOD,
		.launches = &l,
		.nr_launches = 1,
		.gpu = g,
		.nr_gpu = 10,
		.joins = j,
		.nr_joins = 10,
		.stack = fx_stack,
		.mode = GPU_MODE_GPU,
		.unit = WEIGHT_SAMPLES,
	};
	struct calltree *t = NULL;
	int i;

	/* Ten 20 us kernels: 0.2 samples each, 2 samples together. */
	for (i = 0; i < 10; i++) {
		g[i] = fx_gpu[FX_K0];
		g[i].start_ns = i * FX_MS;
		g[i].end_ns = g[i].start_ns + 20 * FX_US;
		j[i] = (struct profile_join){0, (size_t)i};
	}
	cr_assert_eq(profile__build_tree(&pd, &t), 0);
	cr_expect_eq(calltree__total(t), 2);
	calltree__free(t);

	j[3].gpu = 42; /* out of range */
	cr_expect_eq(profile__build_tree(&pd, &t), -EINVAL);
	cr_expect_eq(profile__build_tree(NULL, &t), -EINVAL);
}

Test(profile, names)
{
	enum gpu_mode m;
	enum weight_unit u;
	char buf[64];

	cr_expect_eq(profile__mode_from_name("merged", &m), 0);
	cr_expect_eq(m, GPU_MODE_MERGED);
	cr_expect_eq(profile__mode_from_name("gpu", &m), 0);
	cr_expect_eq(m, GPU_MODE_GPU);
	cr_expect_eq(profile__mode_from_name("all", &m), -EINVAL);
	cr_expect_eq(profile__unit_from_name("us", &u), 0);
	cr_expect_eq(u, WEIGHT_US);
	cr_expect_eq(profile__unit_from_name("ms", &u), -EINVAL);
	cr_expect_str_eq(profile__gpu_leaf(&fx_gpu[FX_K0], buf, sizeof(buf)), "[gpu] gemm<float>");
	cr_expect_str_eq(profile__gpu_leaf(&fx_gpu[FX_S5], buf, sizeof(buf)), "[gpu] sync");
}

Test(profile, formats_by_extension_and_name)
{
	enum output_format fmt = 0;

	cr_expect_eq(output__format_from_path("trace.json", &fmt), 0);
	cr_expect_eq(fmt, OUTPUT_CHROME_JSON);
	cr_expect_eq(output__format_from_path("/tmp/x/profile.pb.gz", &fmt), 0);
	cr_expect_eq(fmt, OUTPUT_PPROF);
	cr_expect_eq(output__format_from_path("PROFILE.PB.GZ", &fmt), 0);
	cr_expect_eq(fmt, OUTPUT_PPROF);
	cr_expect_eq(output__format_from_path("dir/.pb.gz", &fmt), -EINVAL);
	cr_expect_eq(output__format_from_path("x.gz", &fmt), -EINVAL);
	cr_expect_eq(output__format_from_path("x.pb", &fmt), -EINVAL);
	cr_expect_eq(output__format_from_name("json", &fmt), 0);
	cr_expect_eq(fmt, OUTPUT_CHROME_JSON);
	cr_expect_eq(output__format_from_name("chrome", &fmt), 0);
	cr_expect_eq(fmt, OUTPUT_CHROME_JSON);
	cr_expect_eq(output__format_from_name("pprof", &fmt), 0);
	cr_expect_eq(fmt, OUTPUT_PPROF);
	cr_expect_str_eq(output__format_name(OUTPUT_CHROME_JSON), "json");
	cr_expect_str_eq(output__format_name(OUTPUT_PPROF), "pprof");
	cr_expect(output__format_needs_timeline(OUTPUT_PPROF));
	cr_expect(!output__format_needs_timeline(OUTPUT_SVG));
}

Test(profile, calltree_only_entry_points_refuse_timeline_formats)
{
	struct calltree *t = calltree__new();
	const char *frames[] = {"a", "b"};
	char path[] = "/tmp/xsprof-profile-XXXXXX";
	char file[64];
	FILE *f = fopen("/dev/null", "w");

	cr_assert(mkdtemp(path));
	cr_assert_eq(calltree__add(t, frames, 2, 1), 0);
	cr_expect_eq(output__write(t, OUTPUT_PPROF, f, NULL), -ENOTSUP);
	cr_expect_eq(output__write(t, OUTPUT_CHROME_JSON, f, NULL), -ENOTSUP);
	snprintf(file, sizeof(file), "%s/x.json", path);
	cr_expect_eq(output__write_file(t, OUTPUT_CHROME_JSON, file, NULL), -ENOTSUP);
	cr_expect_eq(access(file, F_OK), -1, "nothing written");
	cr_expect_eq(rmdir(path), 0, "no temporary file left behind");
	fclose(f);
	calltree__free(t);
}

Test(profile, every_format_through_the_file_entry_point)
{
	static const enum output_format fmts[] = {OUTPUT_FOLDED, OUTPUT_SVG, OUTPUT_CHROME_JSON,
						  OUTPUT_PPROF};
	static const char *const names[] = {"p.folded", "p.svg", "p.json", "p.pb.gz"};
	static const char magic[][6] = {"train", "<?xml", "{\"tra", "\x1f\x8b"};
	struct profile_data pd;
	char dir[] = "/tmp/xsprof-profile-XXXXXX", file[96], head[8];
	size_t i;

	fx_profile(&pd, GPU_MODE_MERGED, WEIGHT_US);
	cr_assert(mkdtemp(dir));
	for (i = 0; i < 4; i++) {
		enum output_format fmt;
		FILE *f;

		snprintf(file, sizeof(file), "%s/%s", dir, names[i]);
		cr_assert_eq(output__format_from_path(file, &fmt), 0);
		cr_assert_eq(fmt, fmts[i]);
		cr_assert_eq(output__write_profile_file(&pd, fmt, file, NULL), 0, "%s", names[i]);
		f = fopen(file, "re");
		cr_assert(f);
		memset(head, 0, sizeof(head));
		cr_assert_gt(fread(head, 1, 5, f), 1);
		fclose(f);
		if (i == 0) /* a merged folded file states its unit first */
			cr_expect_eq(strncmp(head, "# xsp", 5), 0);
		else
			cr_expect_eq(memcmp(head, magic[i], strlen(magic[i])), 0, "%s", names[i]);
		unlink(file);
	}
	rmdir(dir);
}

/* What fmt writes from pd with meta, as a string (NULL when the write failed: *ret_err). */
static char *written(const struct profile_data *pd, enum output_format fmt,
		     const struct output_meta *meta, int *ret_err)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	cr_assert(f);
	*ret_err = output__write_profile(pd, fmt, f, meta);
	fclose(f);
	if (*ret_err) {
		free(buf);
		return NULL;
	}
	return buf;
}

/* A session's reports are built once, by its mode layer, for every format that reads them:
 * the writers render what they are handed, the same bytes as a report built for each alone. */
Test(profile, formats_share_the_analyses_built_once)
{
	static const enum output_format needs_gpu[] = {OUTPUT_GPU_REPORT, OUTPUT_GPU_TEXT,
						       OUTPUT_OTLP};
	struct output_analyses an = {0}, alone = {0};
	struct output_meta meta = {0}, meta_alone = {0};
	struct profile_data pd;
	unsigned int needs = 0;
	int err;

	fx_profile(&pd, GPU_MODE_MERGED, WEIGHT_US);
	for (size_t i = 0; i < 3; i++) {
		needs |= output_analyses__needs(needs_gpu[i]);
		/* Without the analysis it needs, a format is refused, not built on the side. */
		cr_expect_null(written(&pd, needs_gpu[i], &meta, &err));
		cr_expect_eq(err, -EINVAL);
	}
	cr_expect_eq(needs, OUTPUT_NEEDS_GPU_REPORT);
	cr_expect_eq(output_analyses__needs(OUTPUT_JOB_TEXT), OUTPUT_NEEDS_JOB_REPORT);
	cr_expect_eq(output_analyses__needs(OUTPUT_FOLDED), 0);
	cr_expect_eq(output_analyses__needs(OUTPUT_CHROME_JSON), 0);

	cr_assert_eq(output_analyses__build(&pd, needs, &an), 0);
	cr_assert(an.gpu && !an.job);
	meta.an = &an;
	for (size_t i = 0; i < 3; i++) {
		char *shared = written(&pd, needs_gpu[i], &meta, &err), *own;

		cr_assert(shared, "format %d: %d", needs_gpu[i], err);
		/* The same bytes as from a report built for this format alone (OTLP's random
		 * link ids aside: its length). */
		cr_assert_eq(
			output_analyses__build(&pd, output_analyses__needs(needs_gpu[i]), &alone),
			0);
		meta_alone.an = &alone;
		own = written(&pd, needs_gpu[i], &meta_alone, &err);
		cr_assert(own);
		if (needs_gpu[i] != OUTPUT_OTLP)
			cr_expect_str_eq(shared, own);
		cr_expect_gt(strlen(shared), 0);
		output_analyses__release(&alone);
		free(shared);
		free(own);
	}
	output_analyses__release(&an);
	cr_expect_null(an.gpu);
	output_analyses__release(&an); /* twice, and a NULL: no harm */
	output_analyses__release(NULL);
}
