/* SPDX-License-Identifier: Apache-2.0 */
/* Tests: a call tree as the folded writer writes it, in memory (the caller frees it). */
#ifndef XSPROF_TESTS_FOLDED_TEXT_H
#define XSPROF_TESTS_FOLDED_TEXT_H

#include <criterion/criterion.h>
#include <stdio.h>

#include "output/model/calltree.h"
#include "output/folded.h"

static inline char *folded_text(const struct calltree *t)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	cr_assert_not_null(f);
	cr_assert_eq(folded__write(t, f), 0);
	cr_assert_eq(fclose(f), 0);
	return buf;
}

#endif
