// SPDX-License-Identifier: Apache-2.0
/* The checks across xsprofd's flags once all are read: what goes with what, by mode, and each
 * output's format. */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "daemon/options.h"
#include "daemon/options_internal.h"
#include "output/output.h"

static int gpu_finish(struct xsprofd_opts *o)
{
	enum output_format fmt;

	if (o->nr_command && !o->foreground)
		return opts__bad("--", o->command[0],
				 "running a command needs --foreground (one-shot mode)");
	if (o->launch_output && !o->foreground)
		return opts__bad("--launches-output", o->launch_output, "only with --foreground");
	if (o->correlate_check && (!o->foreground || o->no_cuda))
		return opts__bad("--correlate-check", "",
				 o->no_cuda ? "conflicts with --no-cuda"
					    : "only with --foreground");
	/* A call tree of launches: no timeline for a Chrome trace, pprof or the GPU timeline. */
	if (o->launch_output && strcmp(o->launch_output, "-") &&
	    (output__format_from_path(o->launch_output, &fmt) ||
	     output__format_needs_timeline(fmt)))
		return opts__bad("--launches-output", o->launch_output,
				 "the launches are a call tree: name it .folded, .txt or .svg");
	if (o->no_cuda && (o->launch_output || o->nr_cuda_libs))
		return opts__bad("--no-cuda", "",
				 o->launch_output ? "conflicts with --launches-output"
						  : "conflicts with --cuda-lib");
	return 0;
}

/* The first one-shot-only flag set (mode, report, filters), with its value; NULL if none. */
static const char *oneshot_only_flag(const struct xsprofd_opts *o, const char **ret_arg)
{
	*ret_arg = "";
	if (o->mode != SESSION_MODE_CPU) {
		*ret_arg = session_mode__name(o->mode);
		return "--mode";
	}
	if (o->report || o->report_gpu || o->report_job) {
		*ret_arg = o->report_gpu ? "gpu" : o->report_job ? "job" : "";
		return "--report";
	}
	if (o->nr_tids)
		return "--tid";
	if (o->wakers)
		return "--wakers";
	if (o->group_by)
		return "--group-by";
	if (o->range_domain) {
		*ret_arg = o->range_domain;
		return "--range-domain";
	}
	if (o->job || o->rank) {
		*ret_arg = o->job ? o->job : o->rank;
		return o->job ? "--job" : "--rank";
	}
	*ret_arg = o->comm ? o->comm : o->cgroup ? o->cgroup : o->unit;
	return o->comm ? "--comm" : o->cgroup ? "--cgroup" : o->unit ? "--unit" : NULL;
}

/* Checks across flags, once everything is read. */
int opts_check__finish(struct xsprofd_opts *o, const char *force_format)
{
	const char *flag, *arg;
	enum output_format fmt;
	int err;

	if (!o->freq_set)
		o->freq_hz = !o->foreground		    ? XSPROFD_SERVICE_FREQ
			     : o->mode == SESSION_MODE_WALL ? XSPROFD_WALL_FREQ
							    : XSPROFD_ONESHOT_FREQ;
	err = gpu_finish(o); /* GPU path (cuda_probes) */
	if (err)
		return err;
	if (!o->min_block_us)
		o->min_block_us = 10;
	if (!o->foreground && (flag = oneshot_only_flag(o, &arg)))
		return opts__bad(flag, arg, "only with --foreground");
	if (o->foreground && o->flight_flag)
		return opts__bad(
			o->flight_flag, o->flight_arg,
			"only as a service: the flight recorder, its triggers and dumps keep the "
			"service's recent past; a one-shot run writes its files (-o)");
	if (o->foreground && o->nr_exports)
		return opts__bad(
			"--export", o->exports[0],
			"the service exports its window slices; a one-shot run writes files "
			"(-o FILE.otlp.pb)");
	if (!o->foreground) {
		if (o->nr_outputs || o->duration_s > 0)
			return opts__bad(
				o->nr_outputs ? "--output" : "--duration",
				o->nr_outputs ? o->outputs[0].path : "...",
				"only with --foreground; the service writes profiles when asked "
				"(xsprofctl record / flamegraph)");
		if (o->listen_addr && !o->token_file)
			return opts__bad("--listen", o->listen_addr,
					 "needs --token-file: the TCP API always requires a token");
		if (!o->tls_cert != !o->tls_key)
			return opts__bad(o->tls_cert ? "--tls-cert" : "--tls-key",
					 o->tls_cert ? o->tls_cert : o->tls_key,
					 "give both --tls-cert and --tls-key");
		if (o->tls_client_ca && !o->tls_cert)
			return opts__bad("--tls-client-ca", o->tls_client_ca,
					 "needs --tls-cert and --tls-key");
		if (o->window_group_by && o->no_cuda)
			return opts__bad(
				"--window-group-by", session_group__name(o->window_group_by),
				"needs the CUPTI socket the NVTX ranges come on (and the CUDA "
				"probes for scopes): not with --no-cuda");
		return 0;
	}
	/* The ranges come as NVTX records over the CUPTI socket, and are matched sample by sample. */
	if (o->wakers && o->mode == SESSION_MODE_CPU)
		return opts__bad("--wakers", "",
				 "charges off-CPU time to who woke it: use it with --mode offcpu "
				 "or wall");
	if (session_group__is_range(o->group_by) && o->mode != SESSION_MODE_CPU)
		return opts__bad("--group-by", session_group__name(o->group_by),
				 "works with --mode cpu (samples)");
	if (o->range_domain && !session_group__is_range(o->group_by))
		return opts__bad("--range-domain", o->range_domain,
				 "only with --group-by range or outer-range");
	if (session_group__is_range(o->group_by) && o->no_cuda)
		return opts__bad(
			"--group-by", session_group__name(o->group_by),
			"needs the CUPTI socket the NVTX ranges come on: not with --no-cuda");
	if (o->report_job && o->no_cuda)
		return opts__bad("--report", "job", "needs the GPU records: not with --no-cuda");
	if (o->report_gpu && o->no_cuda)
		return opts__bad("--report", "gpu",
				 "needs the GPU records of the CUPTI socket: not with --no-cuda");
	/* GPU path: --launches-output alone; --report alone prints and writes nothing */
	if (!o->nr_outputs && !o->launch_output && !o->report && !o->report_gpu && !o->report_job) {
		fprintf(stderr,
			"xsprofd: --foreground needs --output FILE (.folded or .svg; '-' for "
			"folded stacks on stdout)\n");
		return 2;
	}
	for (int i = 0; i < o->nr_outputs; i++) {
		struct xsprofd_output *out = &o->outputs[i];

		if (force_format)
			err = output__format_from_name(force_format, &fmt);
		else if (!strcmp(out->path, "-"))
			err = output__format_from_name("folded", &fmt);
		else
			err = output__format_from_path(out->path, &fmt);
		if (err) {
			char list[256], msg[400];

			snprintf(msg, sizeof(msg),
				 "cannot tell the format from the extension; name it %s, or pass "
				 "--format",
				 output__format_list(OUTPUT_IN_ONESHOT, true, list, sizeof(list)));
			return opts__bad("--output", out->path, msg);
		}
		if (!strcmp(out->path, "-") && fmt != OUTPUT_FOLDED)
			return opts__bad("--output", out->path, "only folded stacks go to stdout");
		out->format = fmt;
	}
	return 0;
}
