/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The callgrind format (valgrind's callgrind_annotate, KCachegrind, QCachegrind): functions in
 * their source files with self costs by line, and calls between them with their inclusive
 * costs, from a call tree (output/model/calltree.h). One event for the CPU side (samples, or
 * microseconds of CPU, off-CPU or wall time), and one for GPU time under its launching stacks
 * when the tree has GPU leaves.
 */
#ifndef XSPROF_OUTPUT_CALLGRIND_H
#define XSPROF_OUTPUT_CALLGRIND_H

#include <stdio.h>

struct calltree;
struct output_meta;

/* Frames kept of a stack; a deeper stack's weight stays with its frame at the cut (counted in
 * a comment). */
#define CALLGRIND_MAX_DEPTH 512

/* 0, -ENOMEM or -EIO. */
int callgrind__write(const struct calltree *t, FILE *f, const struct output_meta *meta);

#endif
