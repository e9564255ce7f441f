// SPDX-License-Identifier: Apache-2.0
/*
 * daemon/python without BPF: file names, the location table against CPython's own co_lines()
 * for every code object of a few stdlib modules, frame names, the frame-name table, and
 * detection and code objects read from a live /usr/bin/python3.11.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bpf/xsprof_events.h"
#include "daemon/python/py_code.h"
#include "daemon/python/py_detect.h"
#include "daemon/python/py_offsets.h"
#include "daemon/symbolize/frame_names.h"

#define PY "/usr/bin/python3.11"

Test(python, parse_name)
{
	unsigned int a, b;
	bool sh, ft;

	cr_assert(py_detect__parse_name("python3.11", &a, &b, &sh, &ft));
	cr_assert(a == 3 && b == 11 && !sh && !ft);
	cr_assert(py_detect__parse_name("libpython3.12.so.1.0", &a, &b, &sh, &ft));
	cr_assert(a == 3 && b == 12 && sh && !ft);
	cr_assert(py_detect__parse_name("python3.13t", &a, &b, &sh, &ft));
	cr_assert(b == 13 && ft);
	cr_assert(py_detect__parse_name("python3", &a, &b, &sh, &ft));
	cr_assert(a == 0);
	cr_assert(!py_detect__parse_name("python3.11-config", &a, &b, &sh, &ft));
	cr_assert(!py_detect__parse_name("libpython3.11.a", &a, &b, &sh, &ft));
	cr_assert(!py_detect__parse_name("perl5.36", &a, &b, &sh, &ft));
	cr_assert(!py_detect__parse_name("pythonista", &a, &b, &sh, &ft));
}

Test(python, offsets_table)
{
	const struct py_offsets *o;
	const char *why = NULL;

	cr_assert_eq(py_offsets__get(3, 11, &o, &why), 0);
	cr_assert_eq(o->bpf.version, 0x030b);
	cr_assert_eq(py_offsets__get(3, 10, &o, &why), -ENOTSUP);
	cr_assert(why && strstr(why, "3.11"));
	cr_assert_eq(py_offsets__get(3, 14, &o, &why), -ENOTSUP);
}

static int hexval(char c)
{
	return c <= '9' ? c - '0' : c - 'a' + 10;
}

/*
 * Every code object of a few stdlib modules: its location table (hex), first line, and
 * co_lines() (start byte, end byte, line), printed by CPython itself; py_code__line must agree
 * for every instruction.
 */
Test(python, line_table_matches_cpython)
{
	static const char script[] =
		"import json.decoder, asyncio.base_events, threading, types\n"
		"def walk(c):\n"
		"    yield c\n"
		"    for k in c.co_consts:\n"
		"        if isinstance(k, types.CodeType): yield from walk(k)\n"
		"for m in (json.decoder, asyncio.base_events, threading):\n"
		"    src = open(m.__file__).read()\n"
		"    for c in walk(compile(src, m.__file__, 'exec')):\n"
		"        print('C', c.co_firstlineno, c.co_linetable.hex())\n"
		"        for s, e, l in c.co_lines():\n"
		"            print('L', s, e, -1 if l is None else l)\n";
	char cmd[2048], *line = NULL;
	size_t cap = 0;
	struct py_code c = {0};
	long codes = 0, checked = 0;
	FILE *f;

	snprintf(cmd, sizeof(cmd), PY " -c \"$(cat <<'XSEOF'\n%s\nXSEOF\n)\"", script);
	f = popen(cmd, "r");
	cr_assert(f, "cannot run " PY);
	while (getline(&line, &cap, f) > 0) {
		if (line[0] == 'C') {
			char *hex = strchr(line + 2, ' ') + 1;
			size_t n = strcspn(hex, "\n") / 2;

			py_code__release(&c);
			c.firstlineno = atoi(line + 2);
			c.linetable = malloc(n ? n : 1);
			c.linetable_len = (uint32_t)n;
			for (size_t i = 0; i < n; i++)
				c.linetable[i] =
					(uint8_t)(hexval(hex[2 * i]) << 4 | hexval(hex[2 * i + 1]));
			codes++;
		} else if (line[0] == 'L') {
			long s, e, l;

			cr_assert_eq(sscanf(line + 2, "%ld %ld %ld", &s, &e, &l), 3);
			for (long b = s; b < e; b += 2) {
				int got = py_code__line(&c, (uint32_t)(b / 2));

				/* No line: we answer the first line, a frame still gets one. */
				cr_assert_eq(got, l < 0 ? c.firstlineno : l,
					     "instruction %ld: line %d, CPython says %ld", b / 2,
					     got, l);
				checked++;
			}
		}
	}
	py_code__release(&c);
	free(line);
	cr_assert_eq(pclose(f), 0);
	cr_assert_gt(codes, 200, "only %ld code objects", codes);
	cr_assert_gt(checked, 10000);
	cr_assert_eq(py_code__line(&c, XSPROF_PY_INSTR_NONE), c.firstlineno);
}

Test(python, format)
{
	struct py_code c = {.firstlineno = 3};
	char buf[600];

	strcpy(c.qualname, "Trainer.step");
	strcpy(c.file, "/srv/app/train.py");
	py_code__format(&c, 42, buf, sizeof(buf));
	cr_assert_str_eq(buf, "train.Trainer.step (train.py:42)");
	strcpy(c.file, "/usr/lib/python3.11/json/__init__.py");
	strcpy(c.qualname, "loads");
	py_code__format(&c, 7, buf, sizeof(buf));
	cr_assert_str_eq(buf, "json.loads (__init__.py:7)");
	strcpy(c.file, "<frozen importlib._bootstrap>");
	strcpy(c.qualname, "_find_and_load");
	py_code__format(&c, 1, buf, sizeof(buf));
	cr_assert_str_eq(buf,
			 "importlib._bootstrap._find_and_load (<frozen importlib._bootstrap>:1)");
	strcpy(c.file, "<string>");
	strcpy(c.qualname, "<module>");
	py_code__format(&c, 0, buf, sizeof(buf));
	cr_assert_str_eq(buf, "<module> (<string>)");
}

Test(python, frame_names)
{
	struct frame_names *fn = frame_names__new(3, 0);
	struct frame_names_stats st;
	uint64_t a, b;

	cr_assert(fn);
	a = frame_names__intern(fn, "m.f (m.py:1)");
	b = frame_names__intern(fn, "m.g (m.py:2)");
	cr_assert(a && b && a != b);
	cr_assert(frame_token__is(a) && !frame_token__is(0x7fff12345678ull));
	cr_assert_eq(frame_names__intern(fn, "m.f (m.py:1)"), a);
	/* Stack naming steps return addresses back by one (and traps by one more). */
	cr_assert_str_eq(frame_names__name(fn, a - 1), "m.f (m.py:1)");
	cr_assert_str_eq(frame_names__name(fn, b - 2), "m.g (m.py:2)");
	cr_assert_null(frame_names__name(fn, a + (100 << 4)));
	cr_assert(frame_names__intern(fn, "m.h (m.py:3)"));
	cr_assert_eq(frame_names__intern(fn, "m.i (m.py:4)"), 0, "past the cap");
	frame_names__stats(fn, &st);
	cr_assert_eq(st.names, 3);
	cr_assert_eq(st.full, 1);
	frame_names__free(fn);
}

/* A live python3.11 that prints its code object's address, then waits on stdin. */
Test(python, detect_and_read_live_process)
{
	int in[2], out[2];
	char buf[256];
	unsigned long long addr;
	const struct py_offsets *o;
	const char *why = NULL;
	struct py_target t;
	struct py_code c;
	ssize_t n;
	pid_t pid;

	cr_assert(!pipe(in) && !pipe(out));
	pid = fork();
	cr_assert(pid >= 0);
	if (pid == 0) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		/* Our ends of the pipes closed: stdin ends when the test closes its end. */
		close(in[0]);
		close(in[1]);
		close(out[0]);
		close(out[1]);
		execl(PY, PY, "-c",
		      "import sys\n"
		      "class Trainer:\n"
		      "    def step(self):\n"
		      "        pass\n"
		      "print(id(Trainer.step.__code__), flush=True)\n"
		      "sys.stdin.read()\n",
		      (char *)NULL);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	n = read(out[0], buf, sizeof(buf) - 1);
	cr_assert_gt(n, 0, PY " printed nothing");
	buf[n] = '\0';
	addr = strtoull(buf, NULL, 10);

	cr_assert_eq(py_detect(NULL, pid, &t, &why), 0, "%s", why ? why : "");
	cr_assert(t.major == 3 && t.minor == 11 && !t.shared);
	cr_assert(t.runtime && t.eval_start && t.eval_end > t.eval_start && t.code_type);
	cr_assert(t.eval_start >= t.text_start && t.eval_end <= t.text_end);
	cr_assert_eq(py_offsets__get(t.major, t.minor, &o, &why), 0);
	cr_assert_eq(py_code__read(pid, addr, o, t.code_type, &c), 0);
	cr_assert_str_eq(c.qualname, "Trainer.step");
	cr_assert_str_eq(c.file, "<string>");
	cr_assert_eq(c.firstlineno, 3);
	cr_assert_eq(py_code__line(&c, 1), 4, "the pass statement");
	py_code__release(&c);
	/* Not a code object: its type is checked. */
	cr_assert_eq(py_code__read(pid, t.runtime, o, t.code_type, &c), -EINVAL);
	/* A process that runs no Python. */
	cr_assert_eq(py_detect(NULL, getpid(), &t, &why), -ENOENT);

	close(in[1]);
	close(out[0]);
	cr_assert_eq(waitpid(pid, NULL, 0), pid);
	cr_assert_eq(py_code__read(pid, addr, o, t.code_type, &c), -ESRCH, "gone");
}
