# SPDX-License-Identifier: Apache-2.0
# Python frames (daemon/python, bpf/python.bpf.c): workloads under tests/python run with Debian's
# /usr/bin/python3.11 under the real xsprofd (root, BTF), checked by tests/python/check.py; the
# structure offsets table checked against the installed CPython headers.
foreach(case nested threads callback gen_async short cuda versions no_python)
	add_test(NAME python_${case}
		COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/python/run.sh ${CMAKE_BINARY_DIR} ${case})
	set_tests_properties(python_${case} PROPERTIES TIMEOUT 300)
endforeach()
