// SPDX-License-Identifier: Apache-2.0
#include <json-c/json.h>

#include "bpf/xsprof_events.h"
#include "daemon/log.h"
#include "daemon/python/pyprof.h"
#include "daemon/session/python_report.h"
#include "daemon/session/recording.h"

void python_report__log(const struct recording *recording)
{
	struct xsprof_py_stats b;
	struct pyprof_stats u;

	if (recording__python_stats(recording, &b, &u))
		return;
	if (!u.detected && !b.walks)
		return;
	log_info("python: %llu CPython processes found (%llu walked now, %llu not walkable, %llu "
		 "with offsets read from the interpreter); "
		 "%llu stacks walked, %llu interpreter frames; %llu records placed them in the "
		 "native stack, %llu at its root (no interpreter loop frame in the native walk)",
		 (unsigned long long)u.detected, (unsigned long long)u.processes,
		 (unsigned long long)u.unsupported, (unsigned long long)u.debug_offsets,
		 (unsigned long long)b.walks, (unsigned long long)b.frames,
		 (unsigned long long)u.interleaved, (unsigned long long)u.appended);
	log_debug("python walk ends: %llu threads without a thread state, %llu running no Python "
		  "code, %llu unreadable, %llu cut at %d frames; %llu thread list scans; code "
		  "objects: %llu read, %llu unreadable, %llu cache resets (%.1f MiB now)",
		  (unsigned long long)b.no_thread, (unsigned long long)b.no_frame,
		  (unsigned long long)b.unreadable, (unsigned long long)b.truncated,
		  XSPROF_PY_MAX_FRAMES, (unsigned long long)b.thread_scans,
		  (unsigned long long)u.code_reads, (unsigned long long)u.code_unreadable,
		  (unsigned long long)u.code_cache_resets, u.code_bytes / 1048576.0);
	if (u.unsupported)
		log_warn("python: %llu processes keep native stacks only; the latest (pid %d): %s",
			 (unsigned long long)u.unsupported, (int)u.last_reason_pid,
			 u.last_reason ? u.last_reason : "?");
	if (b.nested)
		log_debug("python: %llu stacks kept native only: a sample inside a launch probe on "
			  "the same CPU (their walks would share its scratch space)",
			  (unsigned long long)b.nested);
	if (u.procs_full || u.names_full || u.truncated || u.unknown_process || b.copy_err ||
	    u.bad_records)
		log_warn(
			"python: %llu processes past the cap, %llu frames unnamed (frame name table "
			"full), %llu stacks cut at %d frames, %llu records of unknown processes "
			"kept native, %llu frames lost copying, %llu malformed",
			(unsigned long long)u.procs_full, (unsigned long long)u.names_full,
			(unsigned long long)u.truncated, XSPROF_MAX_STACK_DEPTH,
			(unsigned long long)u.unknown_process, (unsigned long long)b.copy_err,
			(unsigned long long)u.bad_records);
}

static void add_u64(struct json_object *o, const char *key, uint64_t v)
{
	json_object_object_add(o, key, json_object_new_uint64(v));
}

void python_report__json(const struct recording *recording, struct json_object *j)
{
	struct xsprof_py_stats b;
	struct pyprof_stats u;
	struct json_object *o;

	if (recording__python_stats(recording, &b, &u))
		return;
	o = json_object_new_object();
	if (!o)
		return;
	add_u64(o, "processes", u.processes);
	add_u64(o, "detected", u.detected);
	add_u64(o, "unsupported", u.unsupported);
	if (u.last_reason)
		json_object_object_add(o, "unsupported_reason",
				       json_object_new_string(u.last_reason));
	add_u64(o, "procs_full", u.procs_full);
	add_u64(o, "debug_offsets", u.debug_offsets);
	add_u64(o, "walks", b.walks);
	add_u64(o, "frames", b.frames);
	add_u64(o, "no_thread", b.no_thread);
	add_u64(o, "no_frame", b.no_frame);
	add_u64(o, "unreadable", b.unreadable);
	add_u64(o, "truncated", b.truncated + u.truncated);
	add_u64(o, "nested_native_only", b.nested);
	add_u64(o, "interleaved", u.interleaved);
	add_u64(o, "appended", u.appended);
	add_u64(o, "code_reads", u.code_reads);
	add_u64(o, "code_unreadable", u.code_unreadable);
	add_u64(o, "code_cache_resets", u.code_cache_resets);
	add_u64(o, "code_bytes", u.code_bytes);
	add_u64(o, "names_full", u.names_full);
	json_object_object_add(j, "python", o);
}
