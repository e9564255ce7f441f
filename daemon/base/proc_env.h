/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A process's job and rank, as its launcher put them in its environment (/proc/PID/environ):
 * torchrun (RANK, LOCAL_RANK, WORLD_SIZE, TORCHELASTIC_RUN_ID), Slurm (SLURM_JOB_ID,
 * SLURM_PROCID, SLURM_LOCALID), Open MPI (OMPI_COMM_WORLD_RANK, OMPI_COMM_WORLD_SIZE) and PMI
 * (PMI_RANK, PMI_SIZE). Where several say the same thing the first of that list wins (torchrun
 * under Slurm: torchrun's rank, Slurm's job id when torchrun names no run).
 */
#ifndef XSPROF_DAEMON_BASE_PROC_ENV_H
#define XSPROF_DAEMON_BASE_PROC_ENV_H

#include <stddef.h>
#include <stdint.h>

/* The most ranks a job can have (16 M: the largest jobs run some 100 k GPUs). A rank or world
 * size at or past it is not taken: a profiled process or a fleet host's parts could say 9e18,
 * and each report walks the world's gaps. */
#define PROC_JOB_MAX_WORLD (1 << 24)

/* Read at most this much of an environment (a process can hold megabytes). */
#define PROC_ENV_MAX (256 * 1024)

struct proc_job {
	int64_t rank, local_rank, world_size; /* -1: not said */
	char job_id[64];		      /* "": not said */
	const char *launcher;		      /* "torchrun", "slurm", "mpi", "pmi"; NULL: none */
};

/* From an environment as /proc/PID/environ has it: NUL-separated NAME=VALUE, len bytes. */
void proc_env__job_of(const char *env, size_t len, struct proc_job *ret);
/*
 * From process pid under proc ("/proc", or a test's directory). 0 (a process without any of
 * them has a job with nothing said), or -errno (-ENOENT: gone; -EACCES).
 */
int proc_env__job(const char *proc, uint32_t pid, struct proc_job *ret);

#endif
