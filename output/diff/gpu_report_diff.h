/* SPDX-License-Identifier: Apache-2.0 */
/*
 * GPU reports compared (xsprof-diff BEFORE.gpu.json AFTER.gpu.json): the figures a change can
 * make worse (each device's active, busy and idle time by cause, each kernel's total time, the
 * idle time blamed on each function, inclusive, the GPU memory peak), before against after,
 * each side the
 * median of one or more runs; a figure regressed when it grew past the threshold beyond the
 * runs' own spread, so noise between runs is not a regression.
 */
#ifndef XSPROF_OUTPUT_GPU_REPORT_DIFF_H
#define XSPROF_OUTPUT_GPU_REPORT_DIFF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

struct gpu_report_diff;

/* Growth under these is never a regression, whatever its percentage (a time must also grow by
 * 2% of the longest device's active time before). */
#define GPU_REPORT_DIFF_MIN_NS	  1000000ull /* 1 ms */
#define GPU_REPORT_DIFF_MIN_BYTES (1ull << 20)

/*
 * Read the runs (paths of GPU report JSON files, schema xsprof.gpu_report version 1) of each
 * side. NULL with a message on err (a file that cannot be read, is not a GPU report, or has
 * another version).
 */
struct gpu_report_diff *gpu_report_diff__new(const char *const *before, size_t nb,
					     const char *const *after, size_t na, FILE *err);
void gpu_report_diff__free(struct gpu_report_diff *d);

/*
 * The table: the top figures by change (0: all), marking those that grew more than
 * threshold_pct percent (negative: none). Returns how many regressed, or -errno.
 */
int gpu_report_diff__write(const struct gpu_report_diff *d, FILE *f, size_t top,
			   double threshold_pct);

/* Whether a path names a GPU report (".gpu.json", or a comma list of them). */
bool gpu_report_diff__is_report(const char *path);

#endif
