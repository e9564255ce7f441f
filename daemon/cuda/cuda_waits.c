// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/libbpf.h>

#include "daemon/cuda/cuda_api.h"
#include "daemon/cuda/cuda_waits.h"
#include "daemon/cuda/launch_store.h"
#include "daemon/cuda/uprobe_multi.h"

#define W(n) XSPROF_CUDA_##n

/* The waiting APIs, and whether each waits for the whole device rather than one stream. */
static const struct {
	unsigned int api;
	bool all_streams;
} waits[] = {
	{W(cudaStreamSynchronize), false},
	{W(cudaStreamSynchronize_ptsz), false},
	{W(cudaEventSynchronize), true}, /* the event's stream is not known here */
	{W(cudaDeviceSynchronize), true},
	/* Blocking copies run on the legacy stream, which waits for every blocking stream. */
	{W(cudaMemcpy), true},
	{W(cudaMemcpy_ptds), false},
	{W(cudaMemcpy2D), true},
	{W(cudaMemcpy2D_ptds), false},
	{W(cudaMemcpy3D), true},
	{W(cudaMemcpy3D_ptds), false},
	{W(cudaMemcpyPeer), true},
	{W(cudaMemcpy3DPeer), true},
	{W(cudaMemcpy3DPeer_ptds), false},
	{W(cudaMemcpyToSymbol), true},
	{W(cudaMemcpyToSymbol_ptds), false},
	{W(cudaMemcpyFromSymbol), true},
	{W(cudaMemcpyFromSymbol_ptds), false},
	{W(cudaMemcpy2DToArray), true},
	{W(cudaMemcpy2DFromArray), true},
	{W(cudaMemcpyToArray), true},
	{W(cuStreamSynchronize), false},
	{W(cuStreamSynchronize_ptsz), false},
	{W(cuEventSynchronize), true},
	{W(cuCtxSynchronize), true},
	{W(cuMemcpy), true},
	{W(cuMemcpy_ptds), false},
	{W(cuMemcpyHtoD_v2), true},
	{W(cuMemcpyHtoD_v2_ptds), false},
	{W(cuMemcpyDtoH_v2), true},
	{W(cuMemcpyDtoH_v2_ptds), false},
	{W(cuMemcpyDtoD_v2), true},
	{W(cuMemcpyDtoD_v2_ptds), false},
	{W(cuMemcpyPeer), true},
	{W(cuMemcpy2D_v2), true},
	{W(cuMemcpy3D_v2), true},
};

#define NR_WAITS (sizeof(waits) / sizeof(waits[0]))
/* Return probes also time the allocating APIs (cuda_api__allocates): at most this many. */
#define NR_ALLOCS 16
#define NR_RET	  (NR_WAITS + NR_ALLOCS)

struct cuda_wait_links {
	int multi_fd; /* one uprobe_multi link, or -1 */
	struct bpf_link *links[NR_RET];
	int nr_links;
};

/* The APIs with a return probe: the waiting ones, then the allocating ones (0 past them). */
static unsigned int ret_api(size_t i)
{
	size_t k = 0;

	if (i < NR_WAITS)
		return waits[i].api;
	for (unsigned int api = 1; api < XSPROF_CUDA_API_MAX; api++)
		if (cuda_api__allocates(api) && k++ == i - NR_WAITS)
			return api;
	return 0;
}

bool cuda_api__waits(unsigned int api)
{
	for (size_t i = 0; i < NR_WAITS; i++)
		if (waits[i].api == api)
			return true;
	return false;
}

bool cuda_api__waits_all_streams(unsigned int api)
{
	for (size_t i = 0; i < NR_WAITS; i++)
		if (waits[i].api == api)
			return waits[i].all_streams;
	return false;
}

void cuda_wait_links__free(struct cuda_wait_links *wl)
{
	if (!wl)
		return;
	if (wl->multi_fd >= 0)
		close(wl->multi_fd);
	for (int i = 0; i < wl->nr_links; i++)
		bpf_link__destroy(wl->links[i]);
	free(wl);
}

/* The distinct offsets of the file's timed APIs (two names on one entry probe once). */
static uint32_t wait_offsets(const uint64_t *off, unsigned long *offs)
{
	uint32_t n = 0;

	for (size_t i = 0; i < NR_RET; i++) {
		unsigned int api = ret_api(i);
		uint64_t o = api ? off[api] : 0;
		bool dup = false;

		for (uint32_t j = 0; j < n && !dup; j++)
			dup = offs[j] == o;
		if (o && !dup)
			offs[n++] = (unsigned long)o;
	}
	return n;
}

int cuda_waits__count(const uint64_t *off)
{
	unsigned long offs[NR_RET];

	return (int)wait_offsets(off, offs);
}

int cuda_wait_links__attach(const struct bpf_program *multi_prog, const struct bpf_program *prog,
			    pid_t pid, const char *path, const uint64_t *off,
			    struct cuda_wait_links **ret)
{
	unsigned long offs[NR_RET];
	__u64 cookies[NR_RET] = {0};
	struct cuda_wait_links *wl;
	uint32_t n = wait_offsets(off, offs);
	int err = 0;

	*ret = NULL;
	if (!n)
		return 0;
	wl = calloc(1, sizeof(*wl));
	if (!wl)
		return -ENOMEM;
	wl->multi_fd = -1;
	if (multi_prog)
		wl->multi_fd = uprobe_multi__attach(bpf_program__fd(multi_prog), pid, path, offs,
						    cookies, n, true);
	if (wl->multi_fd < 0 && !prog)
		err = multi_prog ? wl->multi_fd : -EOPNOTSUPP; /* no perf-event program (yet) */
	for (uint32_t i = 0; !err && wl->multi_fd < 0 && i < n; i++) {
		LIBBPF_OPTS(bpf_uprobe_opts, uo, .retprobe = true);

		wl->links[i] = bpf_program__attach_uprobe_opts(prog, pid, path, offs[i], &uo);
		if (!wl->links[i]) {
			err = -errno;
			break;
		}
		wl->nr_links++;
	}
	if (err) {
		cuda_wait_links__free(wl);
		return err;
	}
	*ret = wl;
	return (int)n;
}

int cuda_waits__bpf_stats(const struct bpf_map *map, int ncpu, struct xsprof_wait_stats *ret)
{
	struct xsprof_wait_stats *vals = calloc(ncpu, sizeof(*vals));
	__u32 zero = 0;

	memset(ret, 0, sizeof(*ret));
	if (!vals)
		return -ENOMEM;
	if (bpf_map__lookup_elem(map, &zero, sizeof(zero), vals, sizeof(*vals) * ncpu, 0)) {
		free(vals);
		return -errno;
	}
	for (int i = 0; i < ncpu; i++) {
		const __u64 *src = (const __u64 *)&vals[i];
		__u64 *dst = (__u64 *)ret;

		for (size_t j = 0; j < sizeof(*ret) / sizeof(__u64); j++)
			dst[j] += src[j];
	}
	free(vals);
	return 0;
}

int cuda_waits__add_record(struct launch_store *ls, const void *data, size_t size)
{
	const struct xsprof_cuda_wait *w = data;

	if (size < sizeof(*w) || !cuda_api__waits(w->api) || w->return_ns < w->entry_ns)
		return -EBADMSG;
	launch_store__add_wait(ls, w); /* a full store counts it */
	return 0;
}

int cuda_waits__add_alloc_record(struct launch_store *ls, const void *data, size_t size)
{
	const struct xsprof_cuda_wait *w = data;

	if (size < sizeof(*w) || !cuda_api__allocates(w->api) || w->return_ns < w->entry_ns)
		return -EBADMSG;
	launch_store__add_alloc(ls, w); /* a full store counts it */
	return 0;
}
