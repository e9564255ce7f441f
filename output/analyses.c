// SPDX-License-Identifier: Apache-2.0
#include <string.h>

#include "output/analyses.h"
#include "output/gpu_report/gpu_report.h"
#include "output/job/job_report.h"

unsigned int output_analyses__needs(enum output_format fmt)
{
	const struct output_format_info *fi = output__format_info(fmt);

	return fi ? fi->needs & (OUTPUT_NEEDS_GPU_REPORT | OUTPUT_NEEDS_JOB_REPORT) : 0;
}

int output_analyses__build(const struct profile_data *pd, unsigned int needs,
			   struct output_analyses *ret)
{
	struct output_analyses an = {0};
	int err = 0;

	if ((needs & OUTPUT_NEEDS_GPU_REPORT) && !err)
		err = gpu_report__build(pd, &an.gpu);
	if ((needs & OUTPUT_NEEDS_JOB_REPORT) && !err)
		err = job_report__build(pd, NULL, &an.job);
	if (err) {
		output_analyses__release(&an);
		return err;
	}
	*ret = an;
	return 0;
}

void output_analyses__release(struct output_analyses *an)
{
	if (!an)
		return;
	gpu_report__free(an->gpu);
	job_report__free(an->job);
	memset(an, 0, sizeof(*an));
}
