# SPDX-License-Identifier: Apache-2.0
# The sampler's restarts off its fixed grid (daemon/probes/dither.c).
xsprof_unit_test(test_dither SOURCES daemon/probes/test_dither.c LIBS xsprof_probes m)

# Who woke each off-CPU stretch (--wakers: bpf/offcpu.bpf.c's xsprof_waking, daemon/probes/offcpu.c's
# chains): a chain three hops long charged to the thread that did the work, a timer's wakeups to
# no thread, and a profile without --wakers as it was (tests/daemon/probes/wakers.sh).
add_executable(xs_wake_chain workloads/wake_chain.c)
target_compile_options(xs_wake_chain PRIVATE ${XS_FRAME_FLAGS})
target_link_libraries(xs_wake_chain PRIVATE Threads::Threads)
add_test(NAME offcpu_wakers COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/daemon/probes/wakers.sh
	${CMAKE_BINARY_DIR})
set_tests_properties(offcpu_wakers PROPERTIES TIMEOUT 300)
