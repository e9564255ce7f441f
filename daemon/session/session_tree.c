// SPDX-License-Identifier: Apache-2.0
#include "daemon/session/recording.h"
#include "daemon/session/session_tree.h"

int session_tree__build(struct recording *recording, struct symbolizer *sym, enum session_mode mode,
			unsigned int freq_hz, fold_root_fn root, void *root_ctx,
			struct calltree *tree, struct fold_stats *ret_fs)
{
	const struct stack_table *off = recording__offcpu_stacks(recording);
	struct fold_stats a = {}, b = {};
	int err = 0;

	if (mode == SESSION_MODE_CPU)
		return fold_stacks_rooted(recording__stacks(recording), sym, tree, 1, root,
					  root_ctx, ret_fs);
	/* Wall: a sample stands for its period, in microseconds. */
	if (mode == SESSION_MODE_WALL)
		err = fold_stacks_rooted(recording__stacks(recording), sym, tree,
					 (1000000 + freq_hz / 2) / (freq_hz ? freq_hz : 1), root,
					 root_ctx, &a);
	if (!err && off)
		err = fold_stacks_rooted(off, sym, tree, 1, root, root_ctx, &b);
	ret_fs->frames = a.frames + b.frames;
	ret_fs->unnamed_frames = a.unnamed_frames + b.unnamed_frames;
	ret_fs->missing_ustacks = a.missing_ustacks + b.missing_ustacks;
	return err;
}
