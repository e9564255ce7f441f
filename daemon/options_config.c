// SPDX-License-Identifier: Apache-2.0
/* xsprofd's config file (/etc/xsprof/xsprofd.conf): "key = value" lines, each key a long flag
 * without its dashes, read through the same getopt pass as the command line. */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "daemon/options.h"
#include "daemon/options_internal.h"

static bool is_false(const char *v)
{
	return !strcasecmp(v, "no") || !strcasecmp(v, "false") || !strcmp(v, "0") ||
	       !strcasecmp(v, "off");
}

static bool is_true(const char *v)
{
	return !strcasecmp(v, "yes") || !strcasecmp(v, "true") || !strcmp(v, "1") ||
	       !strcasecmp(v, "on");
}

/* "key = value" lines; '#' starts a comment. A missing file is fine unless it was asked for. */
static int load_config(struct xsprofd_opts *o, const char *path, bool required)
{
	char line[1024], where[512], key[128];
	const char *force_format = NULL;
	FILE *f = fopen(path, "re");
	int lineno = 0, err = 0;

	if (!f) {
		if (!required && errno == ENOENT)
			return 0;
		fprintf(stderr, "%sxsprofd: cannot read config %s: %s\n", opts__errp(), path,
			strerror(errno));
		return 2;
	}
	while (!err && fgets(line, sizeof(line), f)) {
		char *p = line, *eq, *k, *v, *e;
		const struct option *opt;
		char *argv[4];

		lineno++;
		snprintf(where, sizeof(where), "%s:%d", path, lineno);
		opts__origin = where;
		if (!strchr(line, '\n') && !feof(f)) {
			err = opts__bad("line", "...", "longer than 1023 bytes");
			break;
		}
		if ((e = strchr(p, '#')))
			*e = '\0';
		while (isspace((unsigned char)*p))
			p++;
		for (e = p + strlen(p); e > p && isspace((unsigned char)e[-1]); e--)
			e[-1] = '\0'; /* the newline too: a message quotes the line on one line */
		if (!*p)
			continue;
		eq = strchr(p, '=');
		if (!eq) {
			err = opts__bad("line", p, "expected 'key = value'");
			break;
		}
		*eq = '\0';
		k = p;
		v = eq + 1;
		for (e = eq; e > k && isspace((unsigned char)e[-1]); e--)
			e[-1] = '\0';
		while (isspace((unsigned char)*v))
			v++;
		for (e = v + strlen(v); e > v && isspace((unsigned char)e[-1]); e--)
			e[-1] = '\0';
		for (opt = opts__long_opts; opt->name && strcmp(opt->name, k); opt++)
			;
		if (!opt->name) {
			err = opts__bad(k, v,
					"unknown key (keys are xsprofd's long flags, see --help)");
			break;
		}
		snprintf(key, sizeof(key), "--%.120s", k);
		argv[0] = "xsprofd";
		argv[1] = key;
		argv[2] = NULL;
		argv[3] = NULL;
		if (opt->has_arg == no_argument) {
			if (is_false(v))
				continue;
			if (!is_true(v)) {
				err = opts__bad(k, v, "expected yes or no");
				break;
			}
			err = opts__apply(o, 2, argv, &force_format);
			continue;
		}
		if (o->nr_owned == XSPROFD_MAX_STRINGS) {
			err = opts__bad(k, v, "too many settings");
			break;
		}
		argv[2] = o->owned[o->nr_owned++] = strdup(v);
		if (!argv[2]) {
			err = opts__bad(k, v, "out of memory");
			break;
		}
		err = opts__apply(o, 3, argv, &force_format);
	}
	opts__origin = NULL;
	fclose(f);
	return err;
}

/* Whether argv asks for one-shot mode (-f, --foreground, or -f inside a cluster like -fv). */
static bool xsprofd_argv_has_foreground(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "--"))
			break;
		if (!strcmp(a, "--foreground"))
			return true;
		if (a[0] == '-' && a[1] != '-' && a[1] && strspn(a + 1, "fv") == strlen(a + 1) &&
		    strchr(a + 1, 'f'))
			return true;
	}
	return false;
}

/* The --config value, looked up before the full parse so the file can be read first. */
static const char *find_config_flag(int argc, char **argv)
{
	const char *path = NULL;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--"))
			break;
		if ((!strcmp(argv[i], "--config") || !strcmp(argv[i], "-c")) && i + 1 < argc)
			path = argv[++i];
		else if (!strncmp(argv[i], "--config=", 9))
			path = argv[i] + 9;
	}
	return path;
}

int opts_config__read(struct xsprofd_opts *o, int argc, char **argv)
{
	const char *config = find_config_flag(argc, argv);
	int err;

	/* One-shot runs read no config unless asked: a config file describes the service. */
	if (config || !xsprofd_argv_has_foreground(argc, argv)) {
		err = load_config(o, config ? config : XSPROFD_DEFAULT_CONFIG, config != NULL);
		if (err)
			return err;
		o->config_path = config ? config : XSPROFD_DEFAULT_CONFIG;
	}
	return 0;
}
