// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "output/folded.h"
#include "output/model/calltree.h"

struct folded_ctx {
	FILE *f;
	const char **path; /* names from the root down to the frame being visited */
};

static int write_error(void)
{
	return errno ? -errno : -EIO;
}

static int put_name(FILE *f, const char *name)
{
	const char *p;

	/* Most names need no rewriting: write them in one call. */
	if (!strpbrk(name, ";\n\r"))
		return fputs(name, f) == EOF ? write_error() : 0;
	for (p = name; *p; p++) {
		int c = *p == ';' ? ':' : (*p == '\n' || *p == '\r') ? ' ' : *p;

		if (putc(c, f) == EOF)
			return write_error();
	}
	return 0;
}

static int visit(const struct calltree_frame *fr, void *data)
{
	struct folded_ctx *ctx = data;
	size_t i;
	int err;

	ctx->path[fr->depth] = fr->name;
	if (!fr->self)
		return 0;
	for (i = 0; i <= fr->depth; i++) {
		if (i && putc(';', ctx->f) == EOF)
			return write_error();
		err = put_name(ctx->f, ctx->path[i]);
		if (err)
			return err;
	}
	if (fprintf(ctx->f, " %" PRIu64 "\n", fr->self) < 0)
		return write_error();
	return 0;
}

int folded__write(const struct calltree *t, FILE *f)
{
	struct folded_ctx ctx = {.f = f};
	size_t depth;
	int err;

	if (!t || !f)
		return -EINVAL;
	depth = calltree__max_depth(t);
	if (!depth)
		return 0;
	ctx.path = calloc(depth, sizeof(*ctx.path));
	if (!ctx.path)
		return -ENOMEM;
	errno = 0;
	err = calltree__walk(t, visit, &ctx);
	free(ctx.path);
	return err;
}
