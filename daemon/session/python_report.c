// SPDX-License-Identifier: Apache-2.0
#include "bpf/xsprof_events.h"
#include "daemon/log.h"
#include "daemon/python/pyprof.h"
#include "daemon/session/python_report.h"
#include "daemon/session/recording.h"

void python_report__log(const struct recording *recording)
{
	struct xsprof_py_stats b;
	struct pyprof_stats u;

	const char *ag_err = recording__autograd_error(recording);

	if (ag_err)
		log_warn("python: %s", ag_err);
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
	if (u.unsupported)
		log_warn("python: %llu processes keep native stacks only; the latest (pid %d): %s",
			 (unsigned long long)u.unsupported, (int)u.last_reason_pid,
			 u.last_reason ? u.last_reason : "?");
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
