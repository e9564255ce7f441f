// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <string.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "daemon/probes/bpf_cost.h"

int bpf_cost__for_each(const struct bpf_object *obj, bpf_cost_fn fn, void *ctx)
{
	struct bpf_program *p;

	if (!obj)
		return 0;
	bpf_object__for_each_program(p, (struct bpf_object *)obj)
	{
		struct bpf_prog_info info;
		__u32 len = sizeof(info);
		struct bpf_cost c;
		int fd = bpf_program__fd(p), err;

		if (fd < 0)
			continue;
		memset(&info, 0, sizeof(info));
		if (bpf_obj_get_info_by_fd(fd, &info, &len))
			return -errno;
		if (!info.run_cnt)
			continue;
		c.name = bpf_program__name(p);
		c.runs = info.run_cnt;
		c.run_ns = info.run_time_ns;
		err = fn(ctx, &c);
		if (err)
			return err;
	}
	return 0;
}
