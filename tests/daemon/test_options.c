// SPDX-License-Identifier: Apache-2.0
/*
 * xsprofd's command line and config file (daemon/options.c): defaults by mode, flags over the
 * file, bad values and lines refused with the exit status 2, a reload that keeps the running
 * settings when the file is wrong.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bpf/xsprof_events.h"
#include "daemon/options.h"
#include "output/model/profile.h"

/* xsprofd_opts__parse over a NULL-terminated list of arguments. */
#define PARSE(o, ...)                                                                         \
	({                                                                                    \
		char *argv_[] = {"xsprofd", __VA_ARGS__, NULL};                               \
		xsprofd_opts__parse((o), (int)(sizeof(argv_) / sizeof(argv_[0])) - 1, argv_); \
	})

static char cfg[] = "/tmp/xsprof-test-config-XXXXXX";
/* Whether mkstemp named cfg: its name may end in an X itself (one in 62), so not read from it. */
static bool cfg_made;

static void write_config(const char *text)
{
	FILE *f;

	if (!cfg_made) {
		int fd = mkstemp(cfg);

		cr_assert_geq(fd, 0, "mkstemp: %s", strerror(errno));
		close(fd);
		cfg_made = true;
	}
	f = fopen(cfg, "we");
	cr_assert_not_null(f);
	fputs(text, f);
	fclose(f);
}

static void cleanup(void)
{
	if (cfg_made)
		unlink(cfg);
}

Test(options, one_shot_defaults, .fini = cleanup)
{
	struct xsprofd_opts o;

	write_config("");
	cr_assert_eq(PARSE(&o, "-c", cfg, "--foreground", "--duration", "2", "-o", "x.folded"), 0);
	cr_expect(o.foreground);
	cr_expect_float_eq(o.duration_s, 2.0, 1e-9);
	cr_expect_eq(o.nr_outputs, 1);
	cr_expect_str_eq(o.outputs[0].path, "x.folded");
	cr_expect_eq(o.freq_hz, XSPROFD_ONESHOT_FREQ);
	cr_expect_eq(o.mode, SESSION_MODE_CPU);
	xsprofd_opts__free(&o);
}

Test(options, wall_mode_samples_faster_unless_told, .fini = cleanup)
{
	struct xsprofd_opts o;

	write_config("");
	cr_assert_eq(PARSE(&o, "-c", cfg, "-f", "-d", "1", "--mode", "wall", "-o", "w.folded"), 0);
	cr_expect_eq(o.mode, SESSION_MODE_WALL);
	cr_expect_eq(o.freq_hz, XSPROFD_WALL_FREQ);
	xsprofd_opts__free(&o);
	cr_assert_eq(PARSE(&o, "-c", cfg, "-f", "-d", "1", "--mode", "wall", "-F", "49", "-o",
			   "w.folded"),
		     0);
	cr_expect_eq(o.freq_hz, 49);
	xsprofd_opts__free(&o);
}

Test(options, the_service_reads_its_config_and_flags_win, .fini = cleanup)
{
	struct xsprofd_opts o;

	write_config("# the service\nfreq = 49\nwindow = 120 # two minutes\nstore-mb = 16\n"
		     "no-python = yes\nsocket-group = wheel\n");
	cr_assert_eq(PARSE(&o, "-c", cfg, "--window", "60"), 0);
	cr_expect(!o.foreground);
	cr_expect_eq(o.freq_hz, 49);
	cr_expect_eq(o.window_s, 60, "the flag wins over the file: %u", o.window_s);
	cr_expect_eq(o.store_mb, 16);
	cr_expect(o.no_python);
	cr_expect_str_eq(o.socket_group, "wheel");
	xsprofd_opts__free(&o);
}

/* --max-cpu: a percent of the whole machine, from the file or a flag (which wins); off unless
 * given; 0, over 100 and junk are usage errors. */
Test(options, max_cpu_is_a_percent_of_the_machine, .fini = cleanup)
{
	struct xsprofd_opts o;

	write_config("max-cpu = 0.5\n");
	cr_assert_eq(PARSE(&o, "-c", cfg), 0);
	cr_expect_float_eq(o.max_cpu_pct, 0.5, 1e-9);
	xsprofd_opts__free(&o);
	cr_assert_eq(PARSE(&o, "-c", cfg, "--max-cpu", "2"), 0);
	cr_expect_float_eq(o.max_cpu_pct, 2.0, 1e-9, "the flag wins over the file");
	xsprofd_opts__free(&o);
	write_config("");
	cr_assert_eq(PARSE(&o, "-c", cfg, "-f", "-o", "x.folded"), 0);
	cr_expect_eq(o.max_cpu_pct, 0, "no ceiling unless asked");
	xsprofd_opts__free(&o);
	cr_expect_eq(PARSE(&o, "-c", cfg, "-f", "--max-cpu", "0", "-o", "x.folded"), 2);
	cr_expect_eq(PARSE(&o, "-c", cfg, "-f", "--max-cpu", "101", "-o", "x.folded"), 2);
	cr_expect_eq(PARSE(&o, "-c", cfg, "-f", "--max-cpu", "1%", "-o", "x.folded"), 2);
	cr_expect_eq(PARSE(&o, "-c", cfg, "-f", "--max-cpu", "nan", "-o", "x.folded"), 2);
}

Test(options, bad_values_are_usage_errors, .fini = cleanup)
{
	struct xsprofd_opts o;

	write_config("");
	cr_expect_eq(PARSE(&o, "-c", cfg, "-f", "-F", "0", "-o", "x.folded"), 2);
	cr_expect_eq(PARSE(&o, "-c", cfg, "-f", "-F", "nan", "-o", "x.folded"), 2);
	cr_expect_eq(PARSE(&o, "-c", cfg, "-f", "--duration", "-1", "-o", "x.folded"), 2);
	cr_expect_eq(PARSE(&o, "-c", cfg, "-f", "--mode", "sideways", "-o", "x.folded"), 2);
	cr_expect_eq(PARSE(&o, "-c", cfg, "--no-such-flag"), 2);
	cr_expect_eq(PARSE(&o, "-c", "/nonexistent/xsprofd.conf"), 2, "a named config must exist");
}

Test(options, bad_config_lines_are_refused, .fini = cleanup)
{
	struct xsprofd_opts o;

	write_config("freq = 49\nthis line has no equals sign\n");
	cr_expect_eq(PARSE(&o, "-c", cfg), 2);
	xsprofd_opts__free(&o); /* the strings of the lines read before */
	write_config("no-such-key = 1\n");
	cr_expect_eq(PARSE(&o, "-c", cfg), 2);
	write_config("no-python = perhaps\n");
	cr_expect_eq(PARSE(&o, "-c", cfg), 2);
	write_config("foreground = yes\n");
	cr_expect_eq(PARSE(&o, "-c", cfg), 2, "one-shot flags are not config keys");
}

Test(options, a_reload_with_a_bad_file_keeps_the_running_settings, .fini = cleanup)
{
	char *argv[] = {"xsprofd", "-c", cfg, NULL};
	struct xsprofd_opts o;

	write_config("freq = 49\nwindow = 120\n");
	cr_assert_eq(xsprofd_opts__parse(&o, 3, argv), 0);
	write_config("freq = 29\nwindow = 240\n");
	cr_assert_eq(xsprofd_opts__reload(&o, 3, argv), 0);
	cr_expect_eq(o.freq_hz, 29);
	cr_expect_eq(o.window_s, 240);
	write_config("freq = 0\n");
	cr_expect_eq(xsprofd_opts__reload(&o, 3, argv), 2);
	cr_expect_eq(o.freq_hz, 29, "a refused reload changed the frequency to %u", o.freq_hz);
	cr_expect_eq(o.window_s, 240);
	xsprofd_opts__free(&o);
}

Test(options, modes_by_name)
{
	enum session_mode m = SESSION_MODE_CPU;

	cr_expect_eq(session_mode__from_name("offcpu", &m), 0);
	cr_expect_eq(m, SESSION_MODE_OFFCPU);
	cr_expect_str_eq(session_mode__name(SESSION_MODE_WALL), "wall");
	cr_expect_eq(session_mode__from_name("Wall ", &m), -EINVAL);
	cr_expect_eq(m, SESSION_MODE_OFFCPU);
}

Test(options, groups_by_name)
{
	enum session_group g = SESSION_GROUP_NONE;

	cr_expect_eq(session_group__from_name("outer-range", &g), 0);
	cr_expect_eq(g, SESSION_GROUP_OUTER_RANGE);
	cr_expect(session_group__is_range(g));
	cr_expect_str_eq(session_group__name(SESSION_GROUP_CONTAINER), "container");
	/* No group is not a name a user may give. */
	cr_expect_eq(session_group__from_name("", &g), -EINVAL);
	cr_expect_eq(session_group__from_name("Unit", &g), -EINVAL);
	cr_expect_eq(g, SESSION_GROUP_OUTER_RANGE);
}

Test(options, the_window_groups_by_range_when_asked, .fini = cleanup)
{
	struct xsprofd_opts o;

	write_config("window-group-by = outer-range\n");
	cr_assert_eq(PARSE(&o, "-c", cfg), 0);
	cr_expect_eq(o.window_group_by, SESSION_GROUP_OUTER_RANGE, "the config key");
	xsprofd_opts__free(&o);
	write_config("");
	cr_assert_eq(PARSE(&o, "-c", cfg, "--window-group-by", "range"), 0);
	cr_expect_eq(o.window_group_by, SESSION_GROUP_RANGE);
	xsprofd_opts__free(&o);
	cr_assert_eq(PARSE(&o, "-c", cfg), 0);
	cr_expect_eq(o.window_group_by, SESSION_GROUP_NONE, "off by default");
	xsprofd_opts__free(&o);
	/* The window keeps names by process only: unit, container and comm are a recording's. */
	cr_expect_eq(PARSE(&o, "-c", cfg, "--window-group-by", "unit"), 2);
	cr_expect_eq(PARSE(&o, "-c", cfg, "--window-group-by", "range", "--no-cuda"), 2,
		     "the NVTX ranges come on the CUPTI socket");
}

/* ---- the config file, key by key ---- */

static char said[4096]; /* what the last parse_said() wrote on stderr */

/* xsprofd_opts__parse (or __reload) with its stderr kept in said. */
static int parse_said(struct xsprofd_opts *o, int argc, char **argv, bool reload)
{
	FILE *tmp = tmpfile();
	int saved, rc;
	size_t n;

	cr_assert_not_null(tmp);
	fflush(stderr);
	saved = dup(STDERR_FILENO);
	cr_assert_geq(saved, 0);
	cr_assert_geq(dup2(fileno(tmp), STDERR_FILENO), 0);
	rc = reload ? xsprofd_opts__reload(o, argc, argv) : xsprofd_opts__parse(o, argc, argv);
	fflush(stderr);
	dup2(saved, STDERR_FILENO);
	close(saved);
	rewind(tmp);
	n = fread(said, 1, sizeof(said) - 1, tmp);
	said[n] = '\0';
	fclose(tmp);
	return rc;
}

#define PARSE_SAID(o, ...)                                                                  \
	({                                                                                  \
		char *argv_[] = {"xsprofd", __VA_ARGS__, NULL};                             \
		parse_said((o), (int)(sizeof(argv_) / sizeof(argv_[0])) - 1, argv_, false); \
	})

Test(config, every_kind_of_value_with_comments_and_blank_lines, .fini = cleanup)
{
	struct xsprofd_opts o;

	write_config("# xsprofd.conf\n"
		     "\n"
		     "freq=49\n"
		     "   window   =   120     # spaces, tabs and a comment around it\n"
		     "\tstore-mb\t=\t16\t\n"
		     "max-record = 600\n"
		     "window-range-wait = 45\n"
		     "max-stacks = 5000\n"
		     "ring-buffer-size = 8\n"
		     "symbol-cache-mb = 32\n"
		     "unwind-mb = 128\n"
		     "unwind = fp\n"
		     "pid = 10,20\n"
		     "pid = 30\n"
		     "socket = /run/test/x.sock\n"
		     "cupti-socket = /run/test/cupti.sock\n"
		     "socket-group = wheel\n"
		     "listen = 127.0.0.1:7717\n"
		     "token-file = /etc/xsprof/token\n"
		     "tls-cert = /etc/xsprof/cert.pem\n"
		     "tls-key = /etc/xsprof/key.pem\n"
		     "tls-client-ca = /etc/xsprof/ca.pem\n"
		     "debug-dir = /usr/lib/debug\n"
		     "debug-dir = /opt/debug\n"
		     "cuda-lib = /usr/lib/libcudart.so.13\n"
		     "correlate = stream\n"
		     "gpu-mode = merged\n"
		     "weight = us\n"
		     "# yes/no keys: yes, true, on, 1 and no, false, off, 0, any case\n"
		     "include-idle = yes\n"
		     "no-children = TRUE\n"
		     "no-demangle = On\n"
		     "listen-allow-writes = 1\n"
		     "debuginfod = Yes\n"
		     "debug-info = true\n"
		     "verbose = on\n"
		     "no-python = no\n"
		     "no-cuda = FALSE\n"
		     "\n"
		     "# the end\n");
	cr_assert_eq(PARSE_SAID(&o, "-c", cfg), 0, "%s", said);
	cr_expect_str_eq(said, "");
	cr_expect_eq(o.freq_hz, 49);
	cr_expect(o.freq_set);
	cr_expect_eq(o.window_s, 120);
	cr_expect_eq(o.store_mb, 16);
	cr_expect_eq(o.max_record_s, 600);
	cr_expect_eq(o.window_range_wait_s, 45);
	cr_expect_eq(o.max_stacks, 5000);
	cr_expect_eq(o.ring_buffer_bytes, 8u << 20);
	cr_expect_eq(o.symbol_cache_mb, 32);
	cr_expect_eq(o.unwind_mb, 128);
	cr_expect_eq(o.unwind, XSPROF_UNWIND_FP);
	cr_assert_eq(o.nr_pids, 3, "a list key repeated adds to the list");
	cr_expect_eq(o.pids[0], 10);
	cr_expect_eq(o.pids[2], 30);
	cr_expect_str_eq(o.socket_path, "/run/test/x.sock");
	cr_expect_str_eq(o.cupti_socket, "/run/test/cupti.sock");
	cr_expect_str_eq(o.socket_group, "wheel");
	cr_expect_str_eq(o.listen_addr, "127.0.0.1:7717");
	cr_expect_str_eq(o.token_file, "/etc/xsprof/token");
	cr_expect_str_eq(o.tls_cert, "/etc/xsprof/cert.pem");
	cr_expect_str_eq(o.tls_key, "/etc/xsprof/key.pem");
	cr_expect_str_eq(o.tls_client_ca, "/etc/xsprof/ca.pem");
	cr_assert_eq(o.nr_debug_dirs, 2);
	cr_expect_str_eq(o.debug_dirs[1], "/opt/debug");
	cr_assert_eq(o.nr_cuda_libs, 1);
	cr_expect_str_eq(o.cuda_libs[0], "/usr/lib/libcudart.so.13");
	cr_expect_str_eq(o.correlate, "stream");
	cr_expect(o.gpu_mode_set);
	cr_expect_eq(o.gpu_mode, GPU_MODE_MERGED);
	cr_expect_eq(o.weight, WEIGHT_US);
	cr_expect(o.include_idle && o.no_children && o.no_demangle && o.listen_allow_writes);
	cr_expect(o.debuginfod && o.debug_info);
	cr_expect_eq(o.verbose, 1);
	cr_expect(!o.no_python && !o.no_cuda, "'no' leaves a yes/no key off");
	cr_expect_str_eq(o.config_path, cfg);
	xsprofd_opts__free(&o);
}

Test(config, flags_win_over_the_file, .fini = cleanup)
{
	struct xsprofd_opts o;

	write_config("freq = 49\nwindow = 120\nsocket-group = wheel\nunwind = fp\n"
		     "correlate = stream\n");
	cr_assert_eq(PARSE(&o, "-c", cfg, "-F", "7", "--socket-group", "adm", "--unwind=cfi",
			   "--correlate", "id"),
		     0);
	cr_expect_eq(o.freq_hz, 7);
	cr_expect_str_eq(o.socket_group, "adm");
	cr_expect_eq(o.unwind, XSPROF_UNWIND_CFI);
	cr_expect_str_eq(o.correlate, "id");
	cr_expect_eq(o.window_s, 120, "what no flag names comes from the file");
	xsprofd_opts__free(&o);
}

/* The file refused, with its path, the line number, the key and what is wrong. */
static void expect_refused(const char *text, int line, const char *key, const char *why)
{
	struct xsprofd_opts o;
	char where[sizeof(cfg) + 32];

	write_config(text);
	cr_expect_eq(PARSE_SAID(&o, "-c", cfg), 2, "accepted:\n%s", text);
	snprintf(where, sizeof(where), "xsprofd: %s:%d: %s:", cfg, line, key);
	cr_expect(!strncmp(said, where, strlen(where)), "expected '%s...', said: %s", where, said);
	cr_expect(strstr(said, why), "expected '%s', said: %s", why, said);
	cr_expect_eq(strchr(said, '\n'), said + strlen(said) - 1, "one line: %s", said);
	xsprofd_opts__free(&o);
}

Test(config, a_bad_line_is_named_by_its_number, .fini = cleanup)
{
	char longline[1200];

	unsetenv("JOURNAL_STREAM");
	expect_refused("# comment\n\nno-such-key = 1\n", 3, "no-such-key '1'", "unknown key");
	expect_refused("freq = 49\nwindow = 5\n", 2, "window '5'",
		       "expected a whole number in 10..604800");
	expect_refused("freq = 49\n\n\n\nfreq = 0\n", 5, "freq '0'", "expected 1..10000");
	expect_refused("include-idle = perhaps\n", 1, "include-idle 'perhaps'", "yes or no");
	expect_refused("ring-buffer-size = 3\n", 1, "ring-buffer-size '3'", "power of two");
	expect_refused("unwind = dwarf\n", 1, "unwind 'dwarf'", "use auto, fp or cfi");
	expect_refused("correlate = telepathy\n", 1, "correlate 'telepathy'",
		       "id, timestamp, stream or auto");
	expect_refused("pid = 1,,2\n", 1, "pid '1,,2'", "an empty item");
	expect_refused("socket = relative.sock\n", 1, "socket 'relative.sock'", "absolute path");
	expect_refused("# one-shot flags are no keys\nduration = 10\n", 2, "duration '10'",
		       "only a command-line flag");
	expect_refused("mode = wall\n", 1, "mode 'wall'", "only a command-line flag");
	expect_refused("config = /etc/other.conf\n", 1, "config '/etc/other.conf'",
		       "only a command-line flag");
	memset(longline, 'x', sizeof(longline) - 2);
	memcpy(longline, "socket-group = ", 15);
	longline[sizeof(longline) - 2] = '\n';
	longline[sizeof(longline) - 1] = '\0';
	expect_refused(longline, 1, "line '...'", "longer than 1023 bytes");
	/* The line quoted on one line: its newline is not part of it. */
	expect_refused("freq = 49\nthis line has no equals sign\n", 2,
		       "line 'this line has no equals sign'", "expected 'key = value'");
}

/* A list key's flag replaces the file's list, as any flag wins over its key. */
Test(config, a_list_flag_wins_over_the_files_list, .fini = cleanup)
{
	struct xsprofd_opts o;

	write_config("pid = 10\ndebug-dir = /opt/debug\ncuda-lib = /opt/libcudart.so\n");
	cr_assert_eq(PARSE(&o, "-c", cfg, "-p", "40", "-p", "41", "--debug-dir", "/srv/debug"), 0);
	cr_expect_eq(o.nr_pids, 2, "the file's pid 10 is profiled too");
	cr_expect_eq(o.pids[0], 40);
	cr_expect_eq(o.pids[1], 41);
	cr_expect_eq(o.nr_debug_dirs, 1);
	cr_expect_str_eq(o.debug_dirs[0], "/srv/debug");
	/* A list the flags do not name stays the file's. */
	cr_expect_eq(o.nr_cuda_libs, 1);
	xsprofd_opts__free(&o);
}

Test(config, under_systemd_a_refused_line_is_logged_as_an_error, .fini = cleanup)
{
	struct xsprofd_opts o;
	char want[sizeof(cfg) + 64];

	/* The journal reads "<3>" as the error priority: a reload's bad file must show as one. */
	setenv("JOURNAL_STREAM", "8:12345", 1);
	write_config("freq = 49\nno-such-key = 1\n");
	cr_expect_eq(PARSE_SAID(&o, "-c", cfg), 2);
	snprintf(want, sizeof(want), "<3>xsprofd: %s:2: no-such-key '1': unknown key", cfg);
	cr_expect(!strncmp(said, want, strlen(want)), "said: %s", said);
	xsprofd_opts__free(&o);
	unsetenv("JOURNAL_STREAM");
}

Test(config, a_reload_reads_the_file_afresh_and_flags_still_win, .fini = cleanup)
{
	char *argv[] = {"xsprofd", "-c", cfg, "--window", "60", NULL};
	struct xsprofd_opts o;

	write_config("freq = 49\nwindow = 120\nsocket-group = wheel\ndebug-dir = /opt/debug\n");
	cr_assert_eq(xsprofd_opts__parse(&o, 5, argv), 0);
	cr_expect_eq(o.window_s, 60);
	write_config("window = 240\nstore-mb = 16\n");
	cr_assert_eq(xsprofd_opts__reload(&o, 5, argv), 0);
	cr_expect_eq(o.window_s, 60, "after a reload the flag still wins: %u", o.window_s);
	cr_expect_eq(o.store_mb, 16);
	/* A key taken out of the file goes back to its default. */
	cr_expect_eq(o.freq_hz, XSPROFD_SERVICE_FREQ);
	cr_expect_str_eq(o.socket_group, "xsprof");
	cr_expect_eq(o.nr_debug_dirs, 0, "the old file's debug-dir is still there");
	write_config("socket-group = adm\n");
	cr_assert_eq(xsprofd_opts__reload(&o, 5, argv), 0);
	cr_expect_str_eq(o.socket_group, "adm");
	/* Refused reloads (the file gone, then a bad line) keep what runs, strings and all. */
	cr_assert_eq(unlink(cfg), 0);
	cr_expect_eq(parse_said(&o, 5, argv, true), 2);
	cr_expect(strstr(said, "cannot read config"), "said: %s", said);
	cr_expect_str_eq(o.socket_group, "adm");
	write_config("socket-group = wheel\nwindow = 1\n");
	cr_expect_eq(parse_said(&o, 5, argv, true), 2);
	cr_expect(strstr(said, ":2: window '1'"), "said: %s", said);
	cr_expect_str_eq(o.socket_group, "adm");
	cr_expect_eq(o.window_s, 60);
	xsprofd_opts__free(&o);
}

/* --job and --rank: one-shot flags, parsed into the filter; bad values name themselves. */
Test(options, job_and_rank)
{
	struct xsprofd_opts o;

	cr_assert_eq(PARSE_SAID(&o, "-f", "-o", "x.folded", "--job", "xsjob", "--rank", "3,0-1"), 0,
		     "%s", said);
	cr_expect_str_eq(o.job_filter.job, "xsjob");
	cr_assert_eq(o.job_filter.nr_ranks, 3);
	cr_expect_eq(o.job_filter.ranks[0], 0);
	cr_expect_eq(o.job_filter.ranks[2], 3);
	xsprofd_opts__free(&o);
	cr_expect_eq(PARSE_SAID(&o, "-f", "-o", "x.folded", "--rank", "0-64"), 2);
	cr_expect(strstr(said, "--rank '0-64': ranks and ranges by commas, like 0,2-3 (at most 64 "
			       "ranks)"),
		  "%s", said);
	cr_expect_eq(PARSE_SAID(&o, "-f", "-o", "x.folded", "--job", ""), 2);
	cr_expect(strstr(said, "--job '': a job id"), "%s", said);
	cr_expect_eq(PARSE_SAID(&o, "--rank", "1"), 2, "the service records no one-shot profile");
	cr_expect(strstr(said, "--rank '1': only with --foreground"), "%s", said);
}

/* The flight recorder's flags are the service's: a one-shot run refuses them by name, the
 * service takes them. */
Test(options, flight_flags_only_as_a_service)
{
	static char flags[][2][24] = {
		{"--flight-mb", "64"}, {"--flight-seconds", "60"}, {"--dump-dir", "/tmp/d"},
		{"--dump-keep", "3"},  {"--dump-keep-mb", "10"},   {"--trigger", "death"},
	};
	struct xsprofd_opts o;

	for (size_t i = 0; i < sizeof(flags) / sizeof(flags[0]); i++) {
		char want[128];

		cr_expect_eq(PARSE_SAID(&o, "-f", "-o", "x.folded", flags[i][0], flags[i][1]), 2,
			     "%s taken by a one-shot run", flags[i][0]);
		snprintf(want, sizeof(want), "%.24s '%.24s': only as a service", flags[i][0],
			 flags[i][1]);
		cr_expect(strstr(said, want), "%s", said);
		cr_expect_eq(PARSE_SAID(&o, flags[i][0], flags[i][1]), 0, "%s", said);
		xsprofd_opts__free(&o);
	}
}
