// SPDX-License-Identifier: Apache-2.0
/*
 * A process for test_cupti_inject to load libxsprof_cupti.so into, as CUDA would, and leave
 * through exit() so the library's exit flush runs.
 *   inject_host MODE LIBXSPROF_CUPTI [LIBFAKE_CUPTI]
 * Exit status 0 when the mode's expectations held; stderr is the library's.
 */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static int (*fake_state)(void);
static unsigned (*fake_kinds)(void);
static int (*fake_add_kernel)(const char *, uint32_t);
static void (*fake_complete)(void);

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int main(int argc, char **argv)
{
	int (*init)(void);
	void *lib;

	if (argc < 3)
		return 64;
	if (argc > 3) {
		/* Opened first and globally: the library then gets this same copy by path. */
		void *fake = dlopen(argv[3], RTLD_NOW | RTLD_GLOBAL);

		if (!fake)
			return 65;
		*(void **)&fake_state = dlsym(fake, "fake_cupti_state");
		*(void **)&fake_kinds = dlsym(fake, "fake_cupti_enabled_kinds");
		*(void **)&fake_add_kernel = dlsym(fake, "fake_cupti_add_kernel");
		*(void **)&fake_complete = dlsym(fake, "fake_cupti_complete");
	}
	lib = dlopen(argv[2], RTLD_NOW | RTLD_LOCAL);
	if (!lib)
		return 66;
	*(void **)&init = dlsym(lib, "InitializeInjection");
	if (!init)
		return 67;

	if (!strcmp(argv[1], "init3")) {
		for (int i = 0; i < 3; i++) {
			if (init() != 1)
				return 3;
		}
		return 0;
	}
	if (!fake_state)
		return 68;
	if (init() != 1)
		return 2;
	if (!strcmp(argv[1], "left-alone")) {
		/* No callback kept, no activity enabled. */
		return (fake_state() & (1 | 4)) || fake_kinds() ? 10 + fake_state() : 0;
	}
	if (!strcmp(argv[1], "queue-exit")) {
		if (fake_state() != (1 | 2 | 4))
			return 10 + fake_state();
		/* Left in CUPTI's buffer: only the exit flush can deliver these. */
		fake_add_kernel("_Z9at_exit_1v", 1);
		fake_add_kernel("_Z9at_exit_2v", 2);
		return 0;
	}
	if (!strcmp(argv[1], "burst")) {
		/* 60,000 kernels with PyTorch-sized names handed over as fast as CUPTI can: more
		 * than the library's 4 MiB queue, so only a daemon read while it sends gets all. */
		static char name[160];

		memset(name, 'k', sizeof(name) - 1);
		memcpy(name, "_Z", 2);
		for (uint32_t i = 0; i < 60000; i++) {
			if (fake_add_kernel(name, i + 1) < 0) {
				fake_complete();
				if (fake_add_kernel(name, i + 1) < 0)
					return 5;
			}
		}
		fake_complete();
		return 0;
	}
	if (!strcmp(argv[1], "queue-nodaemon")) {
		uint64_t t0 = mono_ns();

		for (int i = 0; i < 100; i++)
			fake_add_kernel("_Z6nobodyv", (uint32_t)i);
		fake_complete();
		/* Nobody listens: completing a buffer must not wait for anyone. */
		return mono_ns() - t0 < 1000000000ull ? 0 : 3;
	}
	if (!strcmp(argv[1], "apis")) {
		/* Which API records are on: 16 + 1 the runtime kind, 2 the driver kind, 4 per call. */
		int (*records)(int) = NULL;
		void *fake = dlopen(argv[3], RTLD_NOW | RTLD_NOLOAD);

		if (fake)
			*(void **)&records = dlsym(fake, "fake_cupti_api_records");
		if (!records)
			return 69;
		return 16 | (fake_kinds() & (1u << 5 /* CUPTI_ACTIVITY_KIND_RUNTIME */) ? 1 : 0) |
		       (fake_kinds() & (1u << 4 /* CUPTI_ACTIVITY_KIND_DRIVER */) ? 2 : 0) |
		       (records(1) > 0 && records(2) > 0 ? 4 : 0);
	}
	if (!strcmp(argv[1], "policy")) {
		/* What the policy turned on: 32 + 1 kernels, 2 copies, 4 NVTX markers (a full-only
		 * kind), 8 the launch calls' API records, 16 the launch callbacks. */
		int (*records)(int) = NULL;
		unsigned (*cbs)(int) = NULL, k = fake_kinds();
		void *fake = dlopen(argv[3], RTLD_NOW | RTLD_NOLOAD);

		if (fake) {
			*(void **)&records = dlsym(fake, "fake_cupti_api_records");
			*(void **)&cbs = dlsym(fake, "fake_cupti_enabled_callbacks");
		}
		if (!records || !cbs)
			return 69;
		return 32 | (k & (1u << 10) ? 1 : 0) | (k & (1u << 1) ? 2 : 0) |
		       (k & (1u << 12) ? 4 : 0) | (records(2) > 0 ? 8 : 0) | (cbs(2) > 8 ? 16 : 0);
	}
	return 64;
}
