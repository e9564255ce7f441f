/* SPDX-License-Identifier: Apache-2.0 */
/*
 * xsprof scopes: name the phases of a C or C++ program, and xsprof's profiles put the samples,
 * CUDA launches and GPU work inside each under its name (xsprofd --group-by range, xsprofctl
 * record --group-by range), as they do NVTX ranges.
 *
 *   #include <xsprof/scope.h>                 (pkg-config --cflags xsprof)
 *
 *   void train_step(void) {
 *           XSPROF_SCOPE("train step");      // from here to the end of the block
 *           ...
 *   }
 *   void load(void) { XSPROF_FUNCTION(); ... }  // named after the function
 *   xsprof_scope_begin("warmup"); ...; xsprof_scope_end("warmup");
 *
 * Each is a USDT probe, xsprof:scope_begin or xsprof:scope_end, with the name's address as its
 * one argument, on a 5-byte nop: when nothing is attached the program runs a nop and nothing
 * else (no call, no copy, no flag read). xsprofd attaches to the executable of the processes it
 * profiles by pid or runs as a command, and reads each name once per address from the process,
 * so a name must be a string that lives as long as the process (a literal). Scopes nest per
 * thread; a begin and its end must be on the same thread and name the same string.
 * Needs <sys/sdt.h> (Debian: systemtap-sdt-dev). Header only; no library to link.
 */
#ifndef XSPROF_SCOPE_H
#define XSPROF_SCOPE_H

#include <sys/sdt.h>

/* The probe site: a 5-byte nop that Linux turns into a call rather than a trap when a uprobe
 * sits on it (the stapsdt note is sdt.h's own; every USDT tool reads it). */
#if defined(__x86_64__)
#undef _SDT_NOP
#define _SDT_NOP    \
	.byte 0x0f; \
	.byte 0x1f; \
	.byte 0x44; \
	.byte 0x00; \
	.byte 0x00
#endif

#define xsprof_scope_begin(name) STAP_PROBE1(xsprof, scope_begin, (const char *)(name))
#define xsprof_scope_end(name)	 STAP_PROBE1(xsprof, scope_end, (const char *)(name))

#ifdef __cplusplus
namespace xsprof
{
/* The scope of a block: begins where it is declared, ends with the block. */
class scope
{
      public:
	explicit scope(const char *name) : name_(name)
	{
		xsprof_scope_begin(name_);
	}
	~scope()
	{
		xsprof_scope_end(name_);
	}
	scope(const scope &) = delete;
	scope &operator=(const scope &) = delete;

      private:
	const char *name_;
};
} // namespace xsprof
#define XSPROF__CAT2(a, b) a##b
#define XSPROF__CAT(a, b)  XSPROF__CAT2(a, b)
#define XSPROF_SCOPE(name) ::xsprof::scope XSPROF__CAT(xsprof_scope_, __COUNTER__)(name)
#define XSPROF_FUNCTION()  XSPROF_SCOPE(__func__)
#else
static inline __attribute__((always_inline)) const char *xsprof__scope_enter(const char *name)
{
	xsprof_scope_begin(name);
	return name;
}

static inline __attribute__((always_inline)) void xsprof__scope_leave(const char *const *name)
{
	xsprof_scope_end(*name);
}

#define XSPROF__CAT2(a, b) a##b
#define XSPROF__CAT(a, b)  XSPROF__CAT2(a, b)
/* GNU C's cleanup attribute ends the scope with the block (gcc and clang). */
#define XSPROF_SCOPE(name)                                  \
	const char *XSPROF__CAT(xsprof_scope_, __COUNTER__) \
		__attribute__((cleanup(xsprof__scope_leave), unused)) = xsprof__scope_enter(name)
#define XSPROF_FUNCTION() XSPROF_SCOPE(__func__)
#endif

#endif
