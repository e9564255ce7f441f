// SPDX-License-Identifier: Apache-2.0
/* Naming an address: a user address by its process's snapshot (file symbols, perf maps, the
 * vDSO, labels), with lines and inlined frames when asked; a kernel address by kallsyms. */
#include "daemon/symbolize/symbolizer_internal.h"

static struct process *process__get(struct symbolizer *s, pid_t pid, uint32_t gen)
{
	struct process *p;

	if (gen) {
		if (s->last && s->last->pid == pid && s->last->gen == gen)
			return s->last;
		p = hashmap__get(s->procs, (uint64_t)pid, gen);
	} else {
		p = sym_process__current(s, pid);
		if (!p && pid > 0 && symbolizer__gen(s, pid))
			p = sym_process__current(s, pid);
	}
	if (p)
		s->last = p;
	return p;
}

/* "module+0xOFF", formatted once per (owner, offset) until the next trim. */
static const char *unnamed(struct symbolizer *s, const void *owner, const char *module,
			   uint64_t off)
{
	char *name;
	int len;

	name = hashmap__get(s->names, (uintptr_t)owner, off);
	if (name)
		return name;
	len = snprintf(NULL, 0, "%s+0x%" PRIx64, module, off);
	if (len < 0)
		return UNKNOWN;
	name = arena__alloc(s->names_arena, (size_t)len + 1);
	if (!name)
		return UNKNOWN;
	snprintf(name, (size_t)len + 1, "%s+0x%" PRIx64, module, off);
	hashmap__put(s->names, (uintptr_t)owner, off, name);
	return name;
}

static struct elf_symtab *vdso_table(struct symbolizer *s)
{
	uint64_t base = getauxval(AT_SYSINFO_EHDR);
	const struct proc_map *m;
	struct proc_maps *maps;

	if (s->vdso_tried)
		return s->vdso;
	s->vdso_tried = true;
	if (!base)
		return NULL;
	/* Every process of this kernel and ABI maps the same image: read our own. */
	maps = proc_maps__read(NULL, getpid());
	m = maps ? proc_maps__find(maps, base) : NULL;
	if (m && m->start == base) {
		s->vdso_size = m->end - m->start;
		s->vdso = elf_symtab__open_memory((const void *)(uintptr_t)base, s->vdso_size);
	}
	proc_maps__free(maps);
	return s->vdso;
}

/* "vdso_fn@0xSTART": a vDSO function without a symbol, one name for all its addresses. */
static const char *vdso_fn_name(struct symbolizer *s, uint64_t start)
{
	char buf[40];
	const char *name;

	snprintf(buf, sizeof(buf), "vdso_fn@0x%" PRIx64, start);
	name = sym_intern_label(s, buf);
	return name ? name : UNKNOWN;
}

static const char *jit_name(struct symbolizer *s, struct process *p, uint64_t addr)
{
	const struct perf_map_sym *sym = NULL;
	uint64_t now;
	size_t before;

	if (!s->perf_maps)
		return NULL;
	now = clock__mono_ns();
	if (p->jit_fd < 0 &&
	    (!p->jit_checked_ns || now - p->jit_checked_ns >= PERF_MAP_RECHECK_NS)) {
		/* Written after our snapshot, maybe: look again, not on every lookup. */
		p->jit_checked_ns = now;
		sym_process__open_jit(s, p);
		if (p->jit_fd >= 0)
			p->jit_checked_ns = 0;
	}
	if (p->jit_fd < 0)
		return NULL;
	if (!p->jit) {
		p->jit = perf_map__new();
		if (!p->jit)
			return NULL;
	}
	sym = perf_map__lookup(p->jit, addr);
	/* A miss may be code compiled since the last read: the file only grows. */
	if (!sym && (!p->jit_checked_ns || now - p->jit_checked_ns >= PERF_MAP_RECHECK_NS)) {
		p->jit_checked_ns = now;
		before = perf_map__bytes(p->jit);
		if (perf_map__update_fd(p->jit, p->jit_fd) == -EFBIG && !p->jit_capped) {
			p->jit_capped = true;
			s->stats.perf_maps_capped++;
		}
		s->jit_bytes += perf_map__bytes(p->jit) - before;
		sym_note_bytes(s);
		sym = perf_map__lookup(p->jit, addr);
	}
	if (!sym)
		return NULL;
	s->stats.perf_map_hits++;
	return sym->name;
}

/* What an address resolved to: the name, and for symbols in files, where to find DWARF. */
struct resolved {
	const char *name;
	struct elf_file *file;
	uint64_t vaddr;
	bool named; /* a symbol, not module+0xOFF */
};

static void name_in_mapping(struct symbolizer *s, struct process *p, size_t idx, uint64_t addr,
			    struct resolved *r)
{
	const struct proc_map *m = proc_maps__at(p->maps, idx);
	const struct map_slot *slot = &p->slots[idx];
	struct elf_file *f = slot->file;
	const struct elf_sym *sym;
	struct elf_symtab *vdso;
	uint64_t off, vaddr;
	const char *jit;

	switch (slot->kind) {
	case SLOT_FILE:
		break;
	case SLOT_VDSO:
		vdso = vdso_table(s);
		if (vdso && m->end - m->start == s->vdso_size &&
		    !elf_symtab__offset_to_vaddr(vdso, addr - m->start, &vaddr)) {
			if ((sym = elf_symtab__lookup(vdso, vaddr))) {
				r->name = sym->name;
				r->named = true;
				return;
			}
			/* A static helper (the clock read): named by where it starts. */
			if (!elf_symtab__fn_start(vdso, vaddr, &off)) {
				r->name = vdso_fn_name(s, off);
				r->named = strcmp(r->name, UNKNOWN) != 0;
				return;
			}
		}
		r->name = unnamed(s, slot->label, slot->label, addr - m->start);
		return;
	case SLOT_ANON:
	case SLOT_LABEL:
		jit = jit_name(s, p, addr);
		if (jit) {
			r->name = jit;
			r->named = true;
			return;
		}
		r->name = unnamed(s, slot->label, slot->label, addr - m->start);
		return;
	default:
		return;
	}
	f->last_used = s->tick;
	off = addr - m->start + m->offset;
	/* Without a file (or a segment holding off), the file offset is the best address left. */
	if (sym_file__load(s, f) || elf_symtab__offset_to_vaddr(f->tab, off, &vaddr)) {
		r->name = unnamed(s, f, f->basename, off);
		return;
	}
	r->file = f;
	r->vaddr = vaddr;
	sym = elf_symtab__lookup(f->tab, vaddr);
	if (!sym) {
		r->name = unnamed(s, f, f->basename, vaddr);
		return;
	}
	r->name = s->demangle ? elf_symtab__demangled(f->tab, sym) : sym->name;
	r->named = true;
}

/* What addr is, without counting a lookup (resolve_user counts). */
static void locate_user(struct symbolizer *s, pid_t pid, uint32_t gen, uint64_t addr,
			struct resolved *r)
{
	struct process *p;
	ssize_t idx = -ENOENT;

	memset(r, 0, sizeof(*r));
	r->name = UNKNOWN;
	s->tick++;
	if (frame_token__is(addr)) {
		const char *name = frame_names__name(s->frame_names, addr);

		r->name = name ? name : UNKNOWN;
		r->named = name != NULL;
		return;
	}
	p = process__get(s, pid, gen);
	if (!p)
		return;
	p->last_used = s->tick;
	if (p->maps)
		idx = proc_maps__index(p->maps, addr);
	if (idx < 0 && !p->dead && clock__mono_ns() - p->read_ns >= REFRESH_INTERVAL_NS) {
		if (!sym_process__read(s, p) && p->maps)
			idx = proc_maps__index(p->maps, addr);
	}
	if (idx >= 0) {
		name_in_mapping(s, p, (size_t)idx, addr, r);
		return;
	}
	/* Outside every mapping we have: JIT code mapped since the last read, which the process's
	 * perf map may name (its ranges are exact), even once the process is gone. */
	r->name = jit_name(s, p, addr);
	r->named = r->name != NULL;
	if (!r->name)
		r->name = UNKNOWN;
}

static void resolve_user(struct symbolizer *s, pid_t pid, uint32_t gen, uint64_t addr,
			 struct resolved *r)
{
	locate_user(s, pid, gen, addr, r);
	s->stats.user_lookups++;
	if (!r->named)
		s->stats.user_unresolved++;
}

const char *symbolizer__user_gen(struct symbolizer *s, pid_t pid, uint32_t gen, uint64_t addr)
{
	struct resolved r;

	resolve_user(s, pid, gen, addr, &r);
	return r.name;
}

size_t symbolizer__user_depth(struct symbolizer *s, pid_t pid, uint32_t gen, const uint64_t *ips,
			      size_t n)
{
	struct process *p = process__get(s, pid, gen);
	const struct proc_map *m;

	if (!p || !p->maps)
		return n;
	for (size_t i = 1; i < n; i++) {
		m = proc_maps__find(p->maps, ips[i] - 1);
		if (m && !(m->perms & PROC_MAP_EXEC)) {
			s->stats.bogus_frames += n - i;
			return i;
		}
	}
	return n;
}

const char *symbolizer__user(struct symbolizer *s, pid_t pid, uint64_t addr)
{
	return symbolizer__user_gen(s, pid, 0, addr);
}

int symbolizer__user_site(struct symbolizer *s, pid_t pid, uint32_t gen, uint64_t addr,
			  struct symbolizer_site *ret)
{
	struct resolved r;

	/* The frame was named (and counted) already: this asks again where it lies. */
	locate_user(s, pid, gen, addr, &r);
	if (!r.file || !r.file->tab ||
	    elf_symtab__segment(r.file->tab, r.vaddr, &ret->seg_start, &ret->seg_end,
				&ret->seg_off))
		return -ENOENT;
	ret->path = r.file->path;
	ret->vaddr = r.vaddr;
	ret->build_id_len = elf_symtab__build_id(r.file->tab, &ret->build_id);
	if (!ret->build_id_len)
		ret->build_id = NULL;
	return 0;
}

void symbolizer__set_sites(struct symbolizer *s, struct frame_sites *sites)
{
	s->sites = sites;
}

struct frame_sites *symbolizer__sites(const struct symbolizer *s)
{
	return s->sites;
}

static struct dwarf_lines *file__dwarf(struct symbolizer *s, struct elf_file *f)
{
	struct elf_symtab *dbg;
	char root[PATH_MAX];
	int fd = -1;

	if (f->dw || f->dw_tried)
		return f->dw;
	f->dw_tried = true;
	if (elf_symtab__has_dwarf(f->tab)) {
		fd = f->fd >= 0 ? fcntl(f->fd, F_DUPFD_CLOEXEC, 0) : sym_file__reopen(s, f);
	} else {
		if (!f->debug_path && !f->debug_tried) {
			/* Not stripped, so never looked for, but its DWARF may be split off. */
			f->debug_tried = true;
			sym_owner_root(s, f, root, sizeof(root));
			dbg = debuginfo__find(s->dbg, f->tab, root, f->path, &f->debug_path);
			if (dbg)
				s->stats.debug_files++;
			elf_symtab__free(dbg);
		}
		if (f->debug_path)
			fd = open(f->debug_path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	}
	if (fd < 0)
		return NULL;
	f->dw = dwarf_lines__open(fd);
	if (f->dw) {
		f->bytes += dwarf_lines__bytes(f->dw);
		s->file_bytes += dwarf_lines__bytes(f->dw);
		sym_note_bytes(s);
	}
	return f->dw;
}

static const char *demangled_copy(struct symbolizer *s, const char *name)
{
	const char *copy;
	char *d;

	if (!s->demangle || !demangle__is_cxx(name))
		return name;
	d = demangle__cxx(name);
	if (!d)
		return name;
	copy = arena__strndup(s->names_arena, d, strlen(d));
	free(d);
	return copy ? copy : name;
}

/* A DWARF answer kept until the next trim: walking scopes costs ~100 us, a lookup here ~50 ns. */
struct frames_memo {
	int n;
	struct symbolizer_frame f[];
};

static struct frames_memo *memo_new(struct symbolizer *s, int n)
{
	size_t size = sizeof(struct frames_memo) + (size_t)n * sizeof(struct symbolizer_frame);
	char *p = arena__alloc(s->names_arena, size + 7);

	/* The arena is for text: align by hand. */
	return p ? (struct frames_memo *)(((uintptr_t)p + 7) & ~(uintptr_t)7) : NULL;
}

int symbolizer__user_frames(struct symbolizer *s, pid_t pid, uint32_t gen, uint64_t addr,
			    struct symbolizer_frame *ret, int max)
{
	struct dwarf_frame df[DWARF_LINES_MAX_INLINE];
	struct frames_memo *memo;
	struct dwarf_lines *dw;
	struct resolved r;
	int n, i;

	if (max < 1)
		return -EINVAL;
	resolve_user(s, pid, gen, addr, &r);
	ret[0] = (struct symbolizer_frame){.name = r.name};
	if (!s->debug_info || !r.file || !r.file->tab)
		return 1;
	memo = hashmap__get(s->lines, (uintptr_t)r.file, r.vaddr);
	if (memo && memo->n <= max) {
		memcpy(ret, memo->f, (size_t)memo->n * sizeof(*ret));
		return memo->n;
	}
	dw = file__dwarf(s, r.file);
	if (!dw)
		return 1;
	n = dwarf_lines__frames(dw, r.vaddr, s->names_arena, df,
				max < DWARF_LINES_MAX_INLINE ? max : DWARF_LINES_MAX_INLINE);
	if (n <= 0)
		return 1;
	for (i = 0; i < n; i++) {
		ret[i].file = df[i].file;
		ret[i].line = df[i].line;
		ret[i].inlined = df[i].inlined;
		/* The function that holds the rest keeps its symbol-table name, as without DWARF. */
		if (i == n - 1 && !df[i].inlined)
			ret[i].name = r.name;
		else
			ret[i].name = df[i].name ? demangled_copy(s, df[i].name) : r.name;
	}
	memo = memo_new(s, n);
	if (memo) {
		memo->n = n;
		memcpy(memo->f, ret, (size_t)n * sizeof(*ret));
		hashmap__put(s->lines, (uintptr_t)r.file, r.vaddr, memo);
	}
	sym_note_bytes(s);
	return n;
}

/* "[bpf] NAME" for kallsyms' bpf_prog_TAG_NAME (and other [bpf] entries, trampolines). */
static const char *bpf_name(struct symbolizer *s, const struct ksym *ks)
{
	const char *n = ks->name, *p;
	char *name;
	size_t len;

	/* Keyed by the symbol's address: ks is a view that the next lookup reuses. */
	name = hashmap__get(s->names, (uintptr_t)ks->addr, KNAME_KEY);
	if (name)
		return name;
	if (!strncmp(n, "bpf_prog_", 9)) {
		p = n + 9 + strspn(n + 9, "0123456789abcdef");
		n = *p == '_' && p[1] ? p + 1 : n + 4; /* "prog_TAG" when it has no name */
	} else if (!strncmp(n, "bpf_", 4)) {
		n += 4;
	}
	len = strlen(n) + sizeof("[bpf] ");
	name = arena__alloc(s->names_arena, len);
	if (!name)
		return ks->name;
	snprintf(name, len, "[bpf] %s", n);
	hashmap__put(s->names, (uintptr_t)ks->addr, KNAME_KEY, name);
	return name;
}

const char *symbolizer__kernel(struct symbolizer *s, uint64_t addr)
{
	const struct ksym *ks = NULL;
	struct kallsyms *k;

	s->stats.kernel_lookups++;
	if (!s->ksyms_tried) {
		/* Read once: a failure (no permission, kptr_restrict) will not change later. */
		s->ksyms_tried = true;
		if (s->kallsyms_cache) {
			bool cached;

			s->ksyms = kallsyms__load_cached(s->kallsyms_cache, &cached);
			/* The cache lacks BPF programs and trampolines: the first frame it cannot
			 * name reads /proc/kallsyms at once, not 10 s later. */
			s->ksyms_ns = cached ? 0 : clock__mono_ns();
		} else {
			s->ksyms = kallsyms__load(s->kallsyms_path);
			s->ksyms_ns = clock__mono_ns();
		}
	}
	if (s->ksyms)
		ks = kallsyms__lookup(s->ksyms, addr);
	if (!ks && s->ksyms && !s->old_ksyms &&
	    clock__mono_ns() - s->ksyms_ns >= KALLSYMS_RELOAD_NS) {
		/* A BPF program or module loaded since the last read. The old table's strings
		 * stay valid until the next trim. */
		k = kallsyms__load(s->kallsyms_path);
		s->ksyms_ns = clock__mono_ns();
		if (k) {
			s->old_ksyms = s->ksyms;
			s->ksyms = k;
			ks = kallsyms__lookup(k, addr);
		}
	}
	if (!ks) {
		s->stats.kernel_unresolved++;
		return UNKNOWN_KERNEL;
	}
	if (ks->module && !strcmp(ks->module, "bpf"))
		return bpf_name(s, ks);
	return ks->name;
}
