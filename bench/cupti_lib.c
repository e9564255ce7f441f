// SPDX-License-Identifier: Apache-2.0
/*
 * xs_cupti_lib_bench: what libxsprof_cupti.so costs per GPU record on CUPTI's thread (decode,
 * encode, queue, send), fed by the stand-in libcupti (tests/cupti_inject/fixtures/fake_cupti.c) as
 * CUPTI would feed it: buffers of BUFFER kernel records, each with one of 64 PyTorch-sized
 * mangled names, handed over at RATE records a second, for bench/cupti_lib.sh.
 *
 * Usage: xs_cupti_lib_bench RECORDS RATE [BUFFER]      (BUFFER default 1000)
 * The library sends to XSPROF_CUPTI_SOCKET (a daemon there, or nobody). Prints
 *   lib_ns_per_record X   the thread CPU time of the buffer hand-overs / RECORDS
 *   rate R                records a second achieved
 * and, at exit with XSPROF_CUPTI_VERBOSE=1, the library's "sent N records, dropped M" line.
 */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static double clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

#define SYM(h, name) dlsym(h, name)

int main(int argc, char **argv)
{
	long records = argc > 1 ? atol(argv[1]) : 0, buffer = argc > 3 ? atol(argv[3]) : 1000;
	double rate = argc > 2 ? atof(argv[2]) : 0, cpu = 0, w0;
	int (*add)(const char *, uint32_t);
	void (*complete)(void);
	int (*init)(void);
	static char names[64][256];
	void *fake, *lib;

	if (records <= 0 || rate <= 0 || buffer <= 0 || buffer > 1000) {
		fprintf(stderr, "usage: xs_cupti_lib_bench RECORDS RATE [BUFFER <= 1000]\n");
		return 2;
	}
	setenv("XSPROF_CUPTI_LIBRARY", XS_FAKE_CUPTI_LIB, 1);
	fake = dlopen(XS_FAKE_CUPTI_LIB, RTLD_NOW | RTLD_GLOBAL);
	lib = dlopen(XS_CUPTI_LIB, RTLD_NOW | RTLD_LOCAL);
	if (!fake || !lib) {
		fprintf(stderr, "xs_cupti_lib_bench: %s\n", dlerror());
		return 1;
	}
	*(void **)&add = SYM(fake, "fake_cupti_add_kernel");
	*(void **)&complete = SYM(fake, "fake_cupti_complete");
	*(void **)&init = SYM(lib, "InitializeInjection");
	if (!add || !complete || !init) {
		fprintf(stderr, "xs_cupti_lib_bench: missing symbols\n");
		return 1;
	}
	/* PyTorch's kernel names are long templates: ~150 bytes mangled. */
	for (int i = 0; i < 64; i++)
		snprintf(names[i], sizeof(names[i]),
			 "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_%02d_GLOBAL__N_1"
			 "16launch_clamp_scalarERNS_18TensorIteratorBaseEN3c106ScalarES6_NS0_6"
			 "detail11ClampLimitsEENKUlvE_clEvEUlfE_St5arrayIPcLm2EEEEviT0_T1_",
			 i);
	init();
	w0 = clock_ns(CLOCK_MONOTONIC);
	for (long i = 0; i < records;) {
		double t0, ahead;
		long n = 0;

		for (; n < buffer && i < records; n++, i++) {
			if (add(names[i % 64], (uint32_t)i + 1) < 0)
				break;
		}
		t0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
		complete();
		cpu += clock_ns(CLOCK_THREAD_CPUTIME_ID) - t0;
		ahead = w0 + i / rate * 1e9 - clock_ns(CLOCK_MONOTONIC);
		if (ahead > 0)
			usleep((useconds_t)(ahead / 1e3));
	}
	printf("lib_ns_per_record %.1f\n", cpu / records);
	printf("rate %.0f\n", records / ((clock_ns(CLOCK_MONOTONIC) - w0) / 1e9));
	fflush(stdout);
	return 0; /* exit: the library's atexit flush and its counts */
}
