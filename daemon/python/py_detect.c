// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon/python/py_code.h"
#include "daemon/python/py_detect.h"
#include "daemon/symbolize/proc_maps.h"

/* Symbols looked up in the interpreter file. */
struct py_syms {
	uint64_t runtime, eval, eval_size, code_type, version;
	bool has_runtime, has_eval, has_code_type, has_version;
};

static bool parse_version(const char *p, unsigned int *major, unsigned int *minor,
			  const char **ret_end)
{
	char *end;
	unsigned long a, b;

	if (*p < '0' || *p > '9')
		return false;
	a = strtoul(p, &end, 10);
	if (*end != '.' || end[1] < '0' || end[1] > '9')
		return false;
	b = strtoul(end + 1, &end, 10);
	if (a > 9 || b > 99)
		return false;
	*major = (unsigned int)a;
	*minor = (unsigned int)b;
	*ret_end = end;
	return true;
}

bool py_detect__parse_name(const char *base, unsigned int *ret_major, unsigned int *ret_minor,
			   bool *ret_shared, bool *ret_ft)
{
	unsigned int major = 0, minor = 0;
	const char *rest, *end = NULL;
	bool shared;

	if (!strncmp(base, "libpython", 9)) {
		shared = true;
		rest = base + 9;
	} else if (!strncmp(base, "python", 6)) {
		shared = false;
		rest = base + 6;
	} else {
		return false;
	}
	if (parse_version(rest, &major, &minor, &end)) {
		*ret_ft = *end == 't';
		while (*end == 't' || *end == 'd' || *end == 'm')
			end++;
		/* An executable is named python3.X exactly; a library continues with .so. */
		if (shared ? strncmp(end, ".so", 3) != 0 : *end != '\0')
			return false;
	} else {
		/* "python", "python3": a build whose name says no minor version. */
		if (shared || (rest[0] && strcmp(rest, "3")))
			return false;
		*ret_ft = false;
	}
	*ret_major = major;
	*ret_minor = minor;
	*ret_shared = shared;
	return true;
}

static void scan_symbols(Elf *elf, struct py_syms *s)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;
		size_t n;

		if (!gelf_getshdr(scn, &sh) ||
		    (sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM))
			continue;
		d = elf_getdata(scn, NULL);
		if (!d || !sh.sh_entsize)
			continue;
		n = sh.sh_size / sh.sh_entsize;
		for (size_t i = 0; i < n; i++) {
			GElf_Sym sym;
			const char *name;

			if (!gelf_getsym(d, (int)i, &sym) || sym.st_shndx == SHN_UNDEF)
				continue;
			name = elf_strptr(elf, sh.sh_link, sym.st_name);
			if (!name || (name[0] != '_' && name[0] != 'P'))
				continue;
			if (!strcmp(name, "_PyRuntime")) {
				s->runtime = sym.st_value;
				s->has_runtime = true;
			} else if (!strcmp(name, "_PyEval_EvalFrameDefault")) {
				s->eval = sym.st_value;
				s->eval_size = sym.st_size;
				s->has_eval = true;
			} else if (!strcmp(name, "PyCode_Type")) {
				s->code_type = sym.st_value;
				s->has_code_type = true;
			} else if (!strcmp(name, "Py_Version")) {
				s->version = sym.st_value;
				s->has_version = true;
			}
		}
	}
}

/* The ELF virtual address at file offset off (a PT_LOAD segment's), or -ENOENT. */
static int offset_vaddr(Elf *elf, uint64_t off, uint64_t *ret)
{
	size_t n;

	if (elf_getphdrnum(elf, &n))
		return -EBADMSG;
	for (size_t i = 0; i < n; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		if (off >= ph.p_offset && off < ph.p_offset + ph.p_filesz) {
			*ret = ph.p_vaddr + (off - ph.p_offset);
			return 0;
		}
	}
	return -ENOENT;
}

/* Symbols and load bias of the file mapped at m (first mapping of it). */
static int read_file(const char *proc_root, pid_t pid, const struct proc_map *m, struct py_syms *s,
		     uint64_t *ret_bias)
{
	char path[PATH_MAX];
	uint64_t vaddr;
	Elf *elf;
	int fd, err;

	snprintf(path, sizeof(path), "%s/%d/map_files/%llx-%llx", proc_root, (int)pid,
		 (unsigned long long)m->start, (unsigned long long)m->end);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		snprintf(path, sizeof(path), "%s/%d/root%s", proc_root, (int)pid, m->path);
		fd = open(path, O_RDONLY | O_CLOEXEC);
	}
	if (fd < 0)
		return errno == ENOENT ? -ESRCH : -errno;
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF) {
		err = -ENOEXEC;
		goto out;
	}
	scan_symbols(elf, s);
	err = offset_vaddr(elf, m->offset, &vaddr);
	if (!err)
		*ret_bias = m->start - vaddr;
out:
	elf_end(elf);
	close(fd);
	return err;
}

/* The mapping to read: a libpython wins over the executable (a shared build's executable holds
 * no interpreter). NULL when there is none. */
static const struct proc_map *pick(const struct proc_maps *maps, unsigned int *major,
				   unsigned int *minor, bool *shared, bool *ft)
{
	const struct proc_map *best = NULL;

	for (size_t i = 0; i < proc_maps__count(maps); i++) {
		const struct proc_map *m = proc_maps__at(maps, i);
		const char *base;
		unsigned int a, b;
		bool sh, f;

		if (!m->path || m->path[0] != '/')
			continue;
		base = strrchr(m->path, '/') + 1;
		if (!py_detect__parse_name(base, &a, &b, &sh, &f))
			continue;
		if (best && (*shared || !sh))
			continue; /* the first mapping of the chosen file is the one kept */
		best = m;
		*major = a;
		*minor = b;
		*shared = sh;
		*ft = f;
	}
	return best;
}

static void text_range(const struct proc_maps *maps, const struct proc_map *file,
		       struct py_target *t)
{
	for (size_t i = 0; i < proc_maps__count(maps); i++) {
		const struct proc_map *m = proc_maps__at(maps, i);

		if ((m->perms & PROC_MAP_EXEC) && m->path && !strcmp(m->path, file->path) &&
		    m->inode == file->inode) {
			t->text_start = m->start;
			t->text_end = m->end;
			return;
		}
	}
}

int py_detect(const char *proc_root, pid_t pid, struct py_target *ret, const char **ret_reason)
{
	struct py_target t = {0};
	struct py_syms s = {0};
	const struct proc_map *m;
	struct proc_maps *maps;
	uint64_t bias = 0;
	uint32_t version;
	bool ft = false;
	int err;

	if (!proc_root)
		proc_root = "/proc";
	maps = proc_maps__read(proc_root, pid);
	if (!maps)
		return errno == ENOENT ? -ESRCH : -errno;
	m = pick(maps, &t.major, &t.minor, &t.shared, &ft);
	if (!m) {
		err = -ENOENT;
		goto out;
	}
	err = read_file(proc_root, pid, m, &s, &bias);
	if (err == -ESRCH)
		goto out;
	err = -ENOTSUP;
	if (ft) {
		*ret_reason = "a free-threaded CPython build: not walked";
		goto out;
	}
	if (!s.has_runtime) {
		/* A shared build's executable, before the loader mapped its libpython. */
		if (!t.shared) {
			err = -ENOENT;
			goto out;
		}
		*ret_reason = "the interpreter file has no _PyRuntime symbol";
		goto out;
	}
	if (s.has_version && !py_mem_read(pid, bias + s.version, &version, sizeof(version))) {
		t.major = version >> 24;
		t.minor = (version >> 16) & 0xff;
	}
	if (!t.major) {
		*ret_reason = "the CPython version could not be told (no Py_Version, no version in "
			      "the file's name)";
		goto out;
	}
	t.runtime = bias + s.runtime;
	if (s.has_eval) {
		t.eval_start = bias + s.eval;
		t.eval_end = t.eval_start + (s.eval_size ? s.eval_size : 1);
	}
	if (s.has_code_type)
		t.code_type = bias + s.code_type;
	text_range(maps, m, &t);
	*ret = t;
	err = 0;
out:
	proc_maps__free(maps);
	return err;
}
