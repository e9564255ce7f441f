// SPDX-License-Identifier: Apache-2.0
#include "daemon/cuda/cuda_probes.h"
#include "daemon/session/recording.h"
#include "daemon/session/source.h"

void session_source__of_recording(struct session_source *src, struct recording *r,
				  const struct gpu_store *gs)
{
	struct cuda_probes *cp = recording__cuda(r);

	*src = (struct session_source){
		.stacks = recording__stacks(r),
		.offcpu = recording__offcpu_stacks(r),
		.ls = cp ? cuda_probes__store(cp) : NULL,
		.gs = gs,
		.end_ns = recording__end_ns(r),
	};
	src->samples = recording__timeline(r, &src->nr_samples, &src->timeline_dropped);
	src->woken = recording__woken(r, &src->nr_woken, &src->hops, &src->nr_hops);
	src->passes = recording__passes(r, &src->nr_passes);
	src->fwds = recording__fwds(r, &src->nr_fwds);
}
