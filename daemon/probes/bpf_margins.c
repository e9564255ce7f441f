// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <linux/bpf.h>

#include "daemon/probes/bpf_margins.h"

/* BPF_LOG_STATS: the verifier prints its statistics only, not every instruction. */
#define LOG_STATS    4
#define LOG_BYTES    (64u << 10)
#define MAX_SUBPROGS 128

struct margins_log {
	const struct bpf_program *prog;
	char *buf;
};

static struct margins_log *logs;
static size_t nr_logs;

int bpf_margins__prepare(struct bpf_object *obj)
{
	struct bpf_program *prog;

	bpf_object__for_each_program(prog, obj)
	{
		struct margins_log *grown;
		char *buf;

		if (!bpf_program__autoload(prog))
			continue;
		buf = calloc(1, LOG_BYTES);
		grown = buf ? realloc(logs, (nr_logs + 1) * sizeof(*logs)) : NULL;
		if (!grown) {
			free(buf);
			return -ENOMEM;
		}
		logs = grown;
		logs[nr_logs++] = (struct margins_log){.prog = prog, .buf = buf};
		bpf_program__set_log_buf(prog, buf, LOG_BYTES);
		bpf_program__set_log_level(prog, LOG_STATS);
	}
	return 0;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* The subprogram that insn i belongs to: the last start at or below it. */
static int owner(const uint32_t *starts, int n, uint32_t i)
{
	int lo = 0, hi = n;

	while (hi - lo > 1) {
		int mid = (lo + hi) / 2;

		if (starts[mid] <= i)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

struct graph {
	uint32_t starts[MAX_SUBPROGS];
	int n;
	/* calls[a][b]: a calls b (or hands b to bpf_loop as its callback). */
	uint8_t calls[MAX_SUBPROGS][MAX_SUBPROGS];
	int depth[MAX_SUBPROGS]; /* the verifier's, -1 unknown */
	int memo[2][MAX_SUBPROGS];
	int next[2][MAX_SUBPROGS];   /* the callee on the deepest chain, -1 none */
	char name[MAX_SUBPROGS][40]; /* from the loaded program's BTF; empty when refused */
};

/* Each subprogram's name, from the kernel's func_info of the loaded program (in subprogram
 * order, as the verifier numbers them). */
static void read_names(int fd, struct graph *g)
{
	struct bpf_func_info fi[MAX_SUBPROGS];
	struct bpf_prog_info info = {};
	__u32 len = sizeof(info);
	struct btf *btf;

	info.nr_func_info = MAX_SUBPROGS;
	info.func_info_rec_size = sizeof(fi[0]);
	info.func_info = (__u64)(uintptr_t)fi;
	if (bpf_obj_get_info_by_fd(fd, &info, &len) || !info.btf_id ||
	    info.nr_func_info != (__u32)g->n)
		return;
	btf = btf__load_from_kernel_by_id(info.btf_id);
	if (!btf)
		return;
	for (int i = 0; i < g->n; i++) {
		const struct btf_type *t = btf__type_by_id(btf, fi[i].type_id);
		const char *nm = t ? btf__name_by_offset(btf, t->name_off) : NULL;

		if (nm)
			snprintf(g->name[i], sizeof(g->name[i]), "%s", nm);
	}
	btf__free(btf);
}

static int call_target(const struct bpf_insn *in, uint32_t i, uint32_t n, uint32_t *ret)
{
	int64_t t;

	if (in->code == (BPF_JMP | BPF_CALL) && in->src_reg == BPF_PSEUDO_CALL)
		t = (int64_t)i + in->imm + 1;
	else if (in->code == (BPF_LD | BPF_IMM | BPF_DW) && in->src_reg == BPF_PSEUDO_FUNC)
		t = (int64_t)i + in->imm + 1;
	else
		return 0;
	if (t < 0 || t >= n)
		return 0;
	*ret = (uint32_t)t;
	return 1;
}

static int build_graph(const struct bpf_program *prog, struct graph *g)
{
	const struct bpf_insn *insns = bpf_program__insns(prog);
	uint32_t n = bpf_program__insn_cnt(prog), t;
	int m = 1;

	memset(g, 0, sizeof(*g));
	if (!insns || !n)
		return -ENOENT;
	g->starts[0] = 0;
	for (uint32_t i = 0; i < n; i++) {
		if (call_target(&insns[i], i, n, &t)) {
			if (m == MAX_SUBPROGS)
				return -E2BIG;
			g->starts[m++] = t;
		}
		if (insns[i].code == (BPF_LD | BPF_IMM | BPF_DW))
			i++;
	}
	qsort(g->starts, m, sizeof(g->starts[0]), cmp_u32);
	g->n = 0;
	for (int i = 0; i < m; i++)
		if (!g->n || g->starts[g->n - 1] != g->starts[i])
			g->starts[g->n++] = g->starts[i];
	for (uint32_t i = 0; i < n; i++) {
		if (call_target(&insns[i], i, n, &t))
			g->calls[owner(g->starts, g->n, i)][owner(g->starts, g->n, t)] = 1;
		if (insns[i].code == (BPF_LD | BPF_IMM | BPF_DW))
			i++;
	}
	return 0;
}

/* "stack depth 48+96+..." from the verifier's statistics: one figure per subprogram. */
static void parse_depths(const char *log, struct graph *g)
{
	const char *p = strstr(log, "stack depth ");
	int k = 0;

	for (int i = 0; i < MAX_SUBPROGS; i++)
		g->depth[i] = -1;
	if (!p)
		return;
	p += strlen("stack depth ");
	while (k < MAX_SUBPROGS) {
		char *end;
		long d = strtol(p, &end, 10);

		if (end == p)
			break;
		g->depth[k++] = (int)d;
		if (*end != '+')
			break;
		p = end + 1;
	}
	if (k != g->n) /* not the subprograms we found: unknown rather than wrong */
		for (int i = 0; i < MAX_SUBPROGS; i++)
			g->depth[i] = -1;
}

static int round_frame(int d, int r)
{
	if (r == 32 && d < 1) /* the interpreter's granularity: an empty frame still takes 32 */
		d = 1;
	return (d + r - 1) / r * r;
}

/* The deepest chain's stack from s, frames rounded to 32 (k 0) or 16 (k 1). */
static int chain(struct graph *g, int s, int k, int level)
{
	int best = 0, r = k ? 16 : 32;

	if (g->memo[k][s])
		return g->memo[k][s] - 1;
	g->next[k][s] = -1;
	if (level > MAX_SUBPROGS) /* a cycle: the verifier refuses recursion anyway */
		return 0;
	for (int c = 0; c < g->n; c++) {
		int v;

		if (!g->calls[s][c] || c == s)
			continue;
		v = chain(g, c, k, level + 1);
		if (v > best) {
			best = v;
			g->next[k][s] = c;
		}
	}
	best += round_frame(g->depth[s] < 0 ? 0 : g->depth[s], r);
	g->memo[k][s] = best + 1;
	return best;
}

static long stat_after(const char *log, const char *key)
{
	const char *p = strstr(log, key);

	return p ? strtol(p + strlen(key), NULL, 10) : -1;
}

/* The verifier's last words before its statistics: why a program was refused. */
static void print_refusal(const char *log, FILE *out)
{
	const char *stop = strstr(log, "verification time");
	const char *lines[3] = {NULL, NULL, NULL};
	const char *p = log;

	if (!stop)
		stop = strstr(log, "processed ");
	if (!stop)
		stop = log + strlen(log);
	while (p < stop) {
		const char *nl = memchr(p, '\n', stop - p);

		if (!nl)
			nl = stop;
		if (nl > p) {
			lines[0] = lines[1];
			lines[1] = lines[2];
			lines[2] = p;
		}
		p = nl + 1;
	}
	for (int i = 0; i < 3; i++) {
		const char *nl;

		if (!lines[i])
			continue;
		nl = strchr(lines[i], '\n');
		fprintf(out, "  refusal: %.*s\n",
			(int)(nl ? nl - lines[i] : (long)strlen(lines[i])), lines[i]);
	}
}

static void report_one(const struct margins_log *l, FILE *out)
{
	struct graph *g = calloc(1, sizeof(*g));
	const char *log = l->buf;
	int loaded = bpf_program__fd(l->prog) >= 0, s32 = -1, s16 = -1;

	if (g && !build_graph(l->prog, g)) {
		parse_depths(log, g);
		if (loaded)
			read_names(bpf_program__fd(l->prog), g);
		if (g->depth[0] >= 0) {
			s32 = chain(g, 0, 0, 0);
			s16 = chain(g, 0, 1, 0);
		}
	}
	fprintf(out,
		"prog %s %s insns %ld states %ld peak %ld time_us %ld stack32 %d stack16 %d chain ",
		bpf_program__name(l->prog), loaded ? "loaded" : "refused",
		stat_after(log, "processed "), stat_after(log, "total_states "),
		stat_after(log, "peak_states "), stat_after(log, "verification time "), s32, s16);
	if (s32 >= 0)
		for (int s = 0; s >= 0; s = g->next[0][s])
			fprintf(out, "%s%s%s%d", s ? " + " : "", g->name[s],
				g->name[s][0] ? ":" : "", g->depth[s]);
	else
		fputc('?', out);
	fputc('\n', out);
	if (!loaded)
		print_refusal(log, out);
	free(g);
}

int bpf_margins__report(struct bpf_object *obj, FILE *out)
{
	(void)obj;
	for (size_t i = 0; i < nr_logs; i++) {
		if (out)
			report_one(&logs[i], out);
		bpf_program__set_log_buf((struct bpf_program *)logs[i].prog, NULL, 0);
		free(logs[i].buf);
	}
	free(logs);
	logs = NULL;
	nr_logs = 0;
	return out && ferror(out) ? -EIO : 0;
}

int bpf_margins__env_prepare(struct bpf_object *obj)
{
	const char *path = getenv("XSPROF_BPF_MARGINS");

	return path && *path ? bpf_margins__prepare(obj) : 0;
}

void bpf_margins__env_report(struct bpf_object *obj)
{
	const char *path = getenv("XSPROF_BPF_MARGINS");
	FILE *f;

	if (!path || !*path)
		return;
	f = fopen(path, "ae");
	bpf_margins__report(obj, f);
	if (f)
		fclose(f);
}
