/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A session's CPU call tree by what it weighs (--mode, or a recording's "mode"): on-CPU samples
 * (cpu); off-CPU microseconds (offcpu); or both in microseconds (wall), so each thread adds up to
 * its wall time. The one way one-shot runs, recordings and window slices make it.
 */
#ifndef XSPROF_DAEMON_SESSION_SESSION_TREE_H
#define XSPROF_DAEMON_SESSION_SESSION_TREE_H

#include <stdbool.h>

#include "daemon/session/session_mode.h"
#include "daemon/stacks/fold.h"

struct calltree;
struct session_source;
struct symbolizer;

/* src's stacks of the processes procs keeps; under "uid:N" first when uid_root, then procs'
 * root (procs may be NULL, see fold_stacks_under). 0 or -errno. */
int session_tree__build(const struct session_source *src, struct symbolizer *sym,
			enum session_mode mode, unsigned int freq_hz, bool uid_root,
			const struct fold_procs *procs, struct calltree *tree,
			struct fold_stats *ret_fs);

#endif
