// SPDX-License-Identifier: Apache-2.0
#include "daemon/session/session_tree.h"
#include "daemon/session/source.h"

int session_tree__build(const struct session_source *src, struct symbolizer *sym,
			enum session_mode mode, unsigned int freq_hz, bool uid_root,
			const struct fold_procs *procs, struct calltree *tree,
			struct fold_stats *ret_fs)
{
	struct fold_stats a = {}, b = {};
	int err = 0;

	if (mode == SESSION_MODE_CPU)
		return src->stacks ? fold_stacks_under(src->stacks, sym, tree, 1, uid_root, procs,
						       ret_fs)
				   : 0;
	/* Wall: a sample stands for its period, in microseconds. */
	if (mode == SESSION_MODE_WALL && src->stacks)
		err = fold_stacks_under(src->stacks, sym, tree,
					(1000000 + freq_hz / 2) / (freq_hz ? freq_hz : 1), uid_root,
					procs, &a);
	if (!err && src->offcpu)
		err = fold_stacks_under(src->offcpu, sym, tree, 1, uid_root, procs, &b);
	ret_fs->frames = a.frames + b.frames;
	ret_fs->unnamed_frames = a.unnamed_frames + b.unnamed_frames;
	ret_fs->missing_ustacks = a.missing_ustacks + b.missing_ustacks;
	ret_fs->weight = a.weight + b.weight;
	for (unsigned int i = 0; i < XSPROF_END_REASONS; i++)
		ret_fs->truncated[i] = a.truncated[i] + b.truncated[i];
	return err;
}
