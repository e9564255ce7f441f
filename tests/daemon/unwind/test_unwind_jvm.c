// SPDX-License-Identifier: Apache-2.0
/* Which JVMs keep frame pointers in their JIT code: the options in HotSpot's order. */
#include <criterion/criterion.h>
#include <string.h>

#include "daemon/unwind/unwind_jvm.h"

static bool off(const char *cmd, size_t cn, const char *env, size_t en)
{
	return jvm__options_leave_fp_off(cmd, cn, env, en);
}

#define S(x) x, sizeof(x) - 1

Test(unwind_jvm, preserve_frame_pointer_in_any_place_hotspot_reads)
{
	cr_expect(off(S("java\0-cp\0.\0Hot\0"), NULL, 0), "the default is off");
	cr_expect(!off(S("java\0-XX:+PreserveFramePointer\0Hot\0"), NULL, 0));
	cr_expect(off(S("java\0-XX:+PreserveFramePointer\0-XX:-PreserveFramePointer\0"), NULL, 0),
		  "the last one wins");
	cr_expect(!off(S("java\0Hot\0"), S("HOME=/root\0JAVA_TOOL_OPTIONS=-Xmx1g "
					   "-XX:+PreserveFramePointer\0")));
	cr_expect(!off(S("java\0Hot\0"), S("JDK_JAVA_OPTIONS=-XX:+PreserveFramePointer\0")));
	/* The command line comes after JAVA_TOOL_OPTIONS, _JAVA_OPTIONS after both. */
	cr_expect(off(S("java\0-XX:-PreserveFramePointer\0"),
		      S("JAVA_TOOL_OPTIONS=-XX:+PreserveFramePointer\0")));
	cr_expect(!off(S("java\0-XX:-PreserveFramePointer\0"),
		       S("_JAVA_OPTIONS=-XX:+PreserveFramePointer\0")));
	/* Not the flag: other names, a value in another variable, a prefix. */
	cr_expect(off(S("java\0-XX:+PreserveFramePointerX\0-Dx=-XX:+PreserveFramePointer\0"),
		      S("OTHER=-XX:+PreserveFramePointer\0")));
	cr_expect(off(NULL, 0, NULL, 0), "unreadable: off");
}
