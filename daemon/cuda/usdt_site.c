// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "daemon/cuda/usdt_site.h"
#include "daemon/symbolize/proc_maps.h"

const char *usdt_site_mode__name(enum usdt_site_mode mode)
{
	switch (mode) {
	case USDT_SITE_NOP:
		return "nop";
	case USDT_SITE_TRAP:
		return "int3";
	case USDT_SITE_CALL:
		return "call";
	default:
		return "unknown";
	}
}

enum usdt_site_mode usdt_site__decode(const uint8_t *insn, size_t len)
{
	static const uint8_t nop5[] = {0x0f, 0x1f, 0x44, 0x00, 0x00};

	if (!len)
		return USDT_SITE_UNKNOWN;
	if (insn[0] == 0xcc)
		return USDT_SITE_TRAP;
	/* call rel32 (e8): what arch_uprobe_optimize writes over the nop */
	if (insn[0] == 0xe8 && len >= 5)
		return USDT_SITE_CALL;
	if (insn[0] == 0x90 || (len >= sizeof(nop5) && !memcmp(insn, nop5, sizeof(nop5))))
		return USDT_SITE_NOP;
	return USDT_SITE_UNKNOWN;
}

/* The address at which maps has file offset off of (dev, ino) executable, or 0. */
static uint64_t site_address(const struct proc_maps *maps, dev_t dev, ino_t ino, uint64_t off)
{
	for (size_t i = 0; i < proc_maps__count(maps); i++) {
		const struct proc_map *m = proc_maps__at(maps, i);

		if (!(m->perms & PROC_MAP_EXEC) || m->inode != ino || m->dev_major != major(dev) ||
		    m->dev_minor != minor(dev))
			continue;
		if (off >= m->offset && off - m->offset < m->end - m->start)
			return m->start + (off - m->offset);
	}
	return 0;
}

int usdt_site__read(pid_t pid, dev_t dev, ino_t ino, uint64_t off, enum usdt_site_mode *ret_mode)
{
	char path[64];
	uint8_t insn[5];
	struct proc_maps *maps;
	uint64_t addr;
	ssize_t n;
	int fd;

	maps = proc_maps__read(NULL, pid);
	if (!maps)
		return -errno;
	addr = site_address(maps, dev, ino, off);
	proc_maps__free(maps);
	if (!addr)
		return -ENOENT;
	snprintf(path, sizeof(path), "/proc/%d/mem", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? -ESRCH : -errno;
	n = pread(fd, insn, sizeof(insn), (off_t)addr);
	close(fd);
	if (n <= 0)
		return n < 0 ? -errno : -EIO;
	*ret_mode = usdt_site__decode(insn, (size_t)n);
	return 0;
}
