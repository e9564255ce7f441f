# SPDX-License-Identifier: Apache-2.0
# fuzz_cupti_wire: the CUPTI pipe parser (daemon/gpu/cupti_wire.c) and the store it feeds, on bytes
# as a profiled process could send them. Seeds are generated from xsprof_wire.h at build time.
# Fuzz longer by hand:  build/tests/fuzz/fuzz_cupti_wire -max_total_time=600 corpus_cupti_wire/
set(XSPROF_CUPTI_FUZZ_FLAGS -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
	-g -O1)
add_executable(fuzz_cupti_wire fuzz_cupti_wire.c
	${PROJECT_SOURCE_DIR}/daemon/gpu/cupti_wire.c
	${PROJECT_SOURCE_DIR}/daemon/gpu/gpu_records.c)
target_compile_options(fuzz_cupti_wire PRIVATE ${XSPROF_CUPTI_FUZZ_FLAGS})
target_link_options(fuzz_cupti_wire PRIVATE ${XSPROF_CUPTI_FUZZ_FLAGS})

add_executable(xs_cupti_wire_seeds cupti_wire_seeds.c)
set(_seeds ${CMAKE_CURRENT_BINARY_DIR}/seeds_cupti_wire)
add_custom_command(OUTPUT ${_seeds}/kernel
	COMMAND ${CMAKE_COMMAND} -E make_directory ${_seeds}
	COMMAND xs_cupti_wire_seeds ${_seeds}
	DEPENDS xs_cupti_wire_seeds
	COMMENT "CUPTI pipe fuzz seeds")
add_custom_target(fuzz_cupti_wire_seeds ALL DEPENDS ${_seeds}/kernel)
add_dependencies(fuzz_cupti_wire fuzz_cupti_wire_seeds)

file(MAKE_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/corpus_cupti_wire)
add_test(NAME fuzz_cupti_wire
	COMMAND fuzz_cupti_wire -runs=50000 -max_len=20000 -rss_limit_mb=1024
		${CMAKE_CURRENT_BINARY_DIR}/corpus_cupti_wire ${_seeds})
set_tests_properties(fuzz_cupti_wire PROPERTIES TIMEOUT 300)
