// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/base/fileio.h"
#include "daemon/base/proc_env.h"

enum what { RANK, LOCAL_RANK, WORLD_SIZE, JOB_ID };

/* In order of precedence within each kind. */
static const struct {
	const char *name;
	enum what what;
	const char *launcher;
} known[] = {
	{"RANK", RANK, "torchrun"},
	{"OMPI_COMM_WORLD_RANK", RANK, "mpi"},
	{"PMI_RANK", RANK, "pmi"},
	{"SLURM_PROCID", RANK, "slurm"},
	{"LOCAL_RANK", LOCAL_RANK, "torchrun"},
	{"SLURM_LOCALID", LOCAL_RANK, "slurm"},
	{"WORLD_SIZE", WORLD_SIZE, "torchrun"},
	{"OMPI_COMM_WORLD_SIZE", WORLD_SIZE, "mpi"},
	{"PMI_SIZE", WORLD_SIZE, "pmi"},
	{"TORCHELASTIC_RUN_ID", JOB_ID, "torchrun"},
	{"SLURM_JOB_ID", JOB_ID, "slurm"},
};

#define NKNOWN (sizeof(known) / sizeof(known[0]))

/* A decimal in [0, 2^31): ranks and sizes; anything else is not one. */
static int64_t number(const char *s, size_t n)
{
	int64_t v = 0;

	if (!n || n > 10)
		return -1;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		v = v * 10 + (s[i] - '0');
	}
	return v < PROC_JOB_MAX_WORLD ? v : -1;
}

void proc_env__job_of(const char *env, size_t len, struct proc_job *ret)
{
	size_t best[4] = {NKNOWN, NKNOWN, NKNOWN, NKNOWN}; /* known[] index of each kind's value */
	const char *val[NKNOWN] = {0};
	size_t vlen[NKNOWN] = {0};
	const char *p = env, *end = env + len;

	memset(ret, 0, sizeof(*ret));
	ret->rank = ret->local_rank = ret->world_size = -1;
	while (p < end) {
		const char *nul = memchr(p, '\0', (size_t)(end - p)), *eq;
		size_t n = nul ? (size_t)(nul - p) : (size_t)(end - p);

		eq = memchr(p, '=', n);
		for (size_t i = 0; eq && i < NKNOWN; i++) {
			if ((size_t)(eq - p) == strlen(known[i].name) &&
			    !memcmp(p, known[i].name, (size_t)(eq - p))) {
				val[i] = eq + 1;
				vlen[i] = n - (size_t)(eq - p) - 1;
			}
		}
		p += n + 1;
	}
	for (size_t i = 0; i < NKNOWN; i++) {
		enum what w = known[i].what;

		if (!val[i] || best[w] < NKNOWN)
			continue;
		if (w == JOB_ID) {
			if (!vlen[i] || vlen[i] >= sizeof(ret->job_id))
				continue;
			memcpy(ret->job_id, val[i], vlen[i]);
			ret->job_id[vlen[i]] = '\0';
		} else {
			int64_t v = number(val[i], vlen[i]);

			if (v < 0)
				continue;
			*(w == RANK	    ? &ret->rank
			  : w == LOCAL_RANK ? &ret->local_rank
					    : &ret->world_size) = v;
		}
		best[w] = i;
	}
	/* The launcher is the one that said the rank, else the job. */
	if (best[RANK] < NKNOWN)
		ret->launcher = known[best[RANK]].launcher;
	else if (best[JOB_ID] < NKNOWN)
		ret->launcher = known[best[JOB_ID]].launcher;
}

int proc_env__job(const char *proc, uint32_t pid, struct proc_job *ret)
{
	char path[256], *buf = NULL;
	size_t len = 0;
	int err;

	snprintf(path, sizeof(path), "%s/%u/environ", proc ? proc : "/proc", pid);
	err = file__read_all(path, PROC_ENV_MAX, &buf, &len);
	if (err == -EFBIG) {
		/* Past the cap: what was read is enough for a launcher's variables, usually. */
		FILE *f = fopen(path, "re");

		buf = malloc(PROC_ENV_MAX);
		len = f && buf ? fread(buf, 1, PROC_ENV_MAX, f) : 0;
		if (f)
			fclose(f);
		err = buf ? 0 : -ENOMEM;
	}
	if (err)
		return err;
	proc_env__job_of(buf, len, ret);
	free(buf);
	return 0;
}
