// SPDX-License-Identifier: Apache-2.0
/*
 * daemon/python without BPF: file names, the line tables of 3.9 to 3.11 against CPython's own
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

#include <bpf/bpf.h>

#include "bpf/xsprof_events.h"
#include "daemon/python/py_code.h"
#include "daemon/python/py_detect.h"
#include "daemon/python/py_offsets.h"
#include "daemon/python/pyprof.h"
#include "daemon/symbolize/frame_names.h"
#include "daemon/symbolize/symbolizer.h"

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
	cr_assert_eq(py_offsets__get(3, 10, &o, &why), 0);
	cr_assert_eq(o->bpf.frame_kind, XSPROF_PY_FRAME_OBJECT_UNITS);
	cr_assert_eq(o->lines, PY_LINES_310);
	cr_assert_eq(py_offsets__get(3, 9, &o, &why), 0);
	cr_assert_eq(o->bpf.frame_kind, XSPROF_PY_FRAME_OBJECT_BYTES);
	cr_assert_eq(o->bpf.thread_kind, XSPROF_PY_THREAD_PTHREAD);
	cr_assert_eq(py_offsets__get(3, 8, &o, &why), -ENOTSUP);
	cr_assert(why && strstr(why, "3.9"));
	/* 3.13 on: from the interpreter itself (test_py_offsets_313). */
	cr_assert_eq(py_offsets__get(3, 13, &o, &why), -ENOTSUP);
	cr_assert(why && strstr(why, "_Py_DebugOffsets"));
	cr_assert_eq(py_offsets__get(3, 14, &o, &why), -ENOTSUP);
}

static int hexval(char c)
{
	return c <= '9' ? c - '0' : c - 'a' + 10;
}

/*
 * Every code object of a few stdlib modules: its line table (hex), first line, and the byte
 * ranges of its lines (start byte, end byte, line), printed by CPython itself (co_lines() from
 * 3.10, dis.findlinestarts() before); py_code__line must agree for every instruction of every
 * one, in each table format: 3.11's location table, 3.10's co_linetable, 3.9's co_lnotab (the
 * older two from pyenv's builds).
 */
static void check_line_tables(const char *py, enum py_lines kind)
{
	static const char script[] =
		"import dis, json.decoder, asyncio.base_events, threading, types\n"
		"def walk(c):\n"
		"    yield c\n"
		"    for k in c.co_consts:\n"
		"        if isinstance(k, types.CodeType): yield from walk(k)\n"
		"def lines(c):\n"
		"    if hasattr(c, 'co_lines'):\n"
		"        yield from c.co_lines()\n"
		"        return\n"
		"    s = list(dis.findlinestarts(c))\n"
		"    for i, (b, l) in enumerate(s):\n"
		"        yield b, s[i + 1][0] if i + 1 < len(s) else len(c.co_code), l\n"
		"for m in (json.decoder, asyncio.base_events, threading):\n"
		"    src = open(m.__file__).read()\n"
		"    for c in walk(compile(src, m.__file__, 'exec')):\n"
		"        t = c.co_linetable if hasattr(c, 'co_lines') else c.co_lnotab\n"
		"        print('C', c.co_firstlineno, t.hex())\n"
		"        for s, e, l in lines(c):\n"
		"            print('L', s, e, -1 if l is None else l)\n";
	char cmd[2048], *line = NULL;
	size_t cap = 0;
	struct py_code c = {.lines = (uint8_t)kind};
	long codes = 0, checked = 0;
	FILE *f;

	snprintf(cmd, sizeof(cmd), "%s -c \"$(cat <<'XSEOF'\n%s\nXSEOF\n)\"", py, script);
	f = popen(cmd, "r");
	cr_assert(f, "cannot run %s", py);
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
					     "%s, instruction %ld: line %d, CPython says %ld", py,
					     b / 2, got, l);
				checked++;
			}
		}
	}
	py_code__release(&c);
	free(line);
	cr_assert_eq(pclose(f), 0, "%s failed", py);
	cr_assert_gt(codes, 200, "%s: only %ld code objects", py, codes);
	cr_assert_gt(checked, 10000, "%s", py);
	cr_assert_eq(py_code__line(&c, XSPROF_PY_INSTR_NONE), c.firstlineno);
}

/* pyenv's build of CPython major.minor (its newest patch release there). */
static void pyenv_python(const char *minor, char *out, size_t size)
{
	char cmd[256];
	FILE *f;

	snprintf(cmd, sizeof(cmd), "ls -d /root/.pyenv/versions/%s.*/bin/python%s | tail -1", minor,
		 minor);
	f = popen(cmd, "r");
	cr_assert(f);
	out[0] = '\0';
	cr_assert(fgets(out, (int)size, f), "no pyenv CPython %s under /root/.pyenv", minor);
	out[strcspn(out, "\n")] = '\0';
	pclose(f);
}

Test(python, line_table_matches_cpython)
{
	char py[512];

	check_line_tables(PY, PY_LINES_LOCATIONS);
	pyenv_python("3.10", py, sizeof(py));
	check_line_tables(py, PY_LINES_310);
	pyenv_python("3.9", py, sizeof(py));
	check_line_tables(py, PY_LINES_LNOTAB);
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

/*
 * pyprof__rewrite on records made by hand for a live python3.11 (the BPF side is tested end
 * to end by tests/python): each run of interpreter frames up to an entry frame takes the place
 * of one _PyEval_EvalFrameDefault frame, frames left over go to the root, other native frames
 * stay, and the names come from the process's code objects, also with a code cache so small
 * that every read resets it.
 */
static pid_t spawn_python(int *ret_in, unsigned long long codes[3])
{
	int in[2], out[2];
	char buf[256];
	ssize_t n;
	pid_t pid;

	cr_assert(!pipe(in) && !pipe(out));
	pid = fork();
	cr_assert(pid >= 0);
	if (pid == 0) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		close(in[0]);
		close(in[1]);
		close(out[0]);
		close(out[1]);
		execl(PY, PY, "-c",
		      "import sys\n"
		      "def outer():\n"
		      "    pass\n"
		      "def middle():\n"
		      "    pass\n"
		      "def inner():\n"
		      "    pass\n"
		      "print(id(outer.__code__), id(middle.__code__), id(inner.__code__), flush=True)\n"
		      "sys.stdin.read()\n",
		      (char *)NULL);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	/* One line; a pipe may hand it over in pieces. */
	for (size_t got = 0; !memchr(buf, '\n', got);) {
		n = read(out[0], buf + got, sizeof(buf) - 1 - got);
		cr_assert_gt(n, 0, PY " printed no line");
		got += (size_t)n;
		buf[got] = '\0';
	}
	cr_assert_eq(sscanf(buf, "%llu %llu %llu", &codes[0], &codes[1], &codes[2]), 3, "%s", buf);
	close(out[0]);
	*ret_in = in[1];
	return pid;
}

static void rewrite_case(size_t max_code_bytes)
{
	struct symbolizer *sym = symbolizer__new(NULL);
	unsigned long long codes[3];
	struct pyprof_opts po = {.max_procs = 16, .sym = sym, .max_code_bytes = max_code_bytes};
	struct pyprof_stats st;
	const struct xsprof_sample *o;
	struct xsprof_sample *s = calloc(1, sizeof(*s));
	struct xsprof_py_frame *py;
	struct py_target t;
	const char *why, *names[16];
	struct pyprof *p;
	size_t size, n;
	int in, fd;
	pid_t pid;

	cr_assert(sym && s);
	fd = bpf_map_create(BPF_MAP_TYPE_HASH, "xs_test_py", 4, sizeof(struct xsprof_py_proc), 16,
			    NULL);
	cr_assert_geq(fd, 0, "bpf_map_create: %s (root needed)", strerror(errno));
	po.procs_fd = fd;
	pid = spawn_python(&in, codes);
	p = pyprof__new(&po);
	cr_assert(p);
	cr_assert_eq(pyprof__add_process(p, pid), 0);
	cr_assert_eq(py_detect(NULL, pid, &t, &why), 0);

	/* Native, innermost first: a leaf in libc, the eval loop running inner (entered from C),
	 * a C frame, the eval loop running middle and outer; then main. */
	s->type = XSPROF_REC_SAMPLE;
	s->tgid = (uint32_t)pid;
	s->tid = (uint32_t)pid;
	s->nr_kernel = 0;
	s->nr_user = 5;
	s->ips[0] = 0x1000;		 /* the pc: not the interpreter */
	s->ips[1] = t.eval_start + 0x11; /* return address into the eval loop */
	s->ips[2] = 0x2000;		 /* a C extension */
	s->ips[3] = t.eval_start + 0x22; /* the eval loop again */
	s->ips[4] = 0x3000;		 /* main */
	s->nr_python = 4;
	py = (struct xsprof_py_frame *)&s->ips[5];
	py[0] = (struct xsprof_py_frame){codes[2], 1, XSPROF_PY_F_ENTRY, 11}; /* inner */
	py[1] = (struct xsprof_py_frame){codes[1], 1, 0, 12};		      /* middle */
	py[2] = (struct xsprof_py_frame){codes[0], 1, XSPROF_PY_F_ENTRY, 13}; /* outer */
	py[3] = (struct xsprof_py_frame){codes[0], 1, XSPROF_PY_F_ENTRY, 13}; /* left over */
	size = XSPROF_SAMPLE_HDR_SIZE + 5 * 8 + 4 * sizeof(*py);

	o = pyprof__rewrite(p, s, size, &size);
	cr_assert_neq((const void *)o, (const void *)s);
	cr_assert_eq(o->nr_python, 0);
	cr_assert_eq(size, XSPROF_SAMPLE_HDR_SIZE + 8u * o->nr_user);
	n = o->nr_user;
	cr_assert_eq(n, 7, "%zu frames", n);
	for (size_t i = 0; i < n; i++)
		names[i] = symbolizer__user(sym, pid, o->ips[i] - (i ? 1 : 0));
	cr_assert_eq(o->ips[0], 0x1000);
	/* Code from "<string>" has no module to name. */
	cr_assert_str_eq(names[1], "inner (<string>:7)", "%s", names[1]);
	cr_assert_eq(o->ips[2], 0x2000);
	cr_assert_str_eq(names[3], "middle (<string>:5)", "%s", names[3]);
	cr_assert_str_eq(names[4], "outer (<string>:3)", "%s", names[4]);
	cr_assert_eq(o->ips[5], 0x3000);
	cr_assert_str_eq(names[6], "outer (<string>:3)", "%s", names[6]);

	/* Frames past the record's end are refused, the record kept as it came. */
	size = XSPROF_SAMPLE_HDR_SIZE + 5 * 8 + 3 * sizeof(*py);
	cr_assert_eq((const void *)pyprof__rewrite(p, s, size, &size), (const void *)s);
	pyprof__stats(p, &st);
	cr_assert_eq(st.bad_records, 1);
	cr_assert_eq(st.interleaved, 1);
	cr_assert_eq(st.frames, 4);
	if (max_code_bytes)
		cr_assert_gt(st.code_cache_resets, 0);

	/* Gone: forgotten at exit, its records kept native. */
	close(in);
	waitpid(pid, NULL, 0);
	pyprof__exit(p, pid);
	size = XSPROF_SAMPLE_HDR_SIZE + 5 * 8 + 4 * sizeof(*py);
	cr_assert_eq((const void *)pyprof__rewrite(p, s, size, &size), (const void *)s);
	pyprof__stats(p, &st);
	cr_assert_eq(st.unknown_process, 1);
	pyprof__free(p);
	symbolizer__free(sym);
	close(fd);
	free(s);
}

Test(python, rewrite_interleaves)
{
	rewrite_case(0);
}

Test(python, rewrite_with_a_tiny_code_cache)
{
	rewrite_case(1);
}
