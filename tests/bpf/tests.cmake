# SPDX-License-Identifier: Apache-2.0
# Workloads with a known CPU profile, built with frame pointers like the rest of the tree.
add_executable(xs_split workloads/split.c)
target_compile_options(xs_split PRIVATE -O1 -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer -fno-optimize-sibling-calls)
target_link_libraries(xs_split PRIVATE pthread)
add_executable(xs_syscalls workloads/syscalls.c)
target_compile_options(xs_syscalls PRIVATE -O1 -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer)

xsprof_unit_test(test_sampler_bpf SOURCES bpf/test_sampler_bpf.c lib/harness.c LIBS m)
target_compile_definitions(test_sampler_bpf PRIVATE
	XSPROFD_PATH="$<TARGET_FILE:xsprofd>"
	XS_SPLIT_PATH="$<TARGET_FILE:xs_split>"
	XS_SYSCALLS_PATH="$<TARGET_FILE:xs_syscalls>")
add_dependencies(test_sampler_bpf xsprofd xs_split xs_syscalls)
add_executable(xs_fixedwork workloads/fixedwork.c)
target_compile_options(xs_fixedwork PRIVATE -O1 -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer
	-fno-optimize-sibling-calls)
target_link_libraries(xs_fixedwork PRIVATE pthread)

# Off-CPU and wall time through the real xsprofd (sched_switch program).
add_executable(xs_wallsplit workloads/wallsplit.c)
target_compile_options(xs_wallsplit PRIVATE -O1 -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer
	-fno-optimize-sibling-calls)
target_link_libraries(xs_wallsplit PRIVATE pthread)
xsprof_unit_test(test_offcpu SOURCES bpf/test_offcpu.c lib/harness.c LIBS m)
target_compile_definitions(test_offcpu PRIVATE XSPROFD_PATH="$<TARGET_FILE:xsprofd>"
	XS_WALLSPLIT_PATH="$<TARGET_FILE:xs_wallsplit>")
add_dependencies(test_offcpu xsprofd xs_wallsplit)

# The function that blocked, in both views: a frame-pointer program calling libc directly.
add_executable(xs_napwait workloads/napwait.c)
target_compile_options(xs_napwait PRIVATE -O2 -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer
	-fno-optimize-sibling-calls)
target_link_libraries(xs_napwait PRIVATE pthread)
xsprof_unit_test(test_offcpu_frames SOURCES bpf/test_offcpu_frames.c lib/harness.c)
target_compile_definitions(test_offcpu_frames PRIVATE XSPROFD_PATH="$<TARGET_FILE:xsprofd>"
	XS_NAPWAIT_PATH="$<TARGET_FILE:xs_napwait>")
add_dependencies(test_offcpu_frames xsprofd xs_napwait)

# bench/offcpu.sh: a switch-heavy load (two threads ping-ponging through pipes).
add_executable(xs_pingpong workloads/pingpong.c)
target_compile_options(xs_pingpong PRIVATE -O1 -fno-omit-frame-pointer)
target_link_libraries(xs_pingpong PRIVATE pthread)

# In-kernel filters: --comm, --cgroup, --unit.
xsprof_unit_test(test_filters SOURCES bpf/test_filters.c lib/harness.c LIBS xsprof_session pthread)
target_compile_definitions(test_filters PRIVATE XSPROFD_PATH="$<TARGET_FILE:xsprofd>")
add_dependencies(test_filters xsprofd)

# Sample ownership decided in the kernel (real vs effective uid).
xsprof_unit_test(test_sample_owner SOURCES bpf/test_sample_owner.c LIBS xsprof_session)

# The stop ledger's watchdog: a process stopped for its probes is continued when the daemon is
# killed -9 (issue 39 G2). Needs root.
xsprof_unit_test(test_stop_ledger SOURCES bpf/test_stop_ledger.c LIBS xsprof_probes)

# Every program's margins against the classic verifier limits (bench/bpf_margins.sh): the
# deepest call chain keeps 64 of its 512 bytes with 32-byte frames, instructions stay under half
# the limit, nothing is refused. Fails on this build before a user's kernel refuses it.
add_test(NAME bpf_margins COMMAND ${PROJECT_SOURCE_DIR}/bench/bpf_margins.sh --build ${CMAKE_BINARY_DIR})
set_tests_properties(bpf_margins PROPERTIES TIMEOUT 300)
