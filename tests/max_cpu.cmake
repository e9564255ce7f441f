# SPDX-License-Identifier: Apache-2.0
# --max-cpu (daemon/session/ceiling.h): the ceiling held on a load that costs far more, what was
# shed said in the report, status and /metrics, shares and launch counts kept (tests/max_cpu.sh).
# Needs root, BPF, bpftool and the CUDA test doubles (tests/cuda.cmake).
if(TARGET xs_launch_rate)
	add_test(NAME max_cpu COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/max_cpu.sh ${CMAKE_BINARY_DIR})
	set_tests_properties(max_cpu PROPERTIES TIMEOUT 300)
else()
	add_test(NAME max_cpu COMMAND sh -c
		"echo 'max_cpu: no CUDA toolkit found at configure time (set CUDAToolkit_ROOT)' >&2; exit 1")
endif()
