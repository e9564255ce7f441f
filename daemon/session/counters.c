// SPDX-License-Identifier: Apache-2.0
/*
 * The rows of a recording's counters (counters.h) and their renderings. A row's metric follows
 * the rules of GET /metrics: counters end in _total, sizes are bytes and times seconds, a
 * family's members differ by labels and share the help of the first.
 */
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "daemon/session/counters.h"

/* The offset of a uint64_t (or another 8-byte count) of the snapshot; anything else fails to
 * compile. */
#define AT(f)                                    \
	(offsetof(struct counters_snapshot, f) + \
	 0 * sizeof(char[sizeof(((struct counters_snapshot *)0)->f) == 8 ? 1 : -1]))
#define ROW(p, src, m, l, t, h, ln, w)                                                      \
	{                                                                                   \
		.path = p, src, .metric = m, .labels = l, .type = t, .help = h, .line = ln, \
		.words = w                                                                  \
	}
/* A counter or a gauge read from a field. */
#define CNT(p, f, m, l, h, ln, w) ROW(p, .off = AT(f), m, l, COUNTERS_COUNTER, h, ln, w)
#define GAU(p, f, m, l, h, ln, w) ROW(p, .off = AT(f), m, l, COUNTERS_GAUGE, h, ln, w)
/* ... read through a getter (sums, and fields that are not 8 bytes). */
#define CNT_GET(p, g, m, l, h, ln, w) ROW(p, .get = g, m, l, COUNTERS_COUNTER, h, ln, w)
#define GAU_GET(p, g, m, l, h, ln, w) ROW(p, .get = g, m, l, COUNTERS_GAUGE, h, ln, w)

const char *const counters_part_keys[COUNTERS_PARTS] = {
	[COUNTERS_SAMPLER] = "counters",    [COUNTERS_STACKS] = "stacks",
	[COUNTERS_PROCESSES] = "processes", [COUNTERS_SYMBOLIZER] = "symbolizer",
	[COUNTERS_UNWIND] = "unwind",	    [COUNTERS_PYTHON] = "python",
	[COUNTERS_CUDA] = "cuda_probes",    [COUNTERS_OFFCPU] = "offcpu",
};

static uint64_t get_processes_seen(const struct counters_snapshot *s)
{
	return s->rec.processes;
}

static uint64_t get_py_truncated(const struct counters_snapshot *s)
{
	/* Cut in BPF at its frame cap, or in xsprofd at the stack's. */
	return s->py_bpf.truncated + s->py.truncated;
}

static uint64_t get_ag_lost(const struct counters_snapshot *s)
{
	return s->ag_bpf.drop_ringbuf + s->ag_bpf.scratch_busy + s->ag.threads_capped;
}

static uint64_t get_cuda_lost_ringbuf(const struct counters_snapshot *s)
{
	return s->cuda.bpf.drop_ringbuf + s->cuda.bpf.usdt_drop;
}

static uint64_t get_cuda_reuse_misses(const struct counters_snapshot *s)
{
	return s->cuda.reuse.miss_key + s->cuda.reuse.miss_slots + s->cuda.reuse.miss_age;
}

static uint64_t get_cuda_scope_capped(const struct counters_snapshot *s)
{
	return s->cuda.scopes.too_deep + s->cuda.scopes.threads_capped +
	       s->cuda.scopes.names_capped;
}

const struct counters_row counters_rows[] = {
	/* The sampler's BPF counters (the service: since it started, over reloads). */
	CNT("counters.samples", cpu.samples, "xsprof_samples_total", NULL,
	    "CPU samples taken by the sampler.", "sampler:", "%llu samples"),
	CNT("counters.kept", cpu.emitted, "xsprof_samples_kept_total", NULL,
	    "Samples sent to xsprofd (not idle, not filtered).", "sampler:", "%llu sent"),
	CNT("counters.idle", cpu.idle, "xsprof_samples_idle_total", NULL,
	    "Samples of idle CPUs (left out).", "sampler:", "%llu idle"),
	CNT("counters.other_processes", cpu.filtered, "xsprof_samples_filtered_total", NULL,
	    "Samples of processes outside the filter (left out).",
	    "sampler:", "%llu of other processes"),
	CNT("counters.lost_ring_buffer_full", cpu.drop_ringbuf, "xsprof_samples_lost_total",
	    "cause=\"ring_buffer_full\"", "Samples lost, by cause.",
	    "sampler:", "%llu lost (ring buffer full)"),
	CNT("counters.malformed_records", bad_records, "xsprof_samples_lost_total",
	    "cause=\"malformed\"", NULL, "sampler:", "%llu malformed"),
	CNT("counters.kernel_stack_unreadable", cpu.kstack_err, "xsprof_stacks_unreadable_total",
	    "space=\"kernel\"", "Samples whose stack could not be read, by address space.",
	    "sampler:", "%llu kernel stacks unreadable"),
	CNT("counters.user_stack_unreadable", cpu.ustack_err, "xsprof_stacks_unreadable_total",
	    "space=\"user\"", NULL, "sampler:", "%llu user stacks unreadable"),
	CNT("counters.in_exec", cpu.in_exec, "xsprof_samples_in_exec_total", NULL,
	    "Samples inside an exec, between two images (no user frames).",
	    "user stacks:", "%llu samples inside an exec between two images (no user frames)"),
	CNT("counters.bpf_timed", cpu.timed, "xsprof_bpf_timed_samples_total", NULL,
	    "Sampler runs that timed themselves (one in 16).", "sampler:", "%llu timed"),
	{.path = "counters.bpf_timed_ns",
	 .off = AT(cpu.timed_ns),
	 .metric = "xsprof_bpf_timed_sample_seconds_total",
	 .type = COUNTERS_COUNTER,
	 .scale = 1e-9,
	 .help = "The timed sampler runs' time in all.",
	 .line = "sampler:",
	 .words = "%llu ns in the timed runs"},

	/* The stack table: the run's, or the service's current slice. */
	GAU("stacks.samples", stacks.samples, "xsprof_stack_table_samples", NULL,
	    "Samples counted in the stack table (the service: its current slice's).",
	    "stack table:", "%llu samples"),
	GAU("stacks.distinct", stacks.distinct, "xsprof_stack_table_stacks", NULL,
	    "Distinct stacks in the stack table.", "stack table:", "%llu distinct"),
	GAU("stacks.overflowed", stacks.overflowed, "xsprof_stack_table_overflowed_samples", NULL,
	    "Samples in the stack table counted without their stack (past --max-stacks).",
	    "stack table:", "%llu past --max-stacks"),
	GAU("stacks.bytes", stacks.bytes, "xsprof_stack_table_bytes", NULL,
	    "Memory of the stack table.", "stack table:", "%llu bytes"),

	/* Process events (exec, library loads, exit) and the processes seen. */
	CNT("processes.execs", rec.proc.execs, "xsprof_process_execs_total", NULL,
	    "Exec records handled.", "process events:", "%llu execs"),
	CNT("processes.libraries_loaded", rec.proc.libs, "xsprof_process_libraries_loaded_total",
	    NULL, "Loader library records handled.", "process events:", "%llu libraries loaded"),
	CNT("processes.exits", rec.proc.exits, "xsprof_process_exits_total", NULL,
	    "Exit records handled.", "process events:", "%llu exits"),
	CNT("processes.gone_before_read", rec.proc.gone, "xsprof_process_gone_before_read_total",
	    NULL, "Process records whose process was gone when read.",
	    "process events:", "%llu gone before read"),
	CNT("processes.records_over_user_budget", rec.proc.over_budget,
	    "xsprof_process_records_lost_total", "cause=\"user_budget\"",
	    "Process records not sent or lost, by cause.",
	    "process events:", "%llu past a user's budget"),
	CNT("processes.lost_ring_buffer_full", rec.proc.bpf_drop_ringbuf,
	    "xsprof_process_records_lost_total", "cause=\"ring_buffer_full\"", NULL,
	    "process events:", "%llu lost (ring buffer full)"),
	CNT_GET("processes.seen", get_processes_seen, "xsprof_processes_seen_total", NULL,
		"Distinct processes the recording saw.", "process events:", "%llu processes seen"),
	CNT("processes.mappings_unread", rec.snapshot_failed,
	    "xsprof_process_mappings_unread_total", NULL,
	    "Processes gone before their mappings were read.",
	    "process events:", "%llu gone before their mappings were read"),

	/* The symbolizer: snapshots of processes, ELF files, its cache and its lookups. */
	CNT("symbolizer.snapshots", sym.processes, "xsprof_symbolizer_snapshots_total", NULL,
	    "Process generations whose mappings were read.", "symbolizer snapshots:", "%llu taken"),
	CNT("symbolizer.snapshots_failed_gone", sym.snapshot_failures,
	    "xsprof_symbolizer_snapshots_failed_total", NULL,
	    "Mappings that could not be read (the process was gone).",
	    "symbolizer snapshots:", "%llu failed (process gone)"),
	CNT("symbolizer.snapshots_deferred_user_share", sym.exec_deferred,
	    "xsprof_symbolizer_snapshots_deferred_total", NULL,
	    "Snapshots put off to the first sample: the user had too many processes not sampled "
	    "yet.",
	    "symbolizer snapshots:", "%llu deferred past a user's share"),
	CNT("symbolizer.ended_unsampled", sym.ended_unused,
	    "xsprof_symbolizer_snapshots_ended_unsampled_total", NULL,
	    "Snapshots of processes that ended never sampled (freed at once).",
	    "symbolizer snapshots:", "%llu ended unsampled"),
	CNT("symbolizer.pids_reused", sym.pid_reused, "xsprof_symbolizer_pids_reused_total", NULL,
	    "Snapshots found to be of another process with the same pid.",
	    "symbolizer snapshots:", "%llu of a reused pid"),
	CNT("symbolizer.files_loaded", sym.files_loaded, "xsprof_symbolizer_files_total",
	    "outcome=\"loaded\"", "ELF files read, by outcome.",
	    "symbolizer files:", "%llu ELF files read"),
	CNT("symbolizer.files_failed", sym.files_failed, "xsprof_symbolizer_files_total",
	    "outcome=\"failed\"", NULL, "symbolizer files:", "%llu failed"),
	CNT("symbolizer.perf_maps_capped", sym.perf_maps_capped,
	    "xsprof_symbolizer_perf_maps_capped_total", NULL,
	    "Perf maps read only up to their cap.",
	    "symbolizer files:", "%llu perf maps read to their cap"),
	CNT("symbolizer.user_lookups", sym.user_lookups, "xsprof_symbolizer_lookups_total",
	    "space=\"user\"", "Frames named, by address space.",
	    "symbolizer lookups:", "%llu user frames"),
	CNT("symbolizer.kernel_lookups", sym.kernel_lookups, "xsprof_symbolizer_lookups_total",
	    "space=\"kernel\"", NULL, "symbolizer lookups:", "%llu kernel frames"),
	CNT("symbolizer.user_unnamed", sym.user_unresolved, "xsprof_symbolizer_unnamed_total",
	    "space=\"user\"", "Frames left unnamed, by address space.",
	    "symbolizer lookups:", "%llu user frames unnamed"),
	CNT("symbolizer.kernel_unnamed", sym.kernel_unresolved, "xsprof_symbolizer_unnamed_total",
	    "space=\"kernel\"", NULL, "symbolizer lookups:", "%llu kernel frames unnamed"),
	CNT("symbolizer.frame_names_refused", sym.frame_names_full,
	    "xsprof_symbolizer_frame_names_refused_total", NULL,
	    "Interpreter frame names refused: the name table's cap was reached.",
	    "symbolizer lookups:", "%llu interpreter frame names refused"),
	CNT("symbolizer.frames_past_broken_chain", sym.bogus_frames,
	    "xsprof_symbolizer_broken_chain_frames_total", NULL,
	    "Frames past the end of a broken frame-pointer chain, dropped.",
	    "user stacks:", "%llu frames past the end of a broken frame-pointer chain dropped"),
	GAU("symbolizer.bytes", sym.bytes, "xsprof_symbolizer_bytes", NULL,
	    "Memory of the symbolizer's cache.", "symbolizer cache:", "%llu bytes"),
	GAU("symbolizer.cache_bytes", sym_cache_bytes, "xsprof_symbolizer_cache_bytes", NULL,
	    "The symbolizer's cache size (--symbol-cache-mb).",
	    "symbolizer cache:", "%llu bytes at most"),
	GAU("symbolizer.peak_bytes", sym.peak_bytes, "xsprof_symbolizer_peak_bytes", NULL,
	    "The most memory the symbolizer's cache held.",
	    "symbolizer cache:", "%llu bytes at the peak"),
	CNT("symbolizer.evictions", sym.evictions, "xsprof_symbolizer_evictions_total", NULL,
	    "Tables and snapshots the symbolizer dropped at its cap.",
	    "symbolizer cache:", "%llu evictions"),
	CNT("symbolizer.unsampled_snapshots_dropped", sym.idle_dropped,
	    "xsprof_symbolizer_dropped_total", "what=\"unsampled_snapshot\"",
	    "Of the evictions, snapshots not sampled yet and images still to be named, by what.",
	    "symbolizer cache:", "%llu snapshots not sampled yet dropped"),
	CNT("symbolizer.unnamed_images_dropped", sym.pinned_dropped,
	    "xsprof_symbolizer_dropped_total", "what=\"unnamed_image\"", NULL,
	    "symbolizer cache:", "%llu images still to be named dropped"),
	CNT("symbolizer.reread_soon", sym.reread_soon, "xsprof_symbolizer_rereads_soon_total", NULL,
	    "Files read again soon after they were dropped.",
	    "symbolizer cache:", "%llu files read again soon after"),
	GAU("symbolizer.hot_files", sym.hot_files, "xsprof_symbolizer_hot_files", NULL,
	    "Files read again soon, kept past the cache now.",
	    "symbolizer cache:", "%llu kept past the cache"),
	GAU("symbolizer.hot_bytes", sym.hot_bytes, "xsprof_symbolizer_hot_bytes", NULL,
	    "Memory of the files kept past the cache.",
	    "symbolizer cache:", "%llu bytes kept past the cache"),

	/* --unwind auto, cfi: how user stacks were walked, and the tables they walked with. */
	CNT("unwind.walks_with_tables", unwind_bpf.walks_cfi, "xsprof_unwind_walks_total",
	    "method=\"tables\"", "User stacks walked, by method.",
	    "user stack walks:", "%llu with unwind tables"),
	CNT("unwind.walks_frame_pointers_only", unwind_bpf.walks_fp, "xsprof_unwind_walks_total",
	    "method=\"frame_pointers\"", NULL, "user stack walks:", "%llu by frame pointers only"),
	CNT("unwind.walks_without_tables_yet", unwind_bpf.no_process,
	    "xsprof_unwind_walks_without_tables_total", NULL,
	    "Of the frame-pointer walks, those of processes without tables loaded yet.",
	    "user stack walks:", "%llu of processes without tables yet"),
	CNT("unwind.frames_from_tables", unwind_bpf.frames_cfi, "xsprof_unwind_frames_total",
	    "method=\"tables\"", "User frames found, by method.",
	    "user stack walks:", "%llu frames from tables"),
	CNT("unwind.frames_from_frame_pointers", unwind_bpf.frames_fp, "xsprof_unwind_frames_total",
	    "method=\"frame_pointers\"", NULL, "user stack walks:", "%llu from frame pointers"),
	CNT("unwind.frames_pending_table", unwind_bpf.pending_fp,
	    "xsprof_unwind_frames_pending_table_total", NULL,
	    "Frames walked by frame pointers in a file whose table was being built.",
	    "user stack walks:", "%llu in a file whose table was being built"),
	CNT("unwind.end_outermost", unwind_bpf.end_outermost, "xsprof_unwind_walk_ends_total",
	    "why=\"outermost\"", "User stack walks, by how they ended.",
	    "user stack walk ends:", "%llu outermost frame"),
	CNT("unwind.end_frame_pointer_chain", unwind_bpf.end_fp_chain,
	    "xsprof_unwind_walk_ends_total", "why=\"frame_pointer_chain\"", NULL,
	    "user stack walk ends:", "%llu end of frame-pointer chain"),
	CNT("unwind.end_no_table", unwind_bpf.end_no_table, "xsprof_unwind_walk_ends_total",
	    "why=\"no_table\"", NULL, "user stack walk ends:", "%llu no table"),
	CNT("unwind.end_no_rule", unwind_bpf.end_invalid, "xsprof_unwind_walk_ends_total",
	    "why=\"no_rule\"", NULL, "user stack walk ends:", "%llu no rule"),
	CNT("unwind.end_unreadable", unwind_bpf.end_unreadable, "xsprof_unwind_walk_ends_total",
	    "why=\"unreadable\"", NULL, "user stack walk ends:", "%llu unreadable"),
	CNT("unwind.end_bad_cfa", unwind_bpf.end_bad_cfa, "xsprof_unwind_walk_ends_total",
	    "why=\"bad_cfa\"", NULL, "user stack walk ends:", "%llu bad CFA"),
	CNT("unwind.end_depth_cap", unwind_bpf.end_depth, "xsprof_unwind_walk_ends_total",
	    "why=\"depth_cap\"", NULL, "user stack walk ends:", "%llu depth cap"),
	CNT("unwind.signal_frames", unwind_bpf.signal_frames, "xsprof_unwind_signal_frames_total",
	    NULL, "Signal frames walks crossed.",
	    "user stack walk ends:", "%llu signal frames crossed"),
	CNT("unwind.jit_callers_frame_pointer", unwind_bpf.jit_fp,
	    "xsprof_unwind_jit_callers_total", "how=\"frame_pointer\"",
	    "Callers of JIT code, by how they were found.",
	    "callers of JIT code:", "%llu by their frame pointer"),
	CNT("unwind.jit_callers_scanned", unwind_bpf.scanned, "xsprof_unwind_jit_callers_total",
	    "how=\"stack_scan\"", NULL, "callers of JIT code:", "%llu by a stack scan"),
	CNT("unwind.jit_callers_not_found", unwind_bpf.scan_failed,
	    "xsprof_unwind_jit_callers_total", "how=\"neither\"", NULL,
	    "callers of JIT code:", "%llu by neither"),
	CNT("unwind.tables_built", unwind.tables_built, "xsprof_unwind_tables_built_total", NULL,
	    "Tables built when a stack first ran in their file.",
	    "unwind tables:", "%llu built when a stack first ran in their file"),
	CNT("unwind.tables_without_eh_frame", unwind.tables_failed,
	    "xsprof_unwind_tables_refused_total", "cause=\"no_eh_frame\"",
	    "Tables not loaded, by cause.", "unwind tables:", "%llu without a usable .eh_frame"),
	CNT("unwind.tables_no_room", unwind.tables_no_room, "xsprof_unwind_tables_refused_total",
	    "cause=\"no_room\"", NULL, "unwind tables:", "%llu did not fit"),
	GAU("unwind.tables", unwind.tables, "xsprof_unwind_tables", NULL, "Unwind tables loaded.",
	    "unwind tables:", "%llu loaded now"),
	GAU("unwind.files_known", unwind.files, "xsprof_unwind_files", NULL,
	    "Files the unwinder knows now (mapped, or with a table kept).",
	    "unwind tables:", "%llu files known"),
	GAU("unwind.files_without_table", unwind.refused_files, "xsprof_unwind_files_without_table",
	    NULL, "Files walked by frame pointers for want of a table.",
	    "unwind tables:", "%llu files without a table"),
	GAU("unwind.table_rows", unwind.rows, "xsprof_unwind_table_rows", NULL,
	    "Rows of the loaded unwind tables.", "unwind tables:", "%llu rows"),
	GAU("unwind.table_rows_cap", unwind.max_rows, "xsprof_unwind_table_rows_cap", NULL,
	    "Rows the unwind table memory holds (--unwind-mb).",
	    "unwind tables:", "%llu rows at most"),
	{.path = "unwind.table_mb",
	 .off = AT(unwind_mb),
	 .metric = "xsprof_unwind_table_cap_bytes",
	 .type = COUNTERS_GAUGE,
	 .scale = 1048576,
	 .help = "The unwind tables' memory (--unwind-mb).",
	 .line = "unwind tables:",
	 .words = "%llu MiB (--unwind-mb)"},
	GAU("unwind.bpf_map_bytes", unwind.map_bytes, "xsprof_unwind_map_bytes", NULL,
	    "Kernel memory of the unwind maps.", "unwind tables:", "%llu bytes of BPF maps"),
	{.path = "unwind.build_ns",
	 .off = AT(unwind.build_ns),
	 .metric = "xsprof_unwind_build_seconds_total",
	 .type = COUNTERS_COUNTER,
	 .scale = 1e-9,
	 .help = "Time spent building unwind tables.",
	 .line = "unwind tables:",
	 .words = "%llu ns to build"},
	CNT("unwind.eh_frame_bytes", unwind.eh_frame_bytes, "xsprof_unwind_eh_frame_bytes_total",
	    NULL, "Bytes of .eh_frame built into tables.",
	    "unwind tables:", "%llu bytes of .eh_frame"),
	{.path = "unwind.want_to_ready_max_ns",
	 .off = AT(unwind.want_to_ready_max_ns),
	 .metric = "xsprof_unwind_table_wait_max_seconds",
	 .type = COUNTERS_GAUGE,
	 .scale = 1e-9,
	 .help = "The longest from a walk's request to its table in place.",
	 .line = "unwind tables:",
	 .words = "%llu ns at most from a request to the table in place"},
	CNT("unwind.tables_evicted", unwind.tables_evicted, "xsprof_unwind_tables_evicted_total",
	    NULL, "Tables evicted to make room.", "unwind tables:", "%llu evicted"),
	CNT("unwind.tables_rebuilt", unwind.tables_rebuilt, "xsprof_unwind_tables_rebuilt_total",
	    NULL, "Tables built again after they were evicted.",
	    "unwind tables:", "%llu built again"),
	CNT("unwind.builds_deferred_user_budget", unwind.builds_deferred,
	    "xsprof_unwind_builds_deferred_total", NULL,
	    "Table builds that waited for their user's build budget.",
	    "unwind tables:", "%llu builds waited for their user's build budget"),
	CNT("unwind.tables_kept_touched", unwind.tables_kept_touched,
	    "xsprof_unwind_tables_kept_touched_total", NULL,
	    "Files touched (same build id) whose tables were kept.",
	    "unwind tables:", "%llu files touched kept their tables"),
	CNT("unwind.held_samples", unwind.held, "xsprof_unwind_held_samples_total", NULL,
	    "Samples held until their table was built.",
	    "first samples:", "%llu held until their tables were in"),
	CNT("unwind.held_whole", unwind.held_whole, "xsprof_unwind_held_finished_total",
	    "how=\"whole\"", "Held samples finished, by how.", "first samples:", "%llu whole"),
	CNT("unwind.held_partly_frame_pointers", unwind.held_fp,
	    "xsprof_unwind_held_finished_total", "how=\"partly_frame_pointers\"", NULL,
	    "first samples:", "%llu partly by frame pointers"),
	CNT("unwind.held_past_stack_copy", unwind.held_cut, "xsprof_unwind_held_finished_total",
	    "how=\"past_stack_copy\"", NULL, "first samples:", "%llu past the stack copy"),
	CNT("unwind.held_given_up", unwind.held_late, "xsprof_unwind_held_finished_total",
	    "how=\"given_up\"", NULL, "first samples:", "%llu given up waiting"),
	CNT("unwind.held_in_file_mapped_since", unwind_bpf.held_stale,
	    "xsprof_unwind_held_in_file_mapped_since_total", NULL,
	    "Walks held at a pc in a file mapped since the mappings were read.",
	    "first samples:", "%llu in a file mapped since the mappings were read"),
	CNT("unwind.held_mappings_reread", unwind.held_rereads,
	    "xsprof_unwind_held_mappings_reread_total", NULL,
	    "Mappings read again for a held sample in a file mapped since.",
	    "first samples:", "%llu had their mappings read again"),
	CNT("unwind.held_lost_ring_buffer_full", unwind_bpf.hold_drops,
	    "xsprof_unwind_holds_lost_total", "cause=\"ring_buffer_full\"",
	    "Holds not made or lost, by cause.",
	    "first samples:", "%llu held samples lost (ring buffer full)"),
	CNT("unwind.hold_budget_spent", unwind_bpf.hold_budget, "xsprof_unwind_holds_lost_total",
	    "cause=\"budget\"", NULL,
	    "first samples:", "%llu walked by frame pointers past the hold budget"),
	CNT("unwind.table_requests_lost", unwind_bpf.want_drops,
	    "xsprof_unwind_table_requests_lost_total", NULL,
	    "Table requests lost (ring buffer full): asked again later.",
	    "first samples:", "%llu table requests lost (ring buffer full)"),
	CNT("unwind.processes_let_go_before_tables", unwind.table_waits_late,
	    "xsprof_unwind_table_waits_let_go_total", NULL,
	    "Processes let go before the tables their launches asked for were in (250 ms).",
	    "first samples:",
	    "%llu processes let go before the tables their launches asked for were in"),
	GAU("unwind.processes", unwind.processes, "xsprof_unwind_processes", NULL,
	    "Processes loaded in the unwind process table.", "unwind processes:", "%llu loaded"),
	GAU("unwind.processes_cap", unwind.max_procs, "xsprof_unwind_processes_cap", NULL,
	    "Size of the unwind process table.", "unwind processes:", "%llu at most"),
	GAU("unwind.processes_share_per_user", unwind.share_procs,
	    "xsprof_unwind_processes_user_share", NULL,
	    "At most this many of one user's processes are loaded.",
	    "unwind processes:", "%llu at most per user"),
	CNT("unwind.processes_evicted", unwind.procs_evicted,
	    "xsprof_unwind_processes_evicted_total", NULL,
	    "Processes evicted from the unwind table (loaded again at their next sample).",
	    "unwind processes:", "%llu evicted"),
	CNT("unwind.processes_over_user_share", unwind.procs_over_share,
	    "xsprof_unwind_processes_refused_total", "cause=\"user_share\"",
	    "Processes refused a place in the unwind table, by cause.",
	    "unwind processes:", "%llu refused over a user's share"),
	CNT("unwind.processes_table_full", unwind.procs_full,
	    "xsprof_unwind_processes_refused_total", "cause=\"table_full\"", NULL,
	    "unwind processes:", "%llu refused at the process table's cap"),
	CNT("unwind.mappings_table_full", unwind.maps_full, "xsprof_unwind_processes_refused_total",
	    "cause=\"mappings_full\"", NULL,
	    "unwind processes:", "%llu refused at the mapping table's cap"),
	CNT("unwind.mappings_past_per_process_cap", unwind.maps_capped,
	    "xsprof_unwind_mappings_refused_total", "cause=\"per_process_cap\"",
	    "Mappings left to frame pointers, by cause.",
	    "unwind processes:", "%llu mappings past the per-process cap"),
	CNT("unwind.mappings_without_file_slot", unwind.files_full,
	    "xsprof_unwind_mappings_refused_total", "cause=\"no_file_slot\"", NULL,
	    "unwind processes:", "%llu mappings without a file slot"),
	CNT("unwind.jvm_without_frame_pointers", unwind.jvm_nofp,
	    "xsprof_unwind_jvm_without_frame_pointers_total", NULL,
	    "JVMs run without -XX:+PreserveFramePointer (walks end at their JIT code).",
	    "unwind processes:", "%llu JVMs without frame pointers"),

	/* CPython processes: found, walked, and their code objects. */
	GAU("python.processes", py.processes, "xsprof_python_processes", NULL,
	    "CPython processes walked.", "python processes:", "%llu walked now"),
	CNT("python.detected", py.detected, "xsprof_python_processes_found_total", NULL,
	    "CPython processes found (an exec counts again).", "python processes:", "%llu found"),
	CNT("python.unsupported", py.unsupported, "xsprof_python_processes_unsupported_total", NULL,
	    "CPython processes found but not walked: their stacks stay native.",
	    "python processes:", "%llu not walkable"),
	CNT("python.procs_full", py.procs_full, "xsprof_python_processes_refused_total", NULL,
	    "CPython processes past the cap.", "python processes:", "%llu past the cap"),
	CNT("python.debug_offsets", py.debug_offsets, "xsprof_python_processes_debug_offsets_total",
	    NULL, "CPython processes walked with offsets read from the interpreter.",
	    "python processes:", "%llu with offsets read from the interpreter"),
	CNT("python.walks", py_bpf.walks, "xsprof_python_walks_total", NULL,
	    "Python stacks walked.", "python walks:", "%llu stacks"),
	CNT("python.frames", py_bpf.frames, "xsprof_python_frames_total", NULL,
	    "Interpreter frames sent.", "python walks:", "%llu interpreter frames"),
	CNT("python.interleaved", py.interleaved, "xsprof_python_records_placed_total",
	    "where=\"native_stack\"", "Records with interpreter frames, by where they were placed.",
	    "python walks:", "%llu placed in the native stack"),
	CNT("python.appended", py.appended, "xsprof_python_records_placed_total", "where=\"root\"",
	    NULL, "python walks:", "%llu at its root"),
	CNT_GET("python.truncated", get_py_truncated, "xsprof_python_stacks_truncated_total", NULL,
		"Python stacks cut at a frame cap.", "python walks:", "%llu cut at a frame cap"),
	CNT("python.nested_native_only", py_bpf.nested, "xsprof_python_walks_skipped_total",
	    "cause=\"nested\"",
	    "Python walks not made or not used: the stack stays native, by cause.",
	    "python walks:", "%llu kept native (nested walk)"),
	CNT("python.unknown_process_records", py.unknown_process,
	    "xsprof_python_walks_skipped_total", "cause=\"unknown_process\"", NULL,
	    "python walks:", "%llu of unknown processes kept native"),
	CNT("python.frames_lost_copying", py_bpf.copy_err, "xsprof_python_frames_lost_total",
	    "cause=\"copy\"", "Interpreter frames lost, by cause.",
	    "python walks:", "%llu frames lost copying"),
	CNT("python.malformed_records", py.bad_records, "xsprof_python_frames_lost_total",
	    "cause=\"malformed\"", NULL, "python walks:", "%llu frames past the record's end"),
	CNT("python.no_thread", py_bpf.no_thread, "xsprof_python_walk_ends_total",
	    "why=\"no_thread_state\"", "Python walks that found no Python stack, by why.",
	    "python walk ends:", "%llu threads without a thread state"),
	CNT("python.no_frame", py_bpf.no_frame, "xsprof_python_walk_ends_total",
	    "why=\"no_python_code\"", NULL, "python walk ends:", "%llu running no Python code"),
	CNT("python.unreadable", py_bpf.unreadable, "xsprof_python_walk_ends_total",
	    "why=\"unreadable\"", NULL, "python walk ends:", "%llu unreadable"),
	CNT("python.thread_scans", py_bpf.thread_scans, "xsprof_python_thread_scans_total", NULL,
	    "Thread lists walked (the per-thread cache missed).",
	    "python walk ends:", "%llu thread list scans"),
	CNT("python.code_reads", py.code_reads, "xsprof_python_code_objects_total",
	    "outcome=\"read\"", "Code objects read, by outcome.",
	    "python code objects:", "%llu read"),
	CNT("python.code_unreadable", py.code_unreadable, "xsprof_python_code_objects_total",
	    "outcome=\"unreadable\"", NULL, "python code objects:", "%llu unreadable"),
	CNT("python.code_cache_resets", py.code_cache_resets,
	    "xsprof_python_code_cache_resets_total", NULL,
	    "Code object caches dropped at the memory cap.",
	    "python code objects:", "%llu cache resets"),
	GAU("python.code_bytes", py.code_bytes, "xsprof_python_code_cache_bytes", NULL,
	    "Memory of the code object caches.", "python code objects:", "%llu bytes cached"),
	CNT("python.names_full", py.names_full, "xsprof_python_frames_unnamed_total", NULL,
	    "Python frames left unnamed: the frame name table is full.",
	    "python code objects:", "%llu frames unnamed (name table full)"),

	/* PyTorch's backward work put under its forward line (daemon/python/autograd.c). */
	CNT("python.autograd_processes", ag.procs, "xsprof_autograd_processes_total", NULL,
	    "Processes whose libtorch got the autograd probes.",
	    "python autograd:", "%llu processes probed"),
	CNT("python.autograd_processes_capped", ag.procs_capped,
	    "xsprof_autograd_processes_refused_total", "cause=\"cap\"",
	    "Processes with a libtorch left without the autograd probes, by cause.",
	    "python autograd:", "%llu past the cap"),
	CNT("python.autograd_attach_failed", ag.attach_failed,
	    "xsprof_autograd_processes_refused_total", "cause=\"attach\"", NULL,
	    "python autograd:", "%llu whose libtorch could not be probed"),
	CNT("python.autograd_nodes", ag.nodes, "xsprof_autograd_nodes_total", NULL,
	    "Autograd nodes made in forward, kept with their Python frames.",
	    "python autograd:", "%llu nodes made"),
	CNT("python.autograd_nodes_without_python", ag.nodes_no_frames,
	    "xsprof_autograd_nodes_without_python_total", NULL,
	    "Autograd nodes made with no Python frame on their thread.",
	    "python autograd:", "%llu with no Python frame"),
	CNT("python.autograd_nodes_run", ag.evals, "xsprof_autograd_nodes_run_total", NULL,
	    "Autograd nodes the engine ran in backward.", "python autograd:", "%llu run"),
	CNT("python.autograd_nodes_run_unknown", ag.evals_unknown,
	    "xsprof_autograd_nodes_run_unknown_total", NULL,
	    "Nodes run whose forward was not seen (made before the probes, or forgotten).",
	    "python autograd:", "%llu of them not seen made"),
	CNT("python.autograd_backward_calls", ag.execs, "xsprof_autograd_backward_calls_total",
	    NULL, "backward() calls (Engine::execute).",
	    "python autograd:", "%llu backward() calls"),
	CNT("python.autograd_passes_past_timeline_cap", ag.passes_untimed,
	    "xsprof_autograd_passes_untimed_total", NULL,
	    "backward() calls the timeline did not keep (its cap): the GPU report's NVTX ranges "
	    "miss the engine threads' work done for them.",
	    "python autograd:", "%llu past the timeline's cap"),
	CNT("python.autograd_links_past_timeline_cap", ag.links_untimed,
	    "xsprof_autograd_links_untimed_total", NULL,
	    "Backward launches whose link to their forward op the timeline did not keep (its "
	    "cap): the Chrome trace draws no flow for them.",
	    "python autograd:", "%llu forward links past it"),
	CNT("python.autograd_samples_backward", ag.samples_backward,
	    "xsprof_autograd_backward_samples_total", NULL, "CPU samples taken inside backward.",
	    "python autograd:", "%llu samples in backward"),
	CNT("python.autograd_samples_joined", ag.samples_joined,
	    "xsprof_autograd_backward_samples_joined_total", NULL,
	    "CPU samples in backward put under their node's forward line.",
	    "python autograd:", "%llu under their forward line"),
	CNT("python.autograd_launches_joined", ag.launches_joined,
	    "xsprof_autograd_launches_joined_total", NULL,
	    "Kernel launches made while a node ran, put under its forward line.",
	    "python autograd:", "%llu launches under their forward line"),
	CNT("python.autograd_reuse_made_whole", ag.reuse_made_whole,
	    "xsprof_autograd_reuse_made_whole_total", NULL,
	    "Launch reuse records made whole launches (their thread's last stack was joined).",
	    "python autograd:", "%llu reused launch stacks made whole"),
	CNT("python.autograd_layout_unread", ag.bad_layout, "xsprof_autograd_layout_unread_total",
	    NULL, "Processes left unjoined: the numbers read from their nodes matched none made.",
	    "python autograd:", "%llu processes whose nodes could not be read"),
	CNT("python.autograd_too_deep", ag.too_deep, "xsprof_autograd_stacks_too_deep_total", NULL,
	    "Backward samples left as they were: the joined stack would pass the depth cap.",
	    "python autograd:", "%llu too deep to join"),
	CNT_GET("python.autograd_events_lost", get_ag_lost, "xsprof_autograd_events_lost_total",
		NULL, "Autograd events lost (ring buffer full, probe nested, thread cap).",
		"python autograd:", "%llu events lost"),

	/* The CUDA probes: calls, launch stacks, the xsprof:launch site, scopes. */
	CNT("cuda_probes.calls", cuda.bpf.calls, "xsprof_cuda_calls_total", NULL,
	    "CUDA API calls caught by the probes.", "CUDA calls:", "%llu caught"),
	CNT("cuda_probes.calls_nested", cuda.bpf.nested, "xsprof_cuda_calls_nested_total", NULL,
	    "CUDA calls inside another probed call (counted once).",
	    "CUDA calls:", "%llu inside another probed call"),
	CNT("cuda_probes.calls_of_other_processes", cuda.bpf.filtered,
	    "xsprof_cuda_calls_filtered_total", NULL, "CUDA calls of processes outside the filter.",
	    "CUDA calls:", "%llu of other processes"),
	CNT_GET("cuda_probes.lost_ring_buffer_full", get_cuda_lost_ringbuf,
		"xsprof_cuda_calls_lost_total", "cause=\"ring_buffer_full\"",
		"CUDA calls lost, by cause.",
		"CUDA calls:", "%llu calls and xsprof:launch firings lost (ring buffer full)"),
	CNT("cuda_probes.lost_scratch_busy", cuda.bpf.scratch_busy, "xsprof_cuda_calls_lost_total",
	    "cause=\"scratch_busy\"", NULL, "CUDA calls:", "%llu lost (scratch busy)"),
	CNT("cuda_probes.launch_firings_lost", cuda.bpf.usdt_drop,
	    "xsprof_cuda_launch_firings_lost_total", NULL,
	    "Of the calls lost at a full ring buffer, xsprof:launch firings.",
	    "CUDA calls:", "%llu of them xsprof:launch firings"),
	CNT("cuda_probes.caller_unreadable", cuda.bpf.ustack_err,
	    "xsprof_cuda_arguments_unreadable_total", "what=\"caller\"",
	    "CUDA calls whose caller or stream argument could not be read, by what.",
	    "CUDA calls:", "%llu callers unreadable"),
	CNT("cuda_probes.stream_unreadable", cuda.bpf.stream_err,
	    "xsprof_cuda_arguments_unreadable_total", "what=\"stream\"", NULL,
	    "CUDA calls:", "%llu stream arguments unreadable"),
	CNT("cuda_probes.bad_records", cuda.bad_records, "xsprof_cuda_records_failed_total",
	    "cause=\"malformed\"", "CUDA records xsprofd could not use, by cause.",
	    "CUDA calls:", "%llu malformed records"),
	CNT("cuda_probes.store_failures", cuda.store_failures, "xsprof_cuda_records_failed_total",
	    "cause=\"not_stored\"", NULL, "CUDA calls:", "%llu not stored (out of memory)"),
	GAU("cuda_probes.launches_in_slice", launches_in_slice, "xsprof_cuda_launches_held", NULL,
	    "CUDA calls held in the launch store (the service: emptied with each slice).",
	    "CUDA calls:", "%llu held in the launch store"),
	CNT("cuda_probes.stacks_walked", cuda.reuse.walked, "xsprof_cuda_launch_stacks_total",
	    "how=\"walked\"", "Launch stacks, walked or reused.", "CUDA: launch stacks",
	    "walked %llu times"),
	CNT("cuda_probes.stacks_reused", cuda.reuse.reused, "xsprof_cuda_launch_stacks_total",
	    "how=\"reused\"", NULL, "CUDA: launch stacks", "reused %llu times (proved unchanged)"),
	CNT_GET("cuda_probes.reuse_misses", get_cuda_reuse_misses,
		"xsprof_cuda_launch_stack_reuse_misses_total", NULL,
		"Launch stacks walked again instead of reused.", "CUDA: launch stacks",
		"walked again %llu times"),
	CNT("cuda_probes.reuse_miss_place", cuda.reuse.miss_key,
	    "xsprof_cuda_launch_stack_walked_again_total", "why=\"another_place\"",
	    "Launch stacks walked again, by why.", "CUDA: launch stacks", "%llu at another place"),
	CNT("cuda_probes.reuse_miss_caller", cuda.reuse.miss_slots,
	    "xsprof_cuda_launch_stack_walked_again_total", "why=\"changed_caller\"", NULL,
	    "CUDA: launch stacks", "%llu with a changed caller"),
	CNT("cuda_probes.reuse_miss_age", cuda.reuse.miss_age,
	    "xsprof_cuda_launch_stack_walked_again_total", "why=\"age\"", NULL,
	    "CUDA: launch stacks", "%llu after 10 ms"),
	CNT("cuda_probes.reuse_drops", cuda.reuse.reuse_drops,
	    "xsprof_cuda_launch_stack_reuses_lost_total", NULL,
	    "Reused launch stacks lost (ring buffer full).", "CUDA: launch stacks",
	    "%llu reuse records lost (ring buffer full)"),
	CNT("cuda_probes.bpf_timed", cuda.reuse.timed, "xsprof_cuda_bpf_timed_runs_total", NULL,
	    "Launch probe runs that timed themselves (one in 16).", "CUDA: launch stacks",
	    "%llu probe runs timed"),
	{.path = "cuda_probes.bpf_timed_ns",
	 .off = AT(cuda.reuse.timed_ns),
	 .metric = "xsprof_cuda_bpf_timed_run_seconds_total",
	 .type = COUNTERS_COUNTER,
	 .scale = 1e-9,
	 .help = "The timed launch probe runs' time in all.",
	 .line = "CUDA: launch stacks",
	 .words = "%llu ns in the timed runs"},
	CNT("cuda_probes.table_waits", cuda.table_waits, "xsprof_cuda_launch_table_waits_total",
	    NULL, "Launches that paused their process until the unwind tables they asked for.",
	    "CUDA: launch stacks", "%llu paused for their unwind tables"),
	GAU("cuda_probes.probed_files", cuda.targets, "xsprof_cuda_probed_files", NULL,
	    "Files (per process, or system-wide) the CUDA probes are on.",
	    "CUDA probes:", "%llu files"),
	GAU("cuda_probes.uprobes", cuda.links, "xsprof_cuda_uprobes", NULL,
	    "Uprobes the CUDA probes attached.", "CUDA probes:", "%llu uprobes"),
	CNT("cuda_probes.attach_failed", cuda.attach_failed, "xsprof_cuda_files_not_probed_total",
	    "cause=\"failed\"", "Files the CUDA probes could not attach to, by cause.",
	    "CUDA probes:", "%llu failed"),
	CNT("cuda_probes.links_capped", cuda.links_capped, "xsprof_cuda_files_not_probed_total",
	    "cause=\"uprobe_cap\"", NULL, "CUDA probes:", "%llu refused at the uprobe cap"),
	CNT("cuda_probes.libraries_mapped", cuda.lib_events, "xsprof_cuda_libraries_mapped_total",
	    NULL, "CUDA libraries mapped by profiled processes, probed.",
	    "CUDA probes:", "%llu libraries mapped"),
	CNT("cuda_probes.library_loads_lost", cuda.bpf.lib_map_drop,
	    "xsprof_cuda_process_events_lost_total", "what=\"library\"",
	    "CUDA library loads and execs not reported (ring buffer full), by what.",
	    "CUDA probes:", "%llu library loads lost"),
	CNT("cuda_probes.executables_probed", cuda.execs, "xsprof_cuda_executables_probed_total",
	    NULL, "Executables exec'd by profiled processes, probed.",
	    "CUDA probes:", "%llu executables exec'd"),
	CNT("cuda_probes.execs_lost", cuda.bpf.exec_drop, "xsprof_cuda_process_events_lost_total",
	    "what=\"exec\"", NULL, "CUDA probes:", "%llu execs lost"),
	CNT("cuda_probes.processes_stopped", cuda.stopped, "xsprof_cuda_processes_stopped_total",
	    NULL, "Stops of a profiled process until xsprofd probed it.",
	    "CUDA probes:", "%llu stops of a process for the daemon"),
	CNT("cuda_probes.children_followed", cuda.bpf.forks_followed, "xsprof_cuda_children_total",
	    "outcome=\"followed\"",
	    "Children of profiled processes, by outcome (not followed: the pid filter is full).",
	    "CUDA probes:", "%llu children followed"),
	CNT("cuda_probes.children_not_followed", cuda.bpf.fork_drop, "xsprof_cuda_children_total",
	    "outcome=\"not_followed\"", NULL, "CUDA probes:", "%llu not followed"),
	CNT("cuda_probes.uprobes_trimmed", cuda.uprobes_trimmed,
	    "xsprof_cuda_uprobes_trimmed_total", NULL,
	    "Launch uprobes removed where xsprof:launch fired.",
	    "CUDA probes:", "%llu launch uprobes removed"),
	GAU("cuda_probes.launch_site_call", cuda.usdt_site_call, "xsprof_cuda_launch_sites",
	    "as=\"call\"", "Processes by how their xsprof:launch site was last seen.",
	    "CUDA: xsprof:launch sites:", "%llu on the kernel's optimised call"),
	GAU("cuda_probes.launch_site_trap", cuda.usdt_site_trap, "xsprof_cuda_launch_sites",
	    "as=\"trap\"", NULL, "CUDA: xsprof:launch sites:", "%llu trapped"),
	GAU("cuda_probes.launch_site_unprobed", cuda.usdt_site_nop, "xsprof_cuda_launch_sites",
	    "as=\"not_probed\"", NULL, "CUDA: xsprof:launch sites:", "%llu not probed yet"),
	GAU("cuda_probes.launch_site_unread", cuda.usdt_site_unread, "xsprof_cuda_launch_sites",
	    "as=\"unread\"", NULL, "CUDA: xsprof:launch sites:", "%llu gone before it was read"),
	GAU("cuda_probes.launch_site_trap_nop5", cuda.usdt_site_trap_nop5,
	    "xsprof_cuda_launch_sites_trapped_on_nop5", NULL,
	    "Of the trapped sites, those on a 5-byte nop (the kernel does not optimise uprobes).",
	    "CUDA: xsprof:launch sites:", "%llu trapped on a 5-byte nop"),
	GAU("cuda_probes.launch_inner_frames_max", cuda.usdt_inner_max,
	    "xsprof_cuda_launch_inner_frames_max", NULL,
	    "Most frames of the CUDA libraries above the application's call in an xsprof:launch "
	    "stack.",
	    "CUDA:", "xsprof:launch fired under %llu frames of the CUDA libraries at most"),
	CNT("cuda_probes.launch_inner_deep", cuda.usdt_inner_deep,
	    "xsprof_cuda_launch_inner_deep_total", NULL,
	    "xsprof:launch stacks with too many CUDA library frames to check a reuse whole.",
	    "CUDA:", "%llu xsprof:launch stacks too deep to check whole"),
	CNT("cuda_probes.scope_ranges", cuda.scopes.ranges, "xsprof_cuda_scope_ranges_total", NULL,
	    "xsprof scopes paired into ranges.", "xsprof scopes:", "%llu ranges"),
	CNT("cuda_probes.scope_ended_at_exit", cuda.scopes.ended_at_exit,
	    "xsprof_cuda_scopes_ended_early_total", "at=\"exit\"",
	    "xsprof scopes still open that ended at their process's exit or the recording's end.",
	    "xsprof scopes:", "%llu ended at their process's exit"),
	CNT("cuda_probes.scope_ended_at_end", cuda.scopes.ended_at_end,
	    "xsprof_cuda_scopes_ended_early_total", "at=\"end\"", NULL,
	    "xsprof scopes:", "%llu at the recording's end"),
	CNT("cuda_probes.scope_unpaired_ends", cuda.scopes.unpaired_ends,
	    "xsprof_cuda_scopes_refused_total", "cause=\"unpaired_end\"",
	    "xsprof scope ends and begins not kept, by cause.",
	    "xsprof scopes:", "%llu ends without their begin"),
	CNT_GET("cuda_probes.scope_capped", get_cuda_scope_capped,
		"xsprof_cuda_scopes_refused_total", "cause=\"capped\"", NULL,
		"xsprof scopes:", "%llu past the caps"),
	CNT("cuda_probes.scope_names_unread", cuda.scopes.names_unread,
	    "xsprof_cuda_scopes_refused_total", "cause=\"name_unread\"", NULL,
	    "xsprof scopes:", "%llu names unreadable"),
	CNT("cuda_probes.scope_lost", cuda.bpf.scope_drop, "xsprof_cuda_scopes_refused_total",
	    "cause=\"lost\"", NULL, "xsprof scopes:", "%llu probe firings lost"),

	/* --mode offcpu, wall: the time threads spent off the CPU. */
	CNT("offcpu.switches", offcpu.switches, "xsprof_offcpu_switches_total", NULL,
	    "Switches of watched threads.", "off-CPU counters:", "%llu switches"),
	CNT("offcpu.blocks", offcpu.blocks, "xsprof_offcpu_blocks_total", NULL,
	    "Stretches off the CPU, the short ones included.",
	    "off-CPU counters:", "%llu stretches"),
	CNT("offcpu.below_min", offcpu.below_min, "xsprof_offcpu_blocks_short_total", NULL,
	    "Stretches shorter than --min-block-us (left out).",
	    "off-CPU counters:", "%llu shorter than --min-block-us"),
	{.path = "offcpu.ns",
	 .off = AT(offcpu.ns),
	 .metric = "xsprof_offcpu_seconds_total",
	 .type = COUNTERS_COUNTER,
	 .scale = 1e-9,
	 .help = "Time off the CPU read.",
	 .line = "off-CPU counters:",
	 .words = "%llu ns off the CPU"},
	CNT("offcpu.new_stacks", offcpu.new_stacks, "xsprof_offcpu_new_stacks_total", NULL,
	    "New off-CPU stacks sent.", "off-CPU counters:", "%llu new stacks"),
	GAU("offcpu.keys", offcpu.keys, "xsprof_offcpu_stacks", NULL,
	    "Off-CPU stacks read at the end.", "off-CPU counters:", "%llu distinct stacks"),
	CNT("offcpu.stack_table_full", offcpu.agg_full, "xsprof_offcpu_lost_total",
	    "cause=\"stack_table_full\"", "Off-CPU stretches, stacks and switches lost, by cause.",
	    "off-CPU counters:", "%llu stretches lost (stack table full)"),
	CNT("offcpu.lost_ring_buffer_full", offcpu.drop_ringbuf, "xsprof_offcpu_lost_total",
	    "cause=\"ring_buffer_full\"", NULL,
	    "off-CPU counters:", "%llu new stacks lost (ring buffer full)"),
	CNT("offcpu.switch_outs_untimed", offcpu.start_full, "xsprof_offcpu_lost_total",
	    "cause=\"untimed\"", NULL, "off-CPU counters:", "%llu switch-outs not timed"),
	CNT("offcpu.stacks_never_arrived", offcpu.keys_lost,
	    "xsprof_offcpu_stacks_without_frames_total", "cause=\"never_arrived\"",
	    "Off-CPU stacks counted without their frames, by cause.",
	    "off-CPU counters:", "%llu stacks whose frames never arrived"),
	CNT("offcpu.stacks_past_cap", offcpu.pending_full,
	    "xsprof_offcpu_stacks_without_frames_total", "cause=\"cap\"", NULL,
	    "off-CPU counters:", "%llu stacks past --max-stacks"),
	CNT("offcpu.held", offcpu.held, "xsprof_offcpu_held_stacks_total", NULL,
	    "Off-CPU stacks of processes not loaded yet, walked by the unwinder.",
	    "off-CPU counters:", "%llu stacks walked by the unwinder"),
	CNT("offcpu.user_stack_unreadable", offcpu.ustack_err,
	    "xsprof_offcpu_user_stacks_unreadable_total", NULL,
	    "Off-CPU user stacks that could not be read.",
	    "off-CPU counters:", "%llu user stacks unreadable"),
	/* --wakers: who woke each stretch, and the chains they were charged to. */
	CNT("offcpu.wakeups", offcpu.wakeups, "xsprof_offcpu_wakeups_total", NULL,
	    "Watched threads off the CPU woken (--wakers).", "off-CPU wakers:", "%llu wakeups"),
	CNT("offcpu.wakeups_from_interrupts", offcpu.wake_irq,
	    "xsprof_offcpu_wakeups_from_interrupts_total", NULL,
	    "Of them, from an interrupt (a timer, a device): no thread blamed.",
	    "off-CPU wakers:", "%llu from interrupts"),
	CNT("offcpu.waits", offcpu.waits, "xsprof_offcpu_waits_total", NULL,
	    "Woken stretches sent with their waker.", "off-CPU wakers:", "%llu stretches sent"),
	CNT("offcpu.waits_lost", offcpu.wait_lost, "xsprof_offcpu_waits_lost_total",
	    "cause=\"ring_buffer_full\"", "Woken stretches lost, by cause.",
	    "off-CPU wakers:", "%llu lost (ring buffer full)"),
	CNT("offcpu.waits_past_cap", offcpu.waits_dropped, "xsprof_offcpu_waits_lost_total",
	    "cause=\"cap\"", NULL, "off-CPU wakers:", "%llu past the cap"),
	CNT("offcpu.waits_chained", offcpu.waits_chained, "xsprof_offcpu_waits_chained_total", NULL,
	    "Woken stretches charged to the threads that woke them.",
	    "off-CPU wakers:", "%llu charged to their wakers"),
	CNT("offcpu.waits_unchained", offcpu.waits_unchained, "xsprof_offcpu_waits_unchained_total",
	    NULL, "Woken stretches left under their own stack (no thread woke them).",
	    "off-CPU wakers:", "%llu left under their own stack"),
	CNT("offcpu.chain_hops", offcpu.chain_hops, "xsprof_offcpu_chain_hops_total", NULL,
	    "Hops in the chains stretches were charged to.", "off-CPU wakers:", "%llu hops"),
	CNT("offcpu.chain_names_full", offcpu.chain_names_full,
	    "xsprof_offcpu_chain_frames_unnamed_total", NULL,
	    "Waker frames left out of chains: the frame name table is full.",
	    "off-CPU wakers:", "%llu frames left out (name table full)"),
	CNT("offcpu.chains_past_timeline_cap", offcpu.chains_untimed,
	    "xsprof_offcpu_chains_untimed_total", NULL,
	    "Chained stretches the timeline did not keep (its cap): the GPU report does not "
	    "follow them.",
	    "off-CPU wakers:", "%llu chains past the timeline's cap"),
};

const size_t counters_nr_rows = sizeof(counters_rows) / sizeof(counters_rows[0]);

enum counters_part counters__part(const struct counters_row *r)
{
	size_t n = strcspn(r->path, ".");

	for (int p = 0; p < COUNTERS_PARTS; p++)
		if (strlen(counters_part_keys[p]) == n &&
		    !strncmp(r->path, counters_part_keys[p], n))
			return (enum counters_part)p;
	return COUNTERS_PARTS;
}

uint64_t counters__value(const struct counters_row *r, const struct counters_snapshot *s)
{
	uint64_t v;

	if (r->get)
		return r->get(s);
	memcpy(&v, (const char *)s + r->off, sizeof(v));
	return v;
}

static const char *key_of(const struct counters_row *r)
{
	return strchr(r->path, '.') + 1;
}

struct json_object *counters__find(struct json_object *doc, const struct counters_row *r)
{
	struct json_object *part, *v;

	if (!json_object_object_get_ex(doc, counters_part_keys[counters__part(r)], &part) ||
	    !json_object_object_get_ex(part, key_of(r), &v) ||
	    !(json_object_is_type(v, json_type_int) || json_object_is_type(v, json_type_double)))
		return NULL;
	return v;
}

void counters__json(const struct counters_snapshot *s, struct json_object *doc)
{
	struct json_object *parts[COUNTERS_PARTS] = {};

	for (size_t i = 0; i < counters_nr_rows; i++) {
		const struct counters_row *r = &counters_rows[i];
		enum counters_part p = counters__part(r);

		if (!s->has[p])
			continue;
		if (!parts[p] &&
		    !json_object_object_get_ex(doc, counters_part_keys[p], &parts[p])) {
			parts[p] = json_object_new_object();
			json_object_object_add(doc, counters_part_keys[p], parts[p]);
		}
		/* JSON has no unsigned 64-bit integer: an int64 that readers take whole. */
		json_object_object_add(parts[p], key_of(r),
				       json_object_new_int64((int64_t)counters__value(r, s)));
	}
}

/* A family's rows need not be adjacent: each is written under the family's first. */
static bool family_done(size_t i)
{
	for (size_t k = 0; k < i; k++)
		if (counters_rows[k].metric &&
		    !strcmp(counters_rows[k].metric, counters_rows[i].metric))
			return true;
	return false;
}

void counters__write_metrics(FILE *f, struct json_object *doc)
{
	for (size_t i = 0; i < counters_nr_rows; i++) {
		const struct counters_row *r = &counters_rows[i];
		const char *help = r->help;
		bool head = false;

		if (!r->metric || family_done(i))
			continue;
		for (size_t k = i; k < counters_nr_rows; k++) {
			const struct counters_row *m = &counters_rows[k];
			struct json_object *v;

			if (!m->metric || strcmp(m->metric, r->metric))
				continue;
			help = help ? help : m->help;
			if (!(v = counters__find(doc, m)))
				continue;
			if (!head) {
				if (help)
					fprintf(f, "# HELP %s %s\n", r->metric, help);
				fprintf(f, "# TYPE %s %s\n", r->metric,
					r->type == COUNTERS_COUNTER ? "counter" : "gauge");
				head = true;
			}
			fprintf(f, m->labels ? "%s{%s} %.15g\n" : "%s%s %.15g\n", m->metric,
				m->labels ? m->labels : "",
				(double)json_object_get_int64(v) * (m->scale ? m->scale : 1));
		}
	}
}

/* A line's words with the value in place of "%llu". */
static void put_words(FILE *f, const char *words, long long v)
{
	const char *at = strstr(words, "%llu");

	fprintf(f, "%.*s%lld%s", (int)(at - words), words, v, at + 4);
}

static bool line_done(size_t i)
{
	for (size_t k = 0; k < i; k++)
		if (counters_rows[k].line && !strcmp(counters_rows[k].line, counters_rows[i].line))
			return true;
	return false;
}

void counters__print_lines(FILE *f, struct json_object *doc, const char *prefix)
{
	for (size_t i = 0; i < counters_nr_rows; i++) {
		const char *line = counters_rows[i].line;
		size_t n = 0;

		if (!line || line_done(i))
			continue;
		for (size_t k = i; k < counters_nr_rows; k++) {
			const struct counters_row *r = &counters_rows[k];
			struct json_object *v;

			if (!r->line || strcmp(r->line, line) || !(v = counters__find(doc, r)))
				continue;
			if (n++)
				fputs(", ", f);
			else
				fprintf(f, "%s%s ", prefix ? prefix : "", line);
			put_words(f, r->words, (long long)json_object_get_int64(v));
		}
		if (n)
			fputc('\n', f);
	}
}
