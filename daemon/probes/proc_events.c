// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "bpf/xsprof_events.h"
#include "daemon/probes/proc_events.h"
#include "daemon/probes/sampler.h"
#include "daemon/python/autograd.h"
#include "daemon/python/pyprof.h"
#include "daemon/symbolize/proc_maps.h"
#include "daemon/symbolize/symbolizer.h"
#include "daemon/unwind/unwinder.h"
#include "xsprof.skel.h"

struct proc_events {
	struct sampler *sampler;
	struct symbolizer *sym;
	struct unwinder *uw; /* NULL: frame pointers only */
	struct pyprof *py;   /* NULL: no interpreter frames */
	struct autograd *ag; /* NULL: no autograd probes */
	struct xsprof_bpf *skel;
	struct bpf_link *exec_link, *libs_link, *exit_link;
	proc_exit_fn on_exit;
	void *on_exit_ctx;
	proc_exec_fn on_exec;
	void *on_exec_ctx;
	struct proc_events_stats st;
};

static int on_proc_exec(void *ctx, const void *data, size_t size)
{
	struct proc_events *pe = ctx;
	const struct xsprof_proc_exec *e = data;
	int err;

	if (size < sizeof(*e) || e->type != XSPROF_REC_PROC_EXEC || !e->tgid || e->tgid > INT32_MAX)
		return -EBADMSG;
	if (e->flags & XSPROF_PROC_EXEC_F_LIBS) {
		pe->st.libs++;
		err = symbolizer__refresh(pe->sym, (pid_t)e->tgid);
	} else {
		pe->st.execs++;
		err = symbolizer__exec(pe->sym, (pid_t)e->tgid);
	}
	/* The tables before the new image's first samples, as far as the reader keeps up. */
	if (pe->uw && err != -ESRCH)
		unwinder__add_process(pe->uw, (pid_t)e->tgid);
	/* The interpreter before the new image's first samples too; a new image forgets the
	 * old one's code objects. */
	if (pe->py && err != -ESRCH) {
		/* A libtorch a CPython we walk loaded now gets its probes; a new image drops the
		 * old one's. */
		if (!(e->flags & XSPROF_PROC_EXEC_F_LIBS))
			pyprof__exec(pe->py, (pid_t)e->tgid);
		else if (!pyprof__add_process(pe->py, (pid_t)e->tgid) && pe->ag)
			autograd__scan(pe->ag, (pid_t)e->tgid);
		if (!(e->flags & XSPROF_PROC_EXEC_F_LIBS) && pe->ag)
			autograd__exit(pe->ag, (pid_t)e->tgid);
	}
	/* A process that was already gone is counted, not an error of the record. */
	if (err == -ESRCH)
		pe->st.gone++;
	else if (pe->on_exec && !(e->flags & XSPROF_PROC_EXEC_F_LIBS))
		pe->on_exec(pe->on_exec_ctx, e->tgid);
	return 0;
}

static int on_proc_exit(void *ctx, const void *data, size_t size)
{
	struct proc_events *pe = ctx;
	const struct xsprof_proc_exit *e = data;

	if (size < sizeof(*e) || e->type != XSPROF_REC_PROC_EXIT || !e->tgid || e->tgid > INT32_MAX)
		return -EBADMSG;
	pe->st.exits++;
	symbolizer__exit(pe->sym, (pid_t)e->tgid);
	if (pe->uw)
		unwinder__remove_process(pe->uw, (pid_t)e->tgid);
	if (pe->py)
		pyprof__exit(pe->py, (pid_t)e->tgid);
	if (pe->ag)
		autograd__exit(pe->ag, (pid_t)e->tgid);
	if (pe->on_exit)
		pe->on_exit(pe->on_exit_ctx, e->tgid, e->time_ns, (int)(e->exit_code & 0x7f));
	return 0;
}

void proc_events__set_on_exec(struct proc_events *pe, proc_exec_fn fn, void *ctx)
{
	pe->on_exec = fn;
	pe->on_exec_ctx = ctx;
}

void proc_events__set_on_exit(struct proc_events *pe, proc_exit_fn fn, void *ctx)
{
	pe->on_exit = fn;
	pe->on_exit_ctx = ctx;
}

/*
 * Our own dynamic loader is the host's: the one AT_BASE says was mapped for us. Processes with
 * another loader (containers, other libcs) are read at exec and at their first sample only.
 */
static struct bpf_link *attach_loader(struct bpf_program *prog)
{
	LIBBPF_OPTS(bpf_uprobe_opts, uo, .func_name = "_dl_debug_state");
	uint64_t base = getauxval(AT_BASE);
	const struct proc_map *m;
	struct bpf_link *link = NULL;
	struct proc_maps *maps;

	if (!base)
		return NULL;
	maps = proc_maps__read(NULL, getpid());
	m = maps ? proc_maps__find(maps, base) : NULL;
	if (m && m->path && m->path[0] == '/' && !m->deleted)
		link = bpf_program__attach_uprobe_opts(prog, -1, m->path, 0, &uo);
	proc_maps__free(maps);
	return link;
}

struct proc_events *proc_events__attach(struct sampler *s, struct symbolizer *sym)
{
	struct proc_events *pe = calloc(1, sizeof(*pe));
	int err;

	if (!pe)
		return NULL;
	pe->sampler = s;
	pe->sym = sym;
	pe->skel = sampler__skel(s);
	err = sampler__set_handler(s, XSPROF_REC_PROC_EXEC, on_proc_exec, pe);
	if (!err)
		err = sampler__set_handler(s, XSPROF_REC_PROC_EXIT, on_proc_exit, pe);
	if (err)
		goto fail;
	pe->exec_link = bpf_program__attach(pe->skel->progs.xsprof_proc_exec);
	if (!pe->exec_link) {
		err = -errno;
		goto fail;
	}
	pe->exit_link = bpf_program__attach(pe->skel->progs.xsprof_proc_exit);
	if (!pe->exit_link) {
		err = -errno;
		goto fail;
	}
	/* Without it, libraries mapped after exec are read at the first sample instead. */
	pe->libs_link = attach_loader(pe->skel->progs.xsprof_proc_libs);
	pe->st.libs_attached = pe->libs_link != NULL;
	pe->skel->bss->proc_events_on = true;
	return pe;
fail:
	proc_events__free(pe);
	errno = -err;
	return NULL;
}

void proc_events__set_unwinder(struct proc_events *pe, struct unwinder *uw)
{
	pe->uw = uw;
}

void proc_events__set_python(struct proc_events *pe, struct pyprof *py)
{
	pe->py = py;
}

void proc_events__set_autograd(struct proc_events *pe, struct autograd *ag)
{
	pe->ag = ag;
}

void proc_events__free(struct proc_events *pe)
{
	if (!pe)
		return;
	if (pe->skel && pe->skel->bss)
		pe->skel->bss->proc_events_on = false;
	bpf_link__destroy(pe->exec_link);
	bpf_link__destroy(pe->libs_link);
	bpf_link__destroy(pe->exit_link);
	sampler__set_handler(pe->sampler, XSPROF_REC_PROC_EXEC, NULL, NULL);
	sampler__set_handler(pe->sampler, XSPROF_REC_PROC_EXIT, NULL, NULL);
	free(pe);
}

int proc_events__stats(const struct proc_events *pe, struct proc_events_stats *ret)
{
	int ncpu = libbpf_num_possible_cpus();
	struct xsprof_proc_stats *v;
	__u32 zero = 0;
	int err = 0;

	*ret = pe->st;
	if (ncpu <= 0)
		return ncpu ? ncpu : -EINVAL;
	v = calloc((size_t)ncpu, sizeof(*v));
	if (!v)
		return -ENOMEM;
	if (bpf_map__lookup_elem(pe->skel->maps.proc_stats, &zero, sizeof(zero), v,
				 sizeof(*v) * (size_t)ncpu, 0))
		err = -errno;
	for (int i = 0; !err && i < ncpu; i++) {
		ret->bpf_drop_ringbuf += v[i].drop_ringbuf;
		ret->over_budget += v[i].over_budget;
	}
	free(v);
	return err;
}
