// SPDX-License-Identifier: Apache-2.0
/*
 * xsprofd's command line and config file (daemon/options.c): defaults by mode, flags over the
 * file, bad values and lines refused with the exit status 2, a reload that keeps the running
 * settings when the file is wrong.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon/options.h"

/* xsprofd_opts__parse over a NULL-terminated list of arguments. */
#define PARSE(o, ...)                                                                         \
	({                                                                                    \
		char *argv_[] = {"xsprofd", __VA_ARGS__, NULL};                               \
		xsprofd_opts__parse((o), (int)(sizeof(argv_) / sizeof(argv_[0])) - 1, argv_); \
	})

static char cfg[] = "/tmp/xsprof-test-config-XXXXXX";

static void write_config(const char *text)
{
	FILE *f;

	if (cfg[sizeof(cfg) - 2] == 'X') {
		int fd = mkstemp(cfg);

		cr_assert_geq(fd, 0);
		close(fd);
	}
	f = fopen(cfg, "we");
	cr_assert_not_null(f);
	fputs(text, f);
	fclose(f);
}

static void cleanup(void)
{
	if (cfg[sizeof(cfg) - 2] != 'X')
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
	cr_expect_eq(o.mode, XSPROFD_MODE_CPU);
	xsprofd_opts__free(&o);
}

Test(options, wall_mode_samples_faster_unless_told, .fini = cleanup)
{
	struct xsprofd_opts o;

	write_config("");
	cr_assert_eq(PARSE(&o, "-c", cfg, "-f", "-d", "1", "--mode", "wall", "-o", "w.folded"), 0);
	cr_expect_eq(o.mode, XSPROFD_MODE_WALL);
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
	int m = -1;

	cr_expect_eq(xsprofd_mode__from_name("offcpu", &m), 0);
	cr_expect_eq(m, XSPROFD_MODE_OFFCPU);
	cr_expect_str_eq(xsprofd_mode__name(XSPROFD_MODE_WALL), "wall");
	cr_expect_eq(xsprofd_mode__from_name("Wall ", &m), -EINVAL);
}
