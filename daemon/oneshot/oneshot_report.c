// SPDX-License-Identifier: Apache-2.0
/* The one-shot run's end-of-run report: what it captured, lost and cost (internals at -v). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/libbpf.h>
#include <json-c/json.h>

#include "bpf/xsprof_events.h"
#include "daemon/base/command.h"
#include "daemon/base/job_filter.h"
#include "daemon/cuda/cuda_probes.h"
#include "daemon/cuda/launch_store.h"
#include "daemon/log.h"
#include "daemon/oneshot/oneshot_report.h"
#include "daemon/options.h"
#include "daemon/probes/bpf_cost.h"
#include "daemon/probes/offcpu.h"
#include "daemon/probes/sampler.h"
#include "daemon/session/ceiling.h"
#include "daemon/session/counters.h"
#include "daemon/session/counters_report.h"
#include "daemon/session/gpu_waits.h"
#include "daemon/session/group_by.h"
#include "daemon/session/job_keep.h"
#include "daemon/session/join_check.h"
#include "daemon/session/python_report.h"
#include "daemon/session/ranges.h"
#include "daemon/session/recording.h"
#include "daemon/stacks/fold.h"
#include "daemon/stacks/stack_table.h"
#include "daemon/symbolize/symbolizer.h"
#include "daemon/unwind/unwinder.h"
#include "output/model/frame_sites.h"
#include "output/model/profile.h"
#include "xsprof.skel.h"

/* Our peak resident memory so far (VmHWM), in KiB; 0 when unknown. */
static unsigned long peak_rss_kib(void)
{
	char buf[4096], *at;
	unsigned long kib = 0;
	FILE *f = fopen("/proc/self/status", "re");
	size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;

	if (f)
		fclose(f);
	buf[n] = '\0';
	at = strstr(buf, "VmHWM:");
	if (at)
		kib = strtoul(at + 6, NULL, 10);
	return kib;
}

static void truncated_report(const struct fold_stats *fs)
{
	char buf[512];
	uint64_t all = 0;
	size_t n = 0;

	for (unsigned int i = 0; i < XSPROF_END_REASONS; i++)
		all += fs->truncated[i];
	if (!all || !fs->weight)
		return;
	buf[0] = '\0';
	for (unsigned int i = 0; i < XSPROF_END_REASONS && n < sizeof(buf); i++) {
		const char *mark = fold__end_mark(i);

		if (!fs->truncated[i] || !mark)
			continue;
		/* "[truncated: no unwind rule]" -> "no unwind rule" */
		n += (size_t)snprintf(buf + n, sizeof(buf) - n, "%s%.2f%% %.*s", n ? ", " : "",
				      100.0 * fs->truncated[i] / fs->weight, (int)strlen(mark) - 13,
				      mark + 12);
	}
	log_info("stacks that stop before their root (marked [truncated: reason]): %.2f%% of the "
		 "profile (%s)",
		 100.0 * all / fs->weight, buf);
	if (fs->truncated[XSPROF_END_FP_BROKEN] * 2 > fs->weight)
		log_info("most walks end where the frame pointers do (code built without them, "
			 "glibc's included); --unwind auto walks on with the unwind tables");
}

/* How user stacks were walked (--unwind): with tables or frame pointers, and why walks ended. */
static void unwind_report(const struct recording *recording)
{
	struct xsprof_unwind_stats b;
	struct unwinder_stats t;

	if (recording__unwind_stats(recording, &b, &t))
		return;
	if (t.tables_no_room || t.procs_full || t.maps_capped || t.maps_full || t.files_full ||
	    t.procs_over_share)
		log_warn(
			"unwind tables: %llu did not fit in the table memory (raise --unwind-mb), "
			"%llu processes and %llu mappings past the caps, %llu processes past their "
			"user's share (%llu of %llu), %llu mappings without a file slot: frame "
			"pointers there",
			(unsigned long long)t.tables_no_room,
			(unsigned long long)(t.procs_full + t.maps_full),
			(unsigned long long)t.maps_capped, (unsigned long long)t.procs_over_share,
			(unsigned long long)t.share_procs, (unsigned long long)t.max_procs,
			(unsigned long long)t.files_full);
	if (t.jvm_nofp)
		log_warn(
			"%llu JVM processes run without -XX:+PreserveFramePointer: their stacks end "
			"at the first Java frame ([truncated: JIT code without frame pointers]); "
			"start java with -XX:+PreserveFramePointer for whole stacks",
			(unsigned long long)t.jvm_nofp);
	if (b.hold_drops || b.want_drops)
		log_warn(
			"unwind: %llu held samples and %llu table requests lost (ring buffer full; "
			"raise --ring-buffer-size)",
			(unsigned long long)b.hold_drops, (unsigned long long)b.want_drops);
}

void oneshot_report__recording(struct recording *recording, const struct xsprofd_opts *o,
			       double name_cpu_s, const struct fold_stats *fs,
			       struct symbolizer *sym)
{
	struct recording_stats rs;
	struct stack_table_stats ts;
	struct symbolizer_stats ys;
	const struct xsprof_cpu_stats *total = &rs.bpf;
	struct xsprof_cpu_stats *per_cpu;
	int ncpu = recording__nr_cpus(recording);
	uint64_t lost;

	recording__stats(recording, &rs);
	stack_table__stats(recording__stacks(recording), &ts);
	symbolizer__stats(sym, &ys);
	lost = total->drop_ringbuf + rs.bad_records;

	log_info("%.1f s on %d CPUs at %u Hz: %llu samples, %llu idle%s, %llu of other processes, "
		 "%llu kept",
		 rs.wall_s,
		 recording__nr_attached(recording) ? recording__nr_attached(recording) : ncpu,
		 o->freq_hz, (unsigned long long)total->samples, (unsigned long long)total->idle,
		 o->include_idle ? " (kept)" : " (left out; --include-idle keeps them)",
		 (unsigned long long)total->filtered, (unsigned long long)ts.samples);
	log_msg(lost || total->kstack_err || total->ustack_err ? LOG_INFO : LOG_DEBUG,
		"lost: %llu (ring buffer full %llu, malformed %llu); stacks unreadable: kernel "
		"%llu, user %llu",
		(unsigned long long)lost, (unsigned long long)total->drop_ringbuf,
		(unsigned long long)rs.bad_records, (unsigned long long)total->kstack_err,
		(unsigned long long)total->ustack_err);
	if (rs.stalls)
		log_warn("xsprofd did not run for %.1f s in %llu stretches (stopped, or starved of "
			 "CPU): what did not fit in the ring buffer meanwhile was lost",
			 rs.stalled_ns / 1e9, (unsigned long long)rs.stalls);
	per_cpu = calloc(ncpu, sizeof(*per_cpu));
	if ((lost || o->verbose) && per_cpu && !recording__cpu_stats(recording, per_cpu)) {
		for (int i = 0; i < ncpu; i++) {
			if (!per_cpu[i].samples)
				continue;
			log_info("  cpu %d: %llu samples, %llu sent, %llu lost (ring buffer full), "
				 "%llu/%llu stacks unreadable (kernel/user)",
				 i, (unsigned long long)per_cpu[i].samples,
				 (unsigned long long)per_cpu[i].emitted,
				 (unsigned long long)per_cpu[i].drop_ringbuf,
				 (unsigned long long)per_cpu[i].kstack_err,
				 (unsigned long long)per_cpu[i].ustack_err);
		}
	}
	free(per_cpu);
	if (total->drop_ringbuf)
		log_warn("samples were lost because the ring buffer (%u KiB) filled; raise "
			 "--ring-buffer-size",
			 recording__ring_bytes(recording) >> 10);
	log_info("%llu distinct stacks from %zu processes; %llu of %llu frames unnamed",
		 (unsigned long long)ts.distinct, rs.processes,
		 (unsigned long long)fs->unnamed_frames, (unsigned long long)fs->frames);
	truncated_report(fs);
	if (symbolizer__sites(sym)) {
		struct frame_sites_stats fss;

		frame_sites__stats(symbolizer__sites(sym), &fss);
		log_debug("pprof frame sites: %llu names, %llu KiB; emptied %llu times at the cap, "
			  "%llu refused (those frames are written by name, without an address)",
			  (unsigned long long)fss.names, (unsigned long long)fss.bytes >> 10,
			  (unsigned long long)fss.resets, (unsigned long long)fss.refused);
	}
	if (ts.overflowed)
		log_warn("%llu samples past --max-stacks %u were counted without their stacks",
			 (unsigned long long)ts.overflowed, o->max_stacks);
	if (rs.store_failures)
		log_warn("%llu samples could not be stored (out of memory)",
			 (unsigned long long)rs.store_failures);
	if (rs.proc.gone)
		log_warn("%llu of %llu new processes had exited before their mappings could be "
			 "read: their frames are [unknown]",
			 (unsigned long long)rs.proc.gone, (unsigned long long)rs.proc.execs);
	if (rs.proc.over_budget || rs.proc.bpf_drop_ringbuf)
		log_info(
			"process events: %llu exec records not sent past a user's budget (%u a "
			"second; read at their first sample instead), %llu lost (ring buffer full)",
			(unsigned long long)rs.proc.over_budget, XSPROF_PROC_RECORDS_PER_USER_S,
			(unsigned long long)rs.proc.bpf_drop_ringbuf);
	if (ys.idle_dropped || ys.pinned_dropped)
		log_info(
			"symbolizer: %llu snapshots of processes not sampled yet dropped at the cache "
			"cap, %llu images whose samples were still to be named dropped past twice "
			"the cap (their frames are [unknown])",
			(unsigned long long)ys.idle_dropped, (unsigned long long)ys.pinned_dropped);
	unwind_report(recording);
	python_report__log(recording);
	log_debug("xsprofd's own CPU: %.3f s while sampling (%.2f%% of one CPU; %.2f us per sample "
		  "received), %.3f s naming stacks; own peak RSS %.1f MiB",
		  rs.cpu_s, rs.wall_s > 0 ? 100.0 * rs.cpu_s / rs.wall_s : 0.0,
		  rs.records ? rs.cpu_s * 1e6 / rs.records : 0.0, name_cpu_s,
		  peak_rss_kib() / 1024.0);
	if (total->timed) {
		double per = (double)total->timed_ns / (double)total->timed;

		log_debug("BPF cost: %.2f us per sample (1 in %d timed), %.3f%% of one CPU in the "
			  "kernel at this rate",
			  per / 1e3, XSPROF_TIMED_EVERY,
			  rs.wall_s > 0 ? 100.0 * per * (double)total->samples / (rs.wall_s * 1e9)
					: 0.0);
	}
}

/* always: report even when no CUDA was met (command mode: the user asked about a command). */
void oneshot_report__cuda(struct recording *recording, bool always)
{
	struct cuda_probes *cp = recording__cuda(recording);
	struct launch_store_stats ls;
	struct cuda_probes_stats cs;
	const char *last;

	if (!cp || cuda_probes__stats(cp, &cs))
		return;
	launch_store__stats(cuda_probes__store(cp), &ls);
	last = cuda_probes__last_error(cp);
	/* Silent on a run that met no CUDA at all (unless -v). */
	log_msg(always || ls.calls || ls.usdt || cs.targets ? LOG_INFO : LOG_DEBUG,
		"CUDA: %llu calls recorded (%llu inside another probed call, counted once), "
		"%llu xsprof:launch firings; probes on %llu files (%llu uprobes)",
		(unsigned long long)ls.calls, (unsigned long long)cs.bpf.nested,
		(unsigned long long)ls.usdt, (unsigned long long)cs.targets,
		(unsigned long long)cs.links);
	if (cs.scopes.begins || cs.scopes.ends)
		log_msg(cs.scopes.unpaired_ends || cs.scopes.too_deep || cs.scopes.threads_capped ||
					cs.scopes.names_capped || cs.scopes.names_unread ||
					cs.bpf.scope_drop
				? LOG_WARNING
				: LOG_INFO,
			"xsprof scopes: %llu ranges (%llu ended at their process's exit, %llu at the "
			"recording's end); %llu ends without their begin, %llu begins past the caps "
			"(64 deep, 4096 threads), %llu names past 4096, %llu names unreadable, %llu "
			"probe firings lost",
			(unsigned long long)cs.scopes.ranges,
			(unsigned long long)cs.scopes.ended_at_exit,
			(unsigned long long)cs.scopes.ended_at_end,
			(unsigned long long)cs.scopes.unpaired_ends,
			(unsigned long long)(cs.scopes.too_deep + cs.scopes.threads_capped),
			(unsigned long long)cs.scopes.names_capped,
			(unsigned long long)cs.scopes.names_unread,
			(unsigned long long)cs.bpf.scope_drop);
	if (cs.usdt_inner_deep)
		log_warn("CUDA: %llu xsprof:launch stacks had %d or more frames of the CUDA "
			 "libraries above the application's call (at most %llu): a reused stack is "
			 "checked that deep only, so launches of one place may count under another "
			 "called at the same depth",
			 (unsigned long long)cs.usdt_inner_deep, XSPROF_LAUNCH_SLOTS_USDT,
			 (unsigned long long)cs.usdt_inner_max);
	if (cs.reuse.timed)
		log_debug("CUDA: BPF cost %.2f us per launch probe run (1 in %d timed)",
			  (double)cs.reuse.timed_ns / (double)cs.reuse.timed / 1e3,
			  XSPROF_TIMED_EVERY);
	if (ls.reuse_orphans || cs.reuse.reuse_drops)
		log_warn("CUDA: %llu reused launch stacks lost (ring buffer full), %llu found no "
			 "walked stack of their thread",
			 (unsigned long long)cs.reuse.reuse_drops,
			 (unsigned long long)ls.reuse_orphans);
	if (cs.bpf.drop_ringbuf || cs.bpf.usdt_drop || cs.bpf.lib_map_drop || cs.bpf.exec_drop)
		log_warn("CUDA: %llu calls, %llu xsprof:launch firings, %llu library loads and "
			 "%llu execs lost (ring buffer full): raise --ring-buffer-size",
			 (unsigned long long)cs.bpf.drop_ringbuf,
			 (unsigned long long)cs.bpf.usdt_drop,
			 (unsigned long long)cs.bpf.lib_map_drop,
			 (unsigned long long)cs.bpf.exec_drop);
	if (cs.bpf.scratch_busy)
		log_warn("CUDA: %llu calls lost: both of a CPU's scratch slots were held by launch "
			 "probes preempted on it",
			 (unsigned long long)cs.bpf.scratch_busy);
	if (cs.bpf.fork_drop)
		log_warn("CUDA: %llu children not followed: the pid filter is full",
			 (unsigned long long)cs.bpf.fork_drop);
	if (cs.attach_failed || cs.links_capped)
		log_warn("CUDA: %llu libraries could not be probed%s%s",
			 (unsigned long long)(cs.attach_failed + cs.links_capped),
			 last ? "; last: " : "", last ? last : "");
	if (cs.bad_records || cs.store_failures)
		log_warn("CUDA: %llu malformed records, %llu not stored (out of memory)",
			 (unsigned long long)cs.bad_records, (unsigned long long)cs.store_failures);
	if (ls.overflowed)
		log_warn("CUDA: %llu calls past the launch stack table's cap were counted without "
			 "their stacks",
			 (unsigned long long)ls.overflowed);
}

void oneshot_report__offcpu(struct recording *recording)
{
	struct offcpu_stats st;

	if (recording__offcpu_stats(recording, &st))
		return;
	log_info("off-CPU: %.3f s in %llu stretches off the CPU (%llu switches of watched "
		 "threads, %llu shorter than --min-block-us left out), %llu distinct stacks",
		 st.ns / 1e9, (unsigned long long)(st.blocks - st.below_min),
		 (unsigned long long)st.switches, (unsigned long long)st.below_min,
		 (unsigned long long)st.keys);
	if (st.agg_full || st.drop_ringbuf || st.keys_lost || st.pending_full || st.start_full)
		log_warn("off-CPU: lost %llu stretches (stack table full: raise --max-stacks), "
			 "%llu new stacks (ring buffer full: raise --ring-buffer-size), %llu "
			 "switch-outs not timed; %llu stacks counted without frames",
			 (unsigned long long)st.agg_full, (unsigned long long)st.drop_ringbuf,
			 (unsigned long long)st.start_full,
			 (unsigned long long)(st.keys_lost + st.pending_full));
}

/* --max-cpu: what sampling cost, and what was shed for how long (daemon/session/ceiling.h). */
void oneshot_report__ceiling(const struct ceiling_stats *st, unsigned int freq_hz,
			     struct recording *recording)
{
	struct cuda_probes *cp = recording__cuda(recording);
	struct cuda_probes_stats cs;
	char shed[512], now[256] = "";
	size_t n = 0, m = 0;

	log_info("--max-cpu %g%%: xsprofd cost %.2f%% of the machine's %d CPUs while sampling (own "
		 "CPU %.3f s, BPF programs %s%.3f s, over %.1f s); %llu steps shed, %llu restored",
		 st->max_pct, st->avg_pct, st->cpus, st->own_cpu_s,
		 st->bpf_measured ? "" : "not measured ", st->bpf_s, st->span_s,
		 (unsigned long long)st->steps_up, (unsigned long long)st->steps_down);
	if (st->all_shed && st->cost_pct > st->max_pct)
		log_warn(
			"--max-cpu %g%%: not held with every step shed: what is left (xsprofd's "
			"loop, process exits, the CUDA probes counting calls) cost %.2f%% at the end",
			st->max_pct, st->cost_pct);
	shed[0] = '\0';
	for (int k = 0; k < CEILING_KINDS && n < sizeof(shed); k++)
		if (st->shed_s[k] > 0)
			n += (size_t)snprintf(shed + n, sizeof(shed) - n, "%s%s for %.1f s",
					      n ? ", " : "", ceiling__kind_name(k), st->shed_s[k]);
	for (int k = CEILING_RATE + 1; k < CEILING_KINDS && m < sizeof(now); k++)
		if (st->shed[k])
			m += (size_t)snprintf(now + m, sizeof(now) - m, ", %s shed",
					      ceiling__kind_name(k));
	log_info("--max-cpu: shed %s; at the end: %u Hz (1/%u of %u Hz: a sample counts for %u)%s",
		 n ? shed : "nothing", freq_hz / st->rate_div, st->rate_div, freq_hz, st->rate_div,
		 now);
	if (cp && !cuda_probes__stats(cp, &cs)) {
		struct launch_store_stats ls;
		uint64_t lost = cs.bpf.drop_ringbuf + cs.bpf.scratch_busy + cs.reuse.reuse_drops;

		launch_store__stats(cuda_probes__store(cp), &ls);
		lost += ls.reuse_orphans;
		log_info(
			"--max-cpu: CUDA: %llu calls in all: %llu recorded (%llu of them counting "
			"for %u, walked while launch stacks were shed), %llu counted without their "
			"stack, %llu counted only (their stacks and GPU work are not in the "
			"profile), %llu lost",
			(unsigned long long)(ls.calls + ls.usdt + cs.bpf.stacks_shed +
					     cs.bpf.calls_shed + lost),
			(unsigned long long)(ls.calls + ls.usdt), (unsigned long long)ls.weighted,
			CEILING_LAUNCH_STACK_EVERY, (unsigned long long)cs.bpf.stacks_shed,
			(unsigned long long)cs.bpf.calls_shed, (unsigned long long)lost);
	}
}

static int log_cost(void *ctx, const struct bpf_cost *c)
{
	log_debug("BPF cost: %s: %llu runs, %.0f ns each", c->name, (unsigned long long)c->runs,
		  (double)c->run_ns / (double)c->runs);
	return 0;
}

/* With -v, while kernel.bpf_stats_enabled is 1: what each program cost per run. */
void oneshot_report__bpf_cost(struct recording *recording)
{
	struct cuda_probes *cp = recording__cuda(recording);

	bpf_cost__for_each(sampler__skel(recording__sampler(recording))->obj, log_cost, NULL);
	if (cp)
		for (int i = 0; cuda_probes__obj(cp, i); i++)
			bpf_cost__for_each(cuda_probes__obj(cp, i), log_cost, NULL);
}

static void nvtx_report(const struct profile_data *pd)
{
	size_t ranges = 0, open = 0, marks = 0, domains = 0;
	const char *seen[8];

	for (size_t i = 0; i < pd->nr_gpu; i++) {
		const struct corr_gpu_rec *g = &pd->gpu[i];
		size_t k;

		if (g->kind != CORR_GPU_NVTX)
			continue;
		g->end_ns > g->start_ns ? ranges++ : marks++;
		open += !!(g->flags & CORR_GPU_F_OPEN);
		for (k = 0; k < domains && g->domain && strcmp(seen[k], g->domain); k++)
			;
		if (g->domain && k == domains && domains < 8)
			seen[domains++] = g->domain;
	}
	if (ranges || marks)
		log_info(
			"NVTX: %zu ranges (%zu still open at the recording's end, ended there) and "
			"%zu marks%s%s%s%s",
			ranges, open, marks, domains ? " (domains: " : "", domains ? seen[0] : "",
			domains > 1 ? ", ..." : "", domains ? ")" : "");
}

/* What joining the launches to the GPU records received came to. */
void oneshot_report__gpu(const struct xsprofd_opts *o, const struct profile_data *pd,
			 const struct correlate_stats *cs)
{
	log_msg(pd->nr_gpu || pd->nr_launches ? LOG_INFO : LOG_DEBUG,
		"GPU: %zu records received, %zu launches; correlation (%s): %llu matched, "
		"unmatched %llu launches and %llu GPU records, late %llu and %llu",
		pd->nr_gpu, pd->nr_launches, o->correlate, (unsigned long long)cs->matched,
		(unsigned long long)cs->unmatched_cpu, (unsigned long long)cs->unmatched_gpu,
		(unsigned long long)cs->late_cpu, (unsigned long long)cs->late_gpu);
	nvtx_report(pd);
}

/* Where a strategy did not join id's work to id's call, by the launching API. */
static void join_check_misses(const char *name, const struct join_check_counts *c)
{
	char line[512];
	size_t len = 0;

	for (size_t k = 0; k <= JOIN_CHECK_APIS && len < sizeof(line); k++)
		if (c->miss[k].n)
			len += (size_t)snprintf(line + len, sizeof(line) - len, "%s%s %llu",
						len ? ", " : "",
						c->miss[k].api ? c->miss[k].api : "other",
						(unsigned long long)c->miss[k].n);
	if (len)
		log_info("correlation check: %s missed id's call for work launched by %s", name,
			 line);
}

/* --correlate-check: the strategies side by side on this run's data. */
void oneshot_report__join_check(const struct profile_data *pd)
{
	struct join_check jc;
	int err = join_check__run(pd, &jc);

	if (err) {
		log_err("--correlate-check failed: %s", strerror(-err));
		return;
	}
	log_info("correlation check: %llu pieces of GPU work; id joined %llu; timestamp joined "
		 "%llu (%llu to id's call, %llu elsewhere); stream joined %llu (%llu to id's call, "
		 "%llu elsewhere); %llu of %llu launch uprobes paired with the xsprof:launch of "
		 "their call (%llu xsprof:launch records)",
		 (unsigned long long)jc.work, (unsigned long long)jc.id.joined,
		 (unsigned long long)jc.timestamp.joined, (unsigned long long)jc.timestamp.agree,
		 (unsigned long long)jc.timestamp.differ, (unsigned long long)jc.stream.joined,
		 (unsigned long long)jc.stream.agree, (unsigned long long)jc.stream.differ,
		 (unsigned long long)jc.paired, (unsigned long long)jc.uprobes,
		 (unsigned long long)jc.usdt);
	join_check_misses("timestamp", &jc.timestamp);
	join_check_misses("stream", &jc.stream);
	if (jc.work && !jc.usdt)
		log_warn("correlation check: no xsprof:launch record, so no id join to compare "
			 "with (the command did not load the injection library, or its probe was "
			 "not attached)");
}

/* --group-by range: how many NVTX ranges the samples were matched to. */
void oneshot_report__ranges(const struct xsprofd_opts *o, const struct ranges *ranges)
{
	size_t n = ranges__count(ranges);

	if (!n)
		log_warn("--group-by %s: no NVTX range arrived, so every sample is under %s (the "
			 "program calls no NVTX, or it does not load the injection: command mode "
			 "sets NVTX_INJECTION64_PATH; started elsewhere, give it "
			 "NVTX_INJECTION64_PATH=%s)",
			 session_group__name(o->group_by), RANGES_NONE, command__cupti_lib());
	else
		log_info("--group-by range: %zu NVTX ranges", n);
}

/* The wall and merged views: what the time in CUDA calls waiting for the GPU came to. */
void oneshot_report__waits(struct recording *recording, const struct gpu_waits_stats *ws)
{
	struct cuda_probes *cp = recording__cuda(recording);
	struct cuda_probes_stats cs = {};

	if (cp)
		cuda_probes__stats(cp, &cs);
	gpu_waits__report(ws, cp ? cuda_probes__store(cp) : NULL, &cs.waits);
}

/* What --job and --rank kept. */
void oneshot_report__keep(const struct xsprofd_opts *o, const struct job_keep *keep)
{
	struct job_keep_stats ks;
	char what[192];

	job_keep__stats(keep, &ks);
	job_filter__describe(&o->job_filter, what, sizeof(what));
	log_info("%s: kept %llu processes, left out %llu (another job or rank, or none said in "
		 "their environment)%s",
		 what, (unsigned long long)ks.kept, (unsigned long long)ks.left_out,
		 ks.uncounted ? "; more past the count's cap" : "");
	if (!ks.kept)
		log_warn("%s: no process was kept: the profile is empty (--group-by rank or job "
			 "shows what the processes say)",
			 what);
}

/* The run's counters, gathered for the table (daemon/session/counters.h). */
static void counters_snapshot(struct recording *recording, struct symbolizer *sym,
			      struct counters_snapshot *ret)
{
	struct cuda_probes *cp = recording__cuda(recording);

	memset(ret, 0, sizeof(*ret));
	recording__stats(recording, &ret->rec);
	ret->cpu = ret->rec.bpf;
	ret->bad_records = ret->rec.bad_records;
	ret->has[COUNTERS_SAMPLER] = ret->has[COUNTERS_PROCESSES] = true;
	stack_table__stats(recording__stacks(recording), &ret->stacks);
	ret->has[COUNTERS_STACKS] = true;
	symbolizer__stats(sym, &ret->sym);
	ret->sym_cache_bytes = symbolizer__cache_bytes(sym);
	ret->has[COUNTERS_SYMBOLIZER] = true;
	if (!recording__unwind_stats(recording, &ret->unwind_bpf, &ret->unwind)) {
		ret->unwind_mb = recording__unwind_mb(recording);
		ret->has[COUNTERS_UNWIND] = true;
	}
	ret->has[COUNTERS_PYTHON] = !recording__python_stats(recording, &ret->py_bpf, &ret->py);
	recording__autograd_stats(recording, &ret->ag_bpf, &ret->ag); /* zeros without */
	if (cp && !cuda_probes__stats(cp, &ret->cuda)) {
		ret->launches_in_slice = launch_store__nr_events(cuda_probes__store(cp));
		ret->has[COUNTERS_CUDA] = true;
	}
	ret->has[COUNTERS_OFFCPU] = !recording__offcpu_stats(recording, &ret->offcpu);
}

int oneshot_report__counters(struct recording *recording, const struct xsprofd_opts *o,
			     struct symbolizer *sym)
{
	struct counters_snapshot c;

	counters_snapshot(recording, sym, &c);
	return counters_report__end(&c, o->stats_path, o->verbose);
}
