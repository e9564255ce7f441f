// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "daemon/cuda/usdt_site.h"

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

/* The address at which pid maps file offset off of (dev, ino) executable, or 0. */
static uint64_t site_address(FILE *maps, dev_t dev, ino_t ino, uint64_t off)
{
	char *line = NULL;
	size_t cap = 0;
	uint64_t addr = 0;

	while (!addr && getline(&line, &cap, maps) > 0) {
		unsigned long start, end, moff, inode;
		unsigned int maj, mnr;
		char perms[5];

		if (sscanf(line, "%lx-%lx %4s %lx %x:%x %lu", &start, &end, perms, &moff, &maj,
			   &mnr, &inode) != 7 ||
		    perms[2] != 'x' || inode != ino || major(dev) != maj || minor(dev) != mnr)
			continue;
		if (off >= moff && off - moff < end - start)
			addr = start + (off - moff);
	}
	free(line);
	return addr;
}

int usdt_site__read(pid_t pid, dev_t dev, ino_t ino, uint64_t off, enum usdt_site_mode *ret_mode)
{
	char path[64];
	uint8_t insn[5];
	uint64_t addr;
	ssize_t n;
	FILE *maps;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	maps = fopen(path, "re");
	if (!maps)
		return errno == ENOENT ? -ESRCH : -errno;
	addr = site_address(maps, dev, ino, off);
	fclose(maps);
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
