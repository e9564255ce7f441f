// SPDX-License-Identifier: Apache-2.0
/* libFuzzer: kallsyms text (module and BPF program names come from loaded code). */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

#include "daemon/symbolize/kallsyms.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int fd = -1;
	char path[64];
	struct kallsyms *k;

	if (fd < 0)
		fd = memfd_create("kallsyms", MFD_CLOEXEC);
	if (fd < 0 || ftruncate(fd, 0) || pwrite(fd, data, size, 0) != (ssize_t)size)
		return 0;
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	k = kallsyms__load(path);
	if (k) {
		for (size_t i = 0; i < kallsyms__count(k); i++)
			kallsyms__lookup(k, kallsyms__at(k, i)->addr + 1);
		kallsyms__free(k);
	}
	return 0;
}
