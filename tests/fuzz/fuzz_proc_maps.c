// SPDX-License-Identifier: Apache-2.0
/* libFuzzer: /proc/PID/maps text (its paths are the profiled process's choice). */
#include <stddef.h>
#include <stdint.h>

#include "daemon/symbolize/proc_maps.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct proc_maps *m = proc_maps__parse((const char *)data, size);

	if (m) {
		for (size_t i = 0; i < proc_maps__count(m); i++)
			proc_maps__find(m, proc_maps__at(m, i)->start);
		proc_maps__find(m, size);
		proc_maps__free(m);
	}
	return 0;
}
