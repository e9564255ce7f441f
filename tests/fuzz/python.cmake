# SPDX-License-Identifier: Apache-2.0
# CPython code objects as the daemon reads them (daemon/python/py_code.c): location tables and
# names.
add_executable(fuzz_py_code fuzz_py_code.c ${PROJECT_SOURCE_DIR}/daemon/python/py_code.c
	${PROJECT_SOURCE_DIR}/daemon/python/py_offsets.c)
target_compile_options(fuzz_py_code PRIVATE ${FUZZ_FLAGS})
target_link_options(fuzz_py_code PRIVATE ${FUZZ_FLAGS})
target_include_directories(fuzz_py_code PRIVATE ${PROJECT_SOURCE_DIR})
file(MAKE_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/corpus_py_code)
add_test(NAME fuzz_py_code
	COMMAND fuzz_py_code -runs=20000 -max_len=65536 -rss_limit_mb=1024
		${CMAKE_CURRENT_BINARY_DIR}/corpus_py_code ${CMAKE_CURRENT_SOURCE_DIR}/seeds/py_code)
set_tests_properties(fuzz_py_code PROPERTIES TIMEOUT 300)
