// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "daemon/cuda_probes.h"
#include "daemon/cuda_waits.h"
#include "daemon/launch_store.h"
#include "daemon/sampler.h"
#include "daemon/uprobe_multi.h"
#include "daemon/usdt_site.h"
#include "xsprof.skel.h"

#define DEFAULT_MAX_LINKS 16384
/* Processes (and system-wide paths) with probes at once, and ELF files whose offsets we keep. */
#define MAX_TARGETS 4096
#define MAX_FILES   256
/* A process mapping more distinct CUDA files than this is up to something: the rest are left. */
#define MAX_FILES_PER_PID 16
/* Processes whose xsprof:launch firings are followed (site mode, trimming), round robin. */
#define MAX_USDT_PIDS 256

/* Where a stream argument is at entry (x86-64 SysV): see enum xsprof_cuda_stream_loc. */
#define NONE	    XSPROF_CUDA_STREAM_NONE, 0, 0
#define REG(i)	    XSPROF_CUDA_STREAM_REG, i, 0
#define STK(i)	    XSPROF_CUDA_STREAM_STACK, i, 0
#define PTR(i, off) XSPROF_CUDA_STREAM_PTR, i, off
#define WRAPPER	    true
#define API(n, ...)                              \
	{                                        \
		XSPROF_CUDA_##n, #n, __VA_ARGS__ \
	}
/* dim3 is 12 bytes of integers: two registers each. cudaLaunchConfig_t.stream and
 * CUlaunchConfig.hStream are at offset 32. */
#define LAUNCH_STREAM STK(2) /* (func, dim3 grid, dim3 block, args, shmem, stream) */
#define CU_STREAM     STK(3) /* (f, gx, gy, gz, bx, by | bz, shmem, hStream, ...) */

static const struct cuda_api {
	unsigned int id;
	const char *name;
	unsigned int loc, idx, off;
	bool wrapper; /* tail-jumps into another probed API */
} apis[] = {
	API(cudaLaunchKernel, LAUNCH_STREAM),
	API(cudaLaunchKernel_ptsz, LAUNCH_STREAM),
	API(cudaLaunchKernelExC, PTR(0, 32)),
	API(cudaLaunchKernelExC_ptsz, PTR(0, 32)),
	API(__cudaLaunchKernel, LAUNCH_STREAM, WRAPPER),
	API(__cudaLaunchKernel_ptsz, LAUNCH_STREAM, WRAPPER),
	API(cudaLaunchCooperativeKernel, LAUNCH_STREAM),
	API(cudaLaunchCooperativeKernel_ptsz, LAUNCH_STREAM),
	API(cudaLaunchHostFunc, REG(0)),
	API(cudaLaunchHostFunc_ptsz, REG(0)),
	API(cudaGraphLaunch, REG(1)),
	API(cudaGraphLaunch_ptsz, REG(1)),
	API(cudaMemcpyAsync, REG(4)),
	API(cudaMemcpyAsync_ptsz, REG(4)),
	API(cudaMemcpy2DAsync, STK(2)),
	API(cudaMemcpy2DAsync_ptsz, STK(2)),
	API(cudaMemcpy3DAsync, REG(1)),
	API(cudaMemcpy3DAsync_ptsz, REG(1)),
	API(cudaMemcpyPeerAsync, REG(5)),
	API(cudaMemcpy3DPeerAsync, REG(1)),
	API(cudaMemcpy3DPeerAsync_ptsz, REG(1)),
	API(cudaMemcpyToSymbolAsync, REG(5)),
	API(cudaMemcpyToSymbolAsync_ptsz, REG(5)),
	API(cudaMemcpyFromSymbolAsync, REG(5)),
	API(cudaMemcpyFromSymbolAsync_ptsz, REG(5)),
	API(cudaMemcpyToArrayAsync, STK(1)),
	API(cudaMemcpyToArrayAsync_ptsz, STK(1)),
	API(cudaMemcpyFromArrayAsync, STK(1)),
	API(cudaMemcpyFromArrayAsync_ptsz, STK(1)),
	API(cudaMemcpy2DToArrayAsync, STK(3)),
	API(cudaMemcpy2DToArrayAsync_ptsz, STK(3)),
	API(cudaMemcpy2DFromArrayAsync, STK(3)),
	API(cudaMemcpy2DFromArrayAsync_ptsz, STK(3)),
	API(cudaMemcpyBatchAsync, STK(2)),
	API(cudaMemcpyBatchAsync_ptsz, STK(2)),
	API(cudaMemcpy3DBatchAsync, REG(3)),
	API(cudaMemcpy3DBatchAsync_ptsz, REG(3)),
	API(cudaMemsetAsync, REG(3)),
	API(cudaMemsetAsync_ptsz, REG(3)),
	API(cudaMemset2DAsync, REG(5)),
	API(cudaMemset2DAsync_ptsz, REG(5)),
	/* The two structs (32 and 24 bytes) go on the stack: value and stream take rdi, rsi. */
	API(cudaMemset3DAsync, REG(1)),
	API(cudaMemset3DAsync_ptsz, REG(1)),
	API(cudaStreamSynchronize, REG(0)),
	API(cudaStreamSynchronize_ptsz, REG(0)),
	API(cudaEventSynchronize, NONE),
	API(cudaDeviceSynchronize, NONE),
	/* Blocking copies: the legacy stream, or the thread's own (_ptds). */
	API(cudaMemcpy, NONE),
	API(cudaMemcpy_ptds, NONE),
	API(cudaMemcpy2D, NONE),
	API(cudaMemcpy2D_ptds, NONE),
	API(cudaMemcpy3D, NONE),
	API(cudaMemcpy3D_ptds, NONE),
	API(cudaMemcpyPeer, NONE),
	API(cudaMemcpy3DPeer, NONE),
	API(cudaMemcpy3DPeer_ptds, NONE),
	API(cudaMemcpyToSymbol, NONE),
	API(cudaMemcpyToSymbol_ptds, NONE),
	API(cudaMemcpyFromSymbol, NONE),
	API(cudaMemcpyFromSymbol_ptds, NONE),
	API(cudaMemcpy2DToArray, NONE),
	API(cudaMemcpy2DFromArray, NONE),
	API(cudaMemcpyToArray, NONE),

	API(cuLaunchKernel, CU_STREAM),
	API(cuLaunchKernel_ptsz, CU_STREAM),
	API(cuLaunchKernelEx, PTR(0, 32)),
	API(cuLaunchKernelEx_ptsz, PTR(0, 32)),
	API(cuLaunchCooperativeKernel, CU_STREAM),
	API(cuLaunchCooperativeKernel_ptsz, CU_STREAM),
	API(cuLaunchHostFunc, REG(0)),
	API(cuLaunchHostFunc_ptsz, REG(0)),
	API(cuGraphLaunch, REG(1)),
	API(cuGraphLaunch_ptsz, REG(1)),
	API(cuMemcpyAsync, REG(3)),
	API(cuMemcpyAsync_ptsz, REG(3)),
	API(cuMemcpyHtoDAsync_v2, REG(3)),
	API(cuMemcpyHtoDAsync_v2_ptsz, REG(3)),
	API(cuMemcpyDtoHAsync_v2, REG(3)),
	API(cuMemcpyDtoHAsync_v2_ptsz, REG(3)),
	API(cuMemcpyDtoDAsync_v2, REG(3)),
	API(cuMemcpyDtoDAsync_v2_ptsz, REG(3)),
	API(cuMemsetD8Async, REG(3)),
	API(cuMemsetD8Async_ptsz, REG(3)),
	API(cuMemsetD32Async, REG(3)),
	API(cuMemsetD32Async_ptsz, REG(3)),
	API(cuStreamSynchronize, REG(0)),
	API(cuStreamSynchronize_ptsz, REG(0)),
	API(cuEventSynchronize, NONE),
	API(cuCtxSynchronize, NONE),
	API(cuMemcpy, NONE),
	API(cuMemcpy_ptds, NONE),
	API(cuMemcpyHtoD_v2, NONE),
	API(cuMemcpyHtoD_v2_ptds, NONE),
	API(cuMemcpyDtoH_v2, NONE),
	API(cuMemcpyDtoH_v2_ptds, NONE),
	API(cuMemcpyDtoD_v2, NONE),
	API(cuMemcpyDtoD_v2_ptds, NONE),
	API(cuMemcpyPeer, NONE),
	API(cuMemcpy2D_v2, NONE),
	API(cuMemcpy3D_v2, NONE),
};

#define NR_APIS (sizeof(apis) / sizeof(apis[0]))

/* The launch APIs libxsprof_cupti fires xsprof:launch for (cupti_runtime_cbid.h and
 * cupti_driver_cbid.h of CUDA 13; the numbers are stable across releases). */
static const struct {
	uint16_t domain, cbid; /* CUPTI_CB_DOMAIN_DRIVER_API 1, _RUNTIME_API 2 */
	const char *name;
} cupti_apis[] = {
	{2, 211, "cudaLaunchKernel"},
	{2, 214, "cudaLaunchKernel_ptsz"},
	{2, 430, "cudaLaunchKernelExC"},
	{2, 431, "cudaLaunchKernelExC_ptsz"},
	{2, 505, "__cudaLaunchKernel"},
	{2, 506, "__cudaLaunchKernel_ptsz"},
	{2, 269, "cudaLaunchCooperativeKernel"},
	{2, 270, "cudaLaunchCooperativeKernel_ptsz"},
	{2, 311, "cudaGraphLaunch"},
	{2, 312, "cudaGraphLaunch_ptsz"},
	{2, 41, "cudaMemcpyAsync"},
	{2, 225, "cudaMemcpyAsync_ptsz"},
	{2, 42, "cudaMemcpyToArrayAsync"},
	{2, 226, "cudaMemcpyToArrayAsync_ptsz"},
	{2, 43, "cudaMemcpyFromArrayAsync"},
	{2, 227, "cudaMemcpyFromArrayAsync_ptsz"},
	{2, 44, "cudaMemcpy2DAsync"},
	{2, 228, "cudaMemcpy2DAsync_ptsz"},
	{2, 45, "cudaMemcpy2DToArrayAsync"},
	{2, 229, "cudaMemcpy2DToArrayAsync_ptsz"},
	{2, 46, "cudaMemcpy2DFromArrayAsync"},
	{2, 230, "cudaMemcpy2DFromArrayAsync_ptsz"},
	{2, 47, "cudaMemcpyToSymbolAsync"},
	{2, 231, "cudaMemcpyToSymbolAsync_ptsz"},
	{2, 48, "cudaMemcpyFromSymbolAsync"},
	{2, 232, "cudaMemcpyFromSymbolAsync_ptsz"},
	{2, 145, "cudaMemcpy3DAsync"},
	{2, 246, "cudaMemcpy3DAsync_ptsz"},
	{2, 161, "cudaMemcpyPeerAsync"},
	{2, 163, "cudaMemcpy3DPeerAsync"},
	{2, 250, "cudaMemcpy3DPeerAsync_ptsz"},
	{2, 509, "cudaMemcpyBatchAsync"},
	{2, 510, "cudaMemcpyBatchAsync_ptsz"},
	{2, 511, "cudaMemcpy3DBatchAsync"},
	{2, 512, "cudaMemcpy3DBatchAsync_ptsz"},
	{2, 51, "cudaMemsetAsync"},
	{2, 235, "cudaMemsetAsync_ptsz"},
	{2, 52, "cudaMemset2DAsync"},
	{2, 236, "cudaMemset2DAsync_ptsz"},
	{2, 143, "cudaMemset3DAsync"},
	{2, 244, "cudaMemset3DAsync_ptsz"},
	{1, 307, "cuLaunchKernel"},
	{1, 442, "cuLaunchKernel_ptsz"},
	{1, 652, "cuLaunchKernelEx"},
	{1, 653, "cuLaunchKernelEx_ptsz"},
	{1, 477, "cuLaunchCooperativeKernel"},
	{1, 478, "cuLaunchCooperativeKernel_ptsz"},
	{1, 514, "cuGraphLaunch"},
	{1, 515, "cuGraphLaunch_ptsz"},
	{1, 306, "cuMemcpyAsync"},
	{1, 418, "cuMemcpyAsync_ptsz"},
	{1, 277, "cuMemcpyHtoDAsync_v2"},
	{1, 421, "cuMemcpyHtoDAsync_v2_ptsz"},
	{1, 279, "cuMemcpyDtoHAsync_v2"},
	{1, 422, "cuMemcpyDtoHAsync_v2_ptsz"},
	{1, 281, "cuMemcpyDtoDAsync_v2"},
	{1, 423, "cuMemcpyDtoDAsync_v2_ptsz"},
	{1, 293, "cuMemcpyHtoAAsync_v2"},
	{1, 419, "cuMemcpyHtoAAsync_v2_ptsz"},
	{1, 283, "cuMemcpyAtoHAsync_v2"},
	{1, 420, "cuMemcpyAtoHAsync_v2_ptsz"},
	{1, 289, "cuMemcpy2DAsync_v2"},
	{1, 424, "cuMemcpy2DAsync_v2_ptsz"},
	{1, 291, "cuMemcpy3DAsync_v2"},
	{1, 425, "cuMemcpy3DAsync_v2_ptsz"},
	{1, 319, "cuMemcpyPeerAsync"},
	{1, 426, "cuMemcpyPeerAsync_ptsz"},
	{1, 321, "cuMemcpy3DPeerAsync"},
	{1, 427, "cuMemcpy3DPeerAsync_ptsz"},
	{1, 796, "cuMemcpyBatchAsync_v2"},
	{1, 797, "cuMemcpyBatchAsync_v2_ptsz"},
	{1, 798, "cuMemcpy3DBatchAsync_v2"},
	{1, 799, "cuMemcpy3DBatchAsync_v2_ptsz"},
	{1, 216, "cuMemsetD8Async"},
	{1, 428, "cuMemsetD8Async_ptsz"},
	{1, 218, "cuMemsetD16Async"},
	{1, 429, "cuMemsetD16Async_ptsz"},
	{1, 220, "cuMemsetD32Async"},
	{1, 430, "cuMemsetD32Async_ptsz"},
	{1, 222, "cuMemsetD2D8Async"},
	{1, 431, "cuMemsetD2D8Async_ptsz"},
	{1, 224, "cuMemsetD2D16Async"},
	{1, 432, "cuMemsetD2D16Async_ptsz"},
	{1, 226, "cuMemsetD2D32Async"},
	{1, 433, "cuMemsetD2D32Async_ptsz"},
};

/* What one ELF file offers: the file offset of each API's entry (0: absent) and the USDT. */
struct file_info {
	dev_t dev;
	ino_t ino;
	uint64_t off[XSPROF_CUDA_API_MAX];
	int nr_apis;
	bool usdt;
	uint64_t usdt_off; /* file offset of the xsprof:launch site */
	bool usdt_nop5;	   /* the site is the 5-byte nop the kernel can optimise */
};

/* Probes on one file, for one process or (pid -1) for all. */
struct target {
	pid_t pid;
	int pidfd; /* readable once the process has exited; -1 for system-wide */
	dev_t dev;
	ino_t ino;
	/* One uprobe_multi link for the APIs xsprof:launch does not report, one for those it
	 * does (removed where it fires), or -1. */
	int multi_fd, multi_fd_covered;
	int nr_covered;		 /* probes on APIs xsprof:launch reports (multi or links) */
	struct bpf_link **links; /* else one perf-event uprobe each; and the USDT */
	bool *covered;		 /* parallel to links */
	int nr_links;
	int nr_probes;
	bool trimmed;
	struct cuda_wait_links *waits; /* return probes timing the waiting APIs */
	int nr_waits;
};

/* A process whose xsprof:launch fired. */
struct usdt_pid {
	pid_t pid;
	uint64_t firings;
	enum usdt_site_mode mode;
	bool nop5;
};

/* Where a process has the CUDA and injection libraries, to trim USDT stacks to the caller. */
#define MAX_RANGE_PIDS 256
#define MAX_RANGES     8

struct lib_ranges {
	pid_t pid;
	int n;
	struct {
		uint64_t start, end;
	} r[MAX_RANGES];
};

struct cuda_probes {
	struct sampler *sampler;
	struct xsprof_bpf *skel;
	struct cuda_probes_opts opts;
	struct launch_store *store;
	struct target *targets;
	int nr_targets;
	struct file_info *files;
	int nr_files, next_file;
	uint64_t nr_links;
	/*
	 * A second instance of the skeleton, sharing every map of the sampler's, in which only
	 * xsprof_cuda_call is loaded, for uprobe_multi links: a perf-event uprobe takes ~0.1 s to
	 * detach (the kernel waits for a grace period per probe), so 47 probes on libcudart kept
	 * xsprofd ~5 s from exiting; a multi link waits once. NULL where the kernel lacks them.
	 */
	struct xsprof_bpf *multi;
	bool multi_tried;  /* opened at the first attach: it costs a second BTF load */
	bool timing_waits; /* while attaching: the file's waits have their return probes */
	struct bpf_link *watch_links[3];
	struct lib_ranges *ranges; /* MAX_RANGE_PIDS, reused round robin */
	int next_range;
	struct usdt_pid *usdt_pids; /* MAX_USDT_PIDS, reused round robin */
	int next_usdt_pid;
	struct cuda_probes_stats st;
	char last_error[512];
};

const char *cuda_api__name(unsigned int api)
{
	for (size_t i = 0; i < NR_APIS; i++)
		if (apis[i].id == api)
			return apis[i].name;
	return NULL;
}

const char *cupti_api__name(uint32_t api)
{
	for (size_t i = 0; i < sizeof(cupti_apis) / sizeof(cupti_apis[0]); i++)
		if (cupti_apis[i].domain == api >> 16 && cupti_apis[i].cbid == (api & 0xffff))
			return cupti_apis[i].name;
	return NULL;
}

bool cuda_api__usdt_covers(unsigned int api)
{
	const char *name = cuda_api__name(api);

	if (!name)
		return false;
	for (size_t i = 0; i < sizeof(cupti_apis) / sizeof(cupti_apis[0]); i++)
		if (!strcmp(cupti_apis[i].name, name))
			return true;
	return false;
}

static const struct cuda_api *api_by_name(const char *name)
{
	/* Every name starts "cu" or "__cu": skip the rest of a big symbol table early. */
	if (name[0] != 'c' && (name[0] != '_' || name[1] != '_' || name[2] != 'c'))
		return NULL;
	for (size_t i = 0; i < NR_APIS; i++)
		if (!strcmp(apis[i].name, name))
			return &apis[i];
	return NULL;
}

static void set_error(struct cuda_probes *cp, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void set_error(struct cuda_probes *cp, int err, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(cp->last_error, sizeof(cp->last_error), fmt, ap);
	va_end(ap);
	if (n >= 0 && (size_t)n < sizeof(cp->last_error))
		snprintf(cp->last_error + n, sizeof(cp->last_error) - n, ": %s", strerror(-err));
}

/* ---- ELF: where the APIs and the USDT are in a file ---- */

static bool usdt_note_is_ours(const char *desc, size_t len)
{
	const char *end = desc + len, *prov = desc + 3 * 8, *name;

	/* pc, base, semaphore addresses, then "provider\0name\0args\0". */
	if (len <= 3 * 8)
		return false;
	name = memchr(prov, '\0', end - prov);
	if (!name)
		return false;
	name++;
	if (!memchr(name, '\0', end - name))
		return false;
	return !strcmp(prov, "xsprof") && !strcmp(name, "launch");
}

/* The note's pc (its first word) as a file offset, through the executable segment holding it. */
static void usdt_site_offset(struct file_info *fi, const char *desc, const GElf_Phdr *loads,
			     size_t nloads)
{
	uint64_t pc;

	memcpy(&pc, desc, sizeof(pc));
	for (size_t j = 0; j < nloads; j++)
		if (pc >= loads[j].p_vaddr && pc < loads[j].p_vaddr + loads[j].p_filesz)
			fi->usdt_off = pc - loads[j].p_vaddr + loads[j].p_offset;
}

static int read_elf(int fd, struct file_info *fi)
{
	GElf_Phdr *loads = NULL;
	size_t nphdr, nloads = 0, shstrndx;
	Elf_Scn *scn = NULL;
	GElf_Ehdr eh;
	Elf *elf;
	int err = 0;

	if (elf_version(EV_CURRENT) == EV_NONE)
		return -EINVAL;
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf)
		return -ENOEXEC;
	/* Stream locations are x86-64 calling conventions. */
	if (elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &eh) || eh.e_machine != EM_X86_64 ||
	    elf_getphdrnum(elf, &nphdr) || elf_getshdrstrndx(elf, &shstrndx)) {
		err = -ENOEXEC;
		goto out;
	}
	loads = calloc(nphdr ? nphdr : 1, sizeof(*loads));
	if (!loads) {
		err = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < nphdr; i++) {
		GElf_Phdr ph;

		if (gelf_getphdr(elf, i, &ph) && ph.p_type == PT_LOAD && (ph.p_flags & PF_X))
			loads[nloads++] = ph;
	}
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *data;
		const char *secname;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS)
			continue;
		secname = elf_strptr(elf, shstrndx, sh.sh_name);
		if (sh.sh_type == SHT_NOTE && secname && !strcmp(secname, ".note.stapsdt")) {
			size_t off = 0, noff, doff;
			GElf_Nhdr nh;

			data = elf_getdata(scn, NULL);
			while (data && (off = gelf_getnote(data, off, &nh, &noff, &doff)) > 0) {
				if (nh.n_type == 3 && nh.n_namesz == 8 &&
				    !memcmp((char *)data->d_buf + noff, "stapsdt", 8) &&
				    usdt_note_is_ours((char *)data->d_buf + doff, nh.n_descsz)) {
					fi->usdt = true;
					usdt_site_offset(fi, (char *)data->d_buf + doff, loads,
							 nloads);
				}
			}
			continue;
		}
		if ((sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM) || !sh.sh_entsize)
			continue;
		data = elf_getdata(scn, NULL);
		if (!data)
			continue;
		for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
			const struct cuda_api *api;
			const char *name;
			GElf_Sym sym;

			if (!gelf_getsym(data, i, &sym) || GELF_ST_TYPE(sym.st_info) != STT_FUNC ||
			    sym.st_shndx == SHN_UNDEF || !sym.st_value)
				continue;
			name = elf_strptr(elf, sh.sh_link, sym.st_name);
			if (!name || !(api = api_by_name(name)) || fi->off[api->id])
				continue;
			for (size_t j = 0; j < nloads; j++) {
				if (sym.st_value >= loads[j].p_vaddr &&
				    sym.st_value < loads[j].p_vaddr + loads[j].p_filesz) {
					fi->off[api->id] =
						sym.st_value - loads[j].p_vaddr + loads[j].p_offset;
					fi->nr_apis++;
					break;
				}
			}
		}
	}
out:
	free(loads);
	elf_end(elf);
	if (!err && fi->usdt_off) {
		uint8_t insn[5];
		enum usdt_site_mode m = USDT_SITE_UNKNOWN;

		if (pread(fd, insn, sizeof(insn), (off_t)fi->usdt_off) == (ssize_t)sizeof(insn))
			m = usdt_site__decode(insn, sizeof(insn));
		fi->usdt_nop5 = m == USDT_SITE_NOP && insn[0] == 0x0f;
	}
	return err;
}

/* The offsets for the file open at fd, read once per file (dev, inode). */
static const struct file_info *file_info(struct cuda_probes *cp, int fd, const struct stat *st,
					 int *ret_err)
{
	struct file_info *fi;
	int err;

	for (int i = 0; i < cp->nr_files; i++)
		if (cp->files[i].dev == st->st_dev && cp->files[i].ino == st->st_ino)
			return &cp->files[i];
	/* Full: the oldest entry makes room (re-reading a file is only slower). */
	if (cp->nr_files < MAX_FILES) {
		fi = &cp->files[cp->nr_files++];
	} else {
		fi = &cp->files[cp->next_file];
		cp->next_file = (cp->next_file + 1) % MAX_FILES;
	}
	memset(fi, 0, sizeof(*fi));
	err = read_elf(fd, fi);
	if (err) {
		memset(fi, 0, sizeof(*fi));
		*ret_err = err;
		return NULL;
	}
	fi->dev = st->st_dev;
	fi->ino = st->st_ino;
	return fi;
}

/* ---- Attaching ---- */

static void target__detach(struct target *t)
{
	if (t->multi_fd >= 0)
		close(t->multi_fd);
	if (t->multi_fd_covered >= 0)
		close(t->multi_fd_covered);
	for (int i = 0; i < t->nr_links; i++)
		bpf_link__destroy(t->links[i]);
	free(t->links);
	free(t->covered);
	cuda_wait_links__free(t->waits);
	if (t->pidfd >= 0)
		close(t->pidfd);
}

static void remove_target(struct cuda_probes *cp, int i)
{
	cp->nr_links -= cp->targets[i].nr_probes;
	target__detach(&cp->targets[i]);
	cp->targets[i] = cp->targets[--cp->nr_targets];
}

/* Let go of the probes of processes that have exited: their pidfd is readable. */
static void collect_exited(struct cuda_probes *cp)
{
	for (int i = 0; i < cp->nr_targets;) {
		struct pollfd p = {.fd = cp->targets[i].pidfd, .events = POLLIN};

		if (p.fd >= 0 && poll(&p, 1, 0) == 1)
			remove_target(cp, i);
		else
			i++;
	}
}

static int find_target(const struct cuda_probes *cp, pid_t pid, dev_t dev, ino_t ino)
{
	for (int i = 0; i < cp->nr_targets; i++)
		if ((cp->targets[i].pid == pid || cp->targets[i].pid == -1) &&
		    cp->targets[i].dev == dev && cp->targets[i].ino == ino)
			return i;
	return -1;
}

static int pid_targets(const struct cuda_probes *cp, pid_t pid)
{
	int n = 0;

	for (int i = 0; i < cp->nr_targets; i++)
		n += cp->targets[i].pid == pid;
	return n;
}

/* waits: the waiting APIs have their return probe (cuda_waits), so their entry marks them. */
static __u64 api_cookie(const struct cuda_api *a, pid_t pid, bool waits)
{
	return XSPROF_CUDA_COOKIE(a->id, a->loc, a->idx, a->off) |
	       (a->wrapper ? XSPROF_CUDA_COOKIE_WRAPPER : 0) |
	       (pid > 0 ? XSPROF_CUDA_COOKIE_ONE_PROCESS : 0) |
	       (waits && cuda_api__waits(a->id) ? XSPROF_CUDA_COOKIE_WAIT : 0);
}

/* Two names for one entry (an alias): one probe, or each call would count twice. */
static bool is_alias(const struct file_info *fi, size_t i)
{
	for (size_t j = 0; j < i; j++)
		if (fi->off[apis[j].id] == fi->off[apis[i].id])
			return true;
	return false;
}

/*
 * One uprobe_multi link on the file's APIs that xsprof:launch reports (covered) or on the
 * others: its fd; -1 and *ret_probes 0 when there are none; -1 when the kernel refused it.
 */
static int attach_multi(struct cuda_probes *cp, pid_t pid, const char *path,
			const struct file_info *fi, bool covered, int *ret_probes)
{
	unsigned long offs[NR_APIS];
	__u64 cookies[NR_APIS];
	__u32 n = 0;
	int fd;

	*ret_probes = 0;
	for (size_t i = 0; i < NR_APIS; i++) {
		if (!fi->off[apis[i].id] || is_alias(fi, i) ||
		    cuda_api__usdt_covers(apis[i].id) != covered)
			continue;
		offs[n] = fi->off[apis[i].id];
		cookies[n++] = api_cookie(&apis[i], pid, cp->timing_waits);
	}
	if (!n)
		return -1;
	fd = uprobe_multi__attach(bpf_program__fd(cp->multi->progs.xsprof_cuda_call), pid, path,
				  offs, cookies, n, false);
	if (fd < 0)
		return -1;
	*ret_probes = n;
	return fd;
}

/* Make map (of the second instance) the same map as the sampler's instance's. */
static int share_map(struct xsprof_bpf *main, struct bpf_map *map)
{
	struct bpf_map *same = bpf_object__find_map_by_name(main->obj, bpf_map__name(map));

	return same ? bpf_map__reuse_fd(map, bpf_map__fd(same)) : -ENOENT;
}

/*
 * The second skeleton instance for uprobe_multi links (see struct cuda_probes); NULL when the
 * kernel refuses the program for them (before Linux 6.6).
 */
static struct xsprof_bpf *open_multi(struct xsprof_bpf *main)
{
	struct xsprof_bpf *m = xsprof_bpf__open();
	struct bpf_program *p;
	struct bpf_map *map;

	if (!m)
		return NULL;
	for (p = bpf_object__next_program(m->obj, NULL); p; p = bpf_object__next_program(m->obj, p))
		bpf_program__set_autoload(p, p == m->progs.xsprof_cuda_call ||
						     p == m->progs.xsprof_cuda_ret);
	bpf_program__set_expected_attach_type(m->progs.xsprof_cuda_call,
					      (enum bpf_attach_type)XS_BPF_TRACE_UPROBE_MULTI);
	bpf_program__set_expected_attach_type(m->progs.xsprof_cuda_ret,
					      (enum bpf_attach_type)XS_BPF_TRACE_UPROBE_MULTI);
	for (map = bpf_object__next_map(m->obj, NULL); map; map = bpf_object__next_map(m->obj, map))
		if (share_map(main, map))
			goto fail;
	if (xsprof_bpf__load(m))
		goto fail;
	return m;
fail:
	xsprof_bpf__destroy(m);
	return NULL;
}

/*
 * Attach to the file open at fd for pid (-1: every process). 1 when attached, 0 when it was
 * already or has nothing to attach, -errno. what names it in errors.
 */
/* Both uprobe_multi links of a target; neither when the kernel refuses one (perf-event uprobes
 * then). */
static void attach_multi_pair(struct cuda_probes *cp, struct target *t, pid_t pid, const char *path,
			      const struct file_info *fi)
{
	int n_other, n_covered, fd_other, fd_covered;

	fd_other = attach_multi(cp, pid, path, fi, false, &n_other);
	fd_covered = attach_multi(cp, pid, path, fi, true, &n_covered);
	if ((fd_other < 0 && n_other) || (fd_covered < 0 && n_covered) ||
	    (fd_other < 0 && fd_covered < 0)) {
		if (fd_other >= 0)
			close(fd_other);
		if (fd_covered >= 0)
			close(fd_covered);
		return;
	}
	t->multi_fd = fd_other;
	t->multi_fd_covered = fd_covered;
	t->nr_covered = n_covered;
	t->nr_probes = n_other + n_covered;
}

/*
 * xsprof:launch fired in pid: the entry uprobes on the APIs it reports are paid for nothing
 * there. Remove them from pid's targets, and from the file-wide ones (launch mode: the
 * injection library is preset for the whole command), unless the strategy needs them.
 */
static void trim_launch_uprobes(struct cuda_probes *cp, pid_t pid)
{
	if (cp->opts.keep_launch_uprobes)
		return;
	for (int i = 0; i < cp->nr_targets; i++) {
		struct target *t = &cp->targets[i];

		if ((t->pid != pid && t->pid != -1) || t->trimmed || !t->nr_covered)
			continue;
		t->trimmed = true;
		if (t->multi_fd_covered >= 0) {
			close(t->multi_fd_covered);
			t->multi_fd_covered = -1;
		}
		for (int j = 0; j < t->nr_links; j++) {
			if (!t->covered[j] || !t->links[j])
				continue;
			bpf_link__destroy(t->links[j]);
			t->links[j] = NULL;
		}
		t->nr_probes -= t->nr_covered;
		cp->nr_links -= t->nr_covered;
		cp->st.uprobes_trimmed += t->nr_covered;
		t->nr_covered = 0;
	}
}

/* The return probes of the file's waiting APIs, first: their entries are marked only then. A
 * failure is counted; the calls are still recorded, untimed. */
static void attach_waits(struct cuda_probes *cp, struct target *t, pid_t pid, const char *path,
			 const struct file_info *fi, const char *what)
{
	int n = cuda_wait_links__attach(cp->multi ? cp->multi->progs.xsprof_cuda_ret : NULL,
					cp->skel->progs.xsprof_cuda_ret, pid, path, fi->off,
					&t->waits);

	cp->timing_waits = n > 0;
	if (n > 0) {
		t->nr_waits = n;
	} else if (n < 0) {
		cp->st.attach_failed++;
		set_error(cp, n, "return probes on %s for pid %d", what, (int)pid);
	}
}

static int attach_fd(struct cuda_probes *cp, pid_t pid, int fd, const char *what)
{
	const struct file_info *fi;
	struct target *t;
	char path[64];
	struct stat st;
	int err = 0, need;

	if (fstat(fd, &st))
		return -errno;
	if (find_target(cp, pid, st.st_dev, st.st_ino) >= 0)
		return 0;
	fi = file_info(cp, fd, &st, &err);
	if (!fi) {
		/* Not an x86-64 ELF file: nothing of ours in it. */
		return err == -ENOEXEC ? 0 : err;
	}
	if (!fi->nr_apis && !fi->usdt)
		return 0;
	collect_exited(cp);
	need = fi->nr_apis + fi->usdt;
	if (cp->nr_targets == MAX_TARGETS ||
	    cp->nr_links + need + cuda_waits__count(fi->off) > cp->opts.max_links ||
	    (pid > 0 && pid_targets(cp, pid) >= MAX_FILES_PER_PID)) {
		cp->st.links_capped++;
		set_error(cp, -ENOSPC, "attaching %s (%d probes) for pid %d: %llu probes already",
			  what, need, (int)pid, (unsigned long long)cp->nr_links);
		return -ENOSPC;
	}
	t = &cp->targets[cp->nr_targets];
	memset(t, 0, sizeof(*t));
	t->pid = pid;
	t->pidfd = -1;
	t->multi_fd = -1;
	t->multi_fd_covered = -1;
	t->dev = st.st_dev;
	t->ino = st.st_ino;
	t->links = calloc(need, sizeof(*t->links));
	t->covered = calloc(need, sizeof(*t->covered));
	if (!t->links || !t->covered) {
		free(t->links);
		free(t->covered);
		return -ENOMEM;
	}
	if (!cp->multi_tried) {
		cp->multi_tried = true;
		cp->multi = open_multi(cp->skel); /* best effort: perf-event uprobes otherwise */
	}
	/* Our own fd names the very file, whatever the process's root or the name's fate. */
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	attach_waits(cp, t, pid, path, fi, what);
	if (cp->multi)
		attach_multi_pair(cp, t, pid, path, fi);
	for (size_t i = 0; !t->nr_probes && t->multi_fd < 0 && i < NR_APIS && !err; i++) {
		const struct cuda_api *a = &apis[i];
		LIBBPF_OPTS(bpf_uprobe_opts, uo);

		if (!fi->off[a->id] || is_alias(fi, i))
			continue;
		uo.bpf_cookie = api_cookie(a, pid, cp->timing_waits);
		t->links[t->nr_links] = bpf_program__attach_uprobe_opts(
			cp->skel->progs.xsprof_cuda_call, pid, path, fi->off[a->id], &uo);
		if (!t->links[t->nr_links]) {
			err = -errno;
		} else {
			t->covered[t->nr_links] = cuda_api__usdt_covers(a->id);
			t->nr_covered += t->covered[t->nr_links];
			t->nr_links++, t->nr_probes++;
		}
	}
	if (!err && fi->usdt) {
		t->links[t->nr_links] = bpf_program__attach_usdt(
			cp->skel->progs.xsprof_usdt_launch, pid, path, "xsprof", "launch", NULL);
		if (!t->links[t->nr_links])
			err = -errno;
		else
			t->nr_links++, t->nr_probes++;
	}
	if (!err && pid > 0) {
		t->pidfd = syscall(SYS_pidfd_open, pid, 0);
		if (t->pidfd < 0)
			err = -errno;
	}
	if (err) {
		target__detach(t);
		cp->st.attach_failed++;
		set_error(cp, err, "attaching to %s for %s %d", what,
			  pid > 0 ? "pid" : "every process, pid filter", pid > 0 ? (int)pid : 0);
		return err;
	}
	t->nr_probes += t->nr_waits;
	cp->nr_targets++;
	cp->nr_links += t->nr_probes;
	return 1;
}

/* Who the probes on a file found for pid are for: pid, or everyone in by_file mode. */
static pid_t probe_pid(const struct cuda_probes *cp, pid_t pid)
{
	return cp->opts.by_file ? -1 : pid;
}

int cuda_probes__attach_path(struct cuda_probes *cp, const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	int err;

	if (fd < 0)
		return -errno;
	err = attach_fd(cp, -1, fd, path);
	/* Nothing attached and not because it already was: a file without CUDA APIs. */
	if (!err && !fstat(fd, &st) && find_target(cp, -1, st.st_dev, st.st_ino) < 0)
		err = -ENOENT;
	close(fd);
	return err < 0 ? err : 0;
}

int cuda_probes__attach_exe(struct cuda_probes *cp, pid_t pid, const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	int err;

	if (fd < 0)
		return -errno;
	err = attach_fd(cp, probe_pid(cp, pid), fd, path);
	close(fd);
	return err;
}

static const char *base_name(const char *path)
{
	const char *base = strrchr(path, '/');

	return base ? base + 1 : path;
}

static bool is_gpu_library(const char *path)
{
	const char *base = base_name(path);

	return !strncmp(base, "libcuda", 7) || !strncmp(base, "libxsprof_cupti", 15);
}

/*
 * Open a file pid maps, as pid sees it: through its root, checked against the device and
 * inode of the mapping; else through map_files (a deleted or replaced file).
 */
static int open_mapped(pid_t pid, unsigned long start, unsigned long end, unsigned int maj,
		       unsigned int mnr, unsigned long ino, const char *path)
{
	char buf[PATH_MAX + 64];
	struct stat st;
	int fd;

	if (path[0] == '/' &&
	    (size_t)snprintf(buf, sizeof(buf), "/proc/%d/root%s", (int)pid, path) < sizeof(buf)) {
		fd = open(buf, O_RDONLY | O_CLOEXEC);
		if (fd >= 0 && !fstat(fd, &st) && st.st_ino == ino && major(st.st_dev) == maj &&
		    minor(st.st_dev) == mnr)
			return fd;
		if (fd >= 0)
			close(fd);
	}
	snprintf(buf, sizeof(buf), "/proc/%d/map_files/%lx-%lx", (int)pid, start, end);
	fd = open(buf, O_RDONLY | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

int cuda_probes__attach_pid(struct cuda_probes *cp, pid_t pid)
{
	char buf[64], *line = NULL;
	struct stat exe;
	size_t cap = 0;
	int n = 0, err = 0;
	bool have_exe;
	FILE *f;

	snprintf(buf, sizeof(buf), "/proc/%d/exe", (int)pid);
	have_exe = !stat(buf, &exe);
	snprintf(buf, sizeof(buf), "/proc/%d/maps", (int)pid);
	f = fopen(buf, "re");
	if (!f)
		return errno == ENOENT ? -ESRCH : -errno;
	while (getline(&line, &cap, f) > 0) {
		unsigned long start, end, off, ino;
		unsigned int maj, mnr;
		char perms[5], *path, *nl;
		int pos = 0, fd, ret;

		if (sscanf(line, "%lx-%lx %4s %lx %x:%x %lu %n", &start, &end, perms, &off, &maj,
			   &mnr, &ino, &pos) < 7 ||
		    !pos || perms[2] != 'x' || !ino)
			continue;
		path = line + pos;
		if ((nl = strchr(path, '\n')))
			*nl = '\0';
		/* The executable, for a runtime linked in statically. */
		if (!is_gpu_library(path) &&
		    !(have_exe && exe.st_ino == ino && major(exe.st_dev) == maj &&
		      minor(exe.st_dev) == mnr))
			continue;
		fd = open_mapped(pid, start, end, maj, mnr, ino, path);
		if (fd < 0) {
			err = fd;
			set_error(cp, err, "opening %s of pid %d", path, (int)pid);
			continue;
		}
		ret = attach_fd(cp, probe_pid(cp, pid), fd, path);
		close(fd);
		if (ret < 0)
			err = ret;
		else
			n += ret;
	}
	free(line);
	fclose(f);
	return n ? n : err;
}

/* ---- Records ---- */

/* A process the BPF side stopped for us: on its way again, whatever happened here. */
static void continue_held(struct cuda_probes *cp, pid_t pid, uint32_t flags)
{
	if (flags & XSPROF_CUDA_F_STOPPED) {
		kill(pid, SIGCONT);
		cp->st.stopped++;
	}
}

static void on_lib_event(struct cuda_probes *cp, const struct xsprof_cuda_lib_event *e)
{
	char path[64], name[sizeof(e->name) + 1];
	int fd;

	cp->st.lib_events++;
	memcpy(name, e->name, sizeof(e->name));
	name[sizeof(e->name)] = '\0';
	snprintf(path, sizeof(path), "/proc/%u/fd/%d", e->tgid, e->fd);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		/* A failure is counted and kept in last_error; the process runs on regardless. */
		attach_fd(cp, probe_pid(cp, (pid_t)e->tgid), fd, name);
		close(fd);
	} else if (errno != ENOENT && errno != ESRCH) {
		/* ENOENT: the process is gone (or closed the fd), nothing to attach. */
		cp->st.attach_failed++;
		set_error(cp, -errno, "opening %s (%s) of pid %u", path, name, e->tgid);
	}
	/* Read its mappings while it waits: they hold the library now. */
	if (cp->opts.on_process)
		cp->opts.on_process(cp->opts.ctx, (pid_t)e->tgid);
	continue_held(cp, (pid_t)e->tgid, e->flags);
}

static int on_cuda_record(void *ctx, const void *data, size_t size)
{
	struct cuda_probes *cp = ctx;
	const struct xsprof_cuda_call *r = data;

	if (size < 16)
		return -EBADMSG;
	if (r->api == XSPROF_CUDA_LIB_MAPPED) {
		if (size < sizeof(struct xsprof_cuda_lib_event))
			return -EBADMSG;
		on_lib_event(cp, data);
		return 0;
	}
	if (size < XSPROF_CUDA_CALL_HDR_SIZE || r->nr_user > XSPROF_MAX_STACK_DEPTH ||
	    size < XSPROF_CUDA_CALL_HDR_SIZE + 8u * r->nr_user || r->api >= XSPROF_CUDA_API_MAX) {
		cp->st.bad_records++;
		return -EBADMSG;
	}
	if ((r->flags & (XSPROF_CUDA_F_FIRST | XSPROF_CUDA_F_STOPPED)) && cp->opts.on_process)
		cp->opts.on_process(cp->opts.ctx, (pid_t)r->tgid);
	if (launch_store__add_call(cp->store, r))
		cp->st.store_failures++;
	continue_held(cp, (pid_t)r->tgid, r->flags);
	return 0;
}

/* The code ranges of pid's CUDA, CUPTI and injection libraries (read once per process). */
static const struct lib_ranges *ranges_of(struct cuda_probes *cp, pid_t pid)
{
	struct lib_ranges *lr;
	char path[64], *line = NULL;
	size_t cap = 0;
	FILE *f;

	for (int i = 0; i < MAX_RANGE_PIDS; i++)
		if (cp->ranges[i].pid == pid)
			return &cp->ranges[i];
	lr = &cp->ranges[cp->next_range];
	cp->next_range = (cp->next_range + 1) % MAX_RANGE_PIDS;
	memset(lr, 0, sizeof(*lr));
	lr->pid = pid;
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return lr; /* gone: nothing trimmed */
	while (getline(&line, &cap, f) > 0 && lr->n < MAX_RANGES) {
		unsigned long start, end;
		char perms[5], *nl;
		int pos = 0;

		if (sscanf(line, "%lx-%lx %4s %*x %*x:%*x %*u %n", &start, &end, perms, &pos) < 3 ||
		    !pos || perms[2] != 'x')
			continue;
		if ((nl = strchr(line + pos, '\n')))
			*nl = '\0';
		if (is_gpu_library(line + pos) || !strncmp(base_name(line + pos), "libcupti", 8)) {
			lr->r[lr->n].start = start;
			lr->r[lr->n].end = end;
			lr->n++;
		}
	}
	free(line);
	fclose(f);
	return lr;
}

/* How many innermost frames of a USDT stack are inside those libraries: CUPTI calls
 * libxsprof_cupti from inside the API call, and the user's caller is what the stack is for. */
static unsigned int frames_inside(struct cuda_probes *cp, const struct xsprof_usdt_launch *r)
{
	const struct lib_ranges *lr = ranges_of(cp, (pid_t)r->tgid);
	unsigned int n = 0;

	for (; n < r->nr_user; n++) {
		bool in = false;

		for (int i = 0; i < lr->n && !in; i++)
			in = r->ips[n] >= lr->r[i].start && r->ips[n] < lr->r[i].end;
		if (!in)
			break;
	}
	return n;
}

/* The file holding pid's xsprof:launch site, among the attached targets. */
static const struct file_info *usdt_file_of(const struct cuda_probes *cp, pid_t pid)
{
	for (int i = 0; i < cp->nr_targets; i++) {
		const struct target *t = &cp->targets[i];

		if (t->pid != pid && t->pid != -1)
			continue;
		for (int j = 0; j < cp->nr_files; j++)
			if (cp->files[j].usdt && cp->files[j].dev == t->dev &&
			    cp->files[j].ino == t->ino)
				return &cp->files[j];
	}
	return NULL;
}

/* At pid's 1st, 64th and 4096th firing: trim its launch uprobes (1st), read how its site is
 * probed (the kernel optimises a site after its first hit). */
static void on_usdt_firing(struct cuda_probes *cp, pid_t pid)
{
	struct usdt_pid *u = NULL;
	const struct file_info *fi;

	for (int i = 0; i < MAX_USDT_PIDS && !u; i++)
		if (cp->usdt_pids[i].pid == pid)
			u = &cp->usdt_pids[i];
	if (!u) {
		u = &cp->usdt_pids[cp->next_usdt_pid];
		cp->next_usdt_pid = (cp->next_usdt_pid + 1) % MAX_USDT_PIDS;
		*u = (struct usdt_pid){.pid = pid};
		trim_launch_uprobes(cp, pid);
	}
	u->firings++;
	if (u->firings != 1 && u->firings != 64 && u->firings != 4096)
		return;
	fi = usdt_file_of(cp, pid);
	if (fi && fi->usdt_off) {
		usdt_site__read(pid, fi->dev, fi->ino, fi->usdt_off, &u->mode);
		u->nop5 = fi->usdt_nop5;
	}
}

static int on_usdt_record(void *ctx, const void *data, size_t size)
{
	struct cuda_probes *cp = ctx;
	const struct xsprof_usdt_launch *r = data;

	if (size < XSPROF_USDT_LAUNCH_HDR_SIZE || r->nr_user > XSPROF_MAX_STACK_DEPTH ||
	    size < XSPROF_USDT_LAUNCH_HDR_SIZE + 8u * r->nr_user) {
		cp->st.bad_records++;
		return -EBADMSG;
	}
	if ((r->flags & (XSPROF_CUDA_F_FIRST | XSPROF_CUDA_F_STOPPED)) && cp->opts.on_process)
		cp->opts.on_process(cp->opts.ctx, (pid_t)r->tgid);
	if (launch_store__add_usdt(cp->store, r, frames_inside(cp, r)))
		cp->st.store_failures++;
	on_usdt_firing(cp, (pid_t)r->tgid);
	continue_held(cp, (pid_t)r->tgid, r->flags);
	return 0;
}

/* A waiting call returned: kept beside the calls, in the store of the moment. */
static int on_wait_record(void *ctx, const void *data, size_t size)
{
	struct cuda_probes *cp = ctx;
	int err = cuda_waits__add_record(cp->store, data, size);

	cp->st.bad_records += err == -EBADMSG;
	return err;
}

/* ---- Lifecycle ---- */

struct cuda_probes *cuda_probes__new(struct sampler *s, const struct cuda_probes_opts *opts)
{
	struct cuda_probes *cp = calloc(1, sizeof(*cp));
	int err = -ENOMEM;

	if (!cp)
		return NULL;
	cp->sampler = s;
	cp->skel = sampler__skel(s);
	cp->opts = *opts;
	if (!cp->opts.max_links)
		cp->opts.max_links = DEFAULT_MAX_LINKS;
	cp->store = launch_store__new(opts->max_stacks, opts->max_launches);
	cp->targets = calloc(MAX_TARGETS, sizeof(*cp->targets));
	cp->files = calloc(MAX_FILES, sizeof(*cp->files));
	cp->ranges = calloc(MAX_RANGE_PIDS, sizeof(*cp->ranges));
	cp->usdt_pids = calloc(MAX_USDT_PIDS, sizeof(*cp->usdt_pids));
	if (!cp->store || !cp->targets || !cp->files || !cp->ranges || !cp->usdt_pids)
		goto fail;
	err = sampler__set_handler(s, XSPROF_REC_CUDA_CALL, on_cuda_record, cp);
	if (!err)
		err = sampler__set_handler(s, XSPROF_REC_USDT_LAUNCH, on_usdt_record, cp);
	if (!err)
		err = sampler__set_handler(s, XSPROF_REC_CUDA_WAIT, on_wait_record, cp);
	if (err)
		goto fail;
	return cp;
fail:
	cuda_probes__free(cp);
	errno = -err;
	return NULL;
}

int cuda_probes__start(struct cuda_probes *cp)
{
	struct xsprof_bpf *skel = cp->skel;
	int err = 0;

	if (cp->opts.follow_forks) {
		cp->watch_links[0] = bpf_program__attach_trace(skel->progs.xsprof_follow_fork);
		if (!cp->watch_links[0])
			err = -errno;
		if (!err) {
			cp->watch_links[1] =
				bpf_program__attach_trace(skel->progs.xsprof_unfollow_exit);
			if (!cp->watch_links[1])
				err = -errno;
		}
	}
	if (!err && cp->opts.watch_maps) {
		cp->watch_links[2] = bpf_program__attach_trace(skel->progs.xsprof_watch_mmap);
		if (!cp->watch_links[2])
			err = -errno;
		else
			skel->bss->cuda_stop_processes = true;
	}
	if (err)
		cuda_probes__stop(cp);
	return err;
}

void cuda_probes__stop(struct cuda_probes *cp)
{
	if (!cp)
		return;
	/* No new stops from here; those already queued are continued as they are read. */
	if (cp->skel && cp->skel->bss)
		cp->skel->bss->cuda_stop_processes = false;
	for (int i = 0; i < 3; i++) {
		bpf_link__destroy(cp->watch_links[i]);
		cp->watch_links[i] = NULL;
	}
}

int cuda_probes__rotate_store(struct cuda_probes *cp, struct launch_store **ret_old)
{
	struct launch_store *fresh = launch_store__new(cp->opts.max_stacks, cp->opts.max_launches);

	if (!fresh)
		return -ENOMEM;
	*ret_old = cp->store;
	cp->store = fresh;
	return 0;
}

const struct launch_store *cuda_probes__store(const struct cuda_probes *cp)
{
	return cp->store;
}

const struct bpf_object *cuda_probes__multi_obj(const struct cuda_probes *cp)
{
	return cp->multi ? cp->multi->obj : NULL;
}

int cuda_probes__stats(const struct cuda_probes *cp, struct cuda_probes_stats *ret)
{
	int ncpu = sampler__nr_cpus(cp->sampler);
	struct xsprof_cuda_stats *vals;
	__u32 zero = 0;

	vals = calloc(ncpu, sizeof(*vals));
	if (!vals)
		return -ENOMEM;
	if (bpf_map__lookup_elem(cp->skel->maps.cuda_stats, &zero, sizeof(zero), vals,
				 sizeof(*vals) * ncpu, 0)) {
		free(vals);
		return -errno;
	}
	*ret = cp->st;
	ret->targets = cp->nr_targets;
	ret->links = cp->nr_links;
	for (int i = 0; i < MAX_USDT_PIDS; i++) {
		ret->usdt_site_call += cp->usdt_pids[i].mode == USDT_SITE_CALL;
		ret->usdt_site_trap += cp->usdt_pids[i].mode == USDT_SITE_TRAP;
		ret->usdt_site_trap_nop5 +=
			cp->usdt_pids[i].mode == USDT_SITE_TRAP && cp->usdt_pids[i].nop5;
		ret->usdt_site_nop += cp->usdt_pids[i].mode == USDT_SITE_NOP;
		ret->usdt_site_unread +=
			cp->usdt_pids[i].pid && cp->usdt_pids[i].mode == USDT_SITE_UNKNOWN;
	}
	memset(&ret->bpf, 0, sizeof(ret->bpf));
	for (int i = 0; i < ncpu; i++) {
		const __u64 *src = (const __u64 *)&vals[i];
		__u64 *dst = (__u64 *)&ret->bpf;

		for (size_t j = 0; j < sizeof(ret->bpf) / sizeof(__u64); j++)
			dst[j] += src[j];
	}
	free(vals);
	return cuda_waits__bpf_stats(cp->skel->maps.wait_stats, ncpu, &ret->waits);
}

const char *cuda_probes__last_error(const struct cuda_probes *cp)
{
	return cp->last_error[0] ? cp->last_error : NULL;
}

void cuda_probes__free(struct cuda_probes *cp)
{
	if (!cp)
		return;
	cuda_probes__stop(cp);
	if (cp->sampler) {
		sampler__set_handler(cp->sampler, XSPROF_REC_CUDA_CALL, NULL, NULL);
		sampler__set_handler(cp->sampler, XSPROF_REC_USDT_LAUNCH, NULL, NULL);
		sampler__set_handler(cp->sampler, XSPROF_REC_CUDA_WAIT, NULL, NULL);
	}
	while (cp->targets && cp->nr_targets)
		remove_target(cp, cp->nr_targets - 1);
	free(cp->targets);
	xsprof_bpf__destroy(cp->multi);
	free(cp->files);
	free(cp->ranges);
	free(cp->usdt_pids);
	launch_store__free(cp->store);
	free(cp);
}
