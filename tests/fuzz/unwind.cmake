# SPDX-License-Identifier: Apache-2.0
# The .eh_frame compiler (daemon/unwind/unwind_table.c): raw sections and ELF images.
add_executable(fuzz_unwind_table fuzz_unwind_table.c
	${PROJECT_SOURCE_DIR}/daemon/unwind/unwind_table.c
	${PROJECT_SOURCE_DIR}/daemon/unwind/eh_frame.c
	${PROJECT_SOURCE_DIR}/daemon/unwind/gopclntab.c
	${PROJECT_SOURCE_DIR}/daemon/symbolize/go_pclntab.c)
target_compile_options(fuzz_unwind_table PRIVATE ${FUZZ_FLAGS})
target_link_options(fuzz_unwind_table PRIVATE ${FUZZ_FLAGS})
target_include_directories(fuzz_unwind_table PRIVATE ${PROJECT_SOURCE_DIR})
target_link_libraries(fuzz_unwind_table PRIVATE PkgConfig::LIBELF)
file(MAKE_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/corpus_unwind_table)
add_test(NAME fuzz_unwind_table
	COMMAND fuzz_unwind_table -runs=20000 -max_len=65536 -rss_limit_mb=1024
		${CMAKE_CURRENT_BINARY_DIR}/corpus_unwind_table
		${CMAKE_CURRENT_SOURCE_DIR}/seeds/unwind_table)
set_tests_properties(fuzz_unwind_table PROPERTIES TIMEOUT 300)
