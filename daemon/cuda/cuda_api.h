/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The CUDA runtime and driver APIs the uprobes go on (one entry per XSPROF_CUDA_* id, with where
 * the call's stream argument is at entry), and the CUPTI callback ids libxsprof_cupti reports
 * through the xsprof:launch USDT.
 */
#ifndef XSPROF_DAEMON_CUDA_CUDA_API_H
#define XSPROF_DAEMON_CUDA_CUDA_API_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct cuda_api {
	unsigned int id;
	const char *name;
	unsigned int loc, idx, off;
	bool wrapper; /* tail-jumps into another probed API */
};

extern const struct cuda_api cuda_apis[];
extern const size_t cuda_nr_apis;

/* The entry named name, or NULL. */
const struct cuda_api *cuda_api__by_name(const char *name);
/* An XSPROF_CUDA_* id's function name, or NULL. */
const char *cuda_api__name(unsigned int api);
/* Whether the API allocates GPU memory (the size at entry, the address at return), or frees
 * it (the address at entry); cuMemCreate and cuMemRelease by handle. */
bool cuda_api__allocates(unsigned int api);
bool cuda_api__frees(unsigned int api);
/* Whether xsprof:launch reports calls of this API (its entry uprobe is then redundant). */
bool cuda_api__usdt_covers(unsigned int api);
/* The launch APIs libxsprof_cupti fires xsprof:launch for, by CUPTI callback id (numbers of
 * cupti_runtime_cbid.h and cupti_driver_cbid.h; tests/daemon/cuda/test_cupti_ids.c asks the real
 * libcupti for each one's name). */
struct cupti_api {
	uint16_t domain, cbid; /* CUPTI_CB_DOMAIN_DRIVER_API 1, _RUNTIME_API 2 */
	const char *name;
};

extern const struct cupti_api cupti_apis[];
extern const size_t cupti_nr_apis;

/* A CUPTI (domain << 16 | cbid)'s function name, or NULL. */
const char *cupti_api__name(uint32_t api);

#endif
