# SPDX-License-Identifier: Apache-2.0
# Python frames (daemon/python, bpf/python.bpf.c): workloads under tests/python run with Debian's
# /usr/bin/python3.11 under the real xsprofd (root, BTF), checked by tests/daemon/python/check.py; the
# structure offsets table checked against the installed CPython headers.
foreach(case nested threads callback gen_async short cuda versions subinterp pidns torch
		torch_backward dataloader_wakers no_python unwatched offcpu)
	add_test(NAME python_${case}
		COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/daemon/python/run.sh ${CMAKE_BINARY_DIR} ${case})
	set_tests_properties(python_${case} PROPERTIES TIMEOUT 300)
endforeach()

xsprof_unit_test(test_python SOURCES daemon/python/test_python.c LIBS xsprof_python)

# The offsets table against CPython's own headers (python3.11-dev: scripts/deps.sh).
find_path(XS_PY311_INCLUDE internal/pycore_frame.h PATHS /usr/include/python3.11 NO_DEFAULT_PATH)
if(XS_PY311_INCLUDE)
	xsprof_unit_test(test_py_offsets SOURCES daemon/python/test_py_offsets.c LIBS xsprof_python)
	target_include_directories(test_py_offsets PRIVATE ${XS_PY311_INCLUDE})
else()
	add_test(NAME test_py_offsets COMMAND sh -c
		"echo 'test_py_offsets: no /usr/include/python3.11/internal (apt-get install python3.11-dev)' >&2; exit 1")
endif()

# The 3.9 and 3.10 columns (PyFrameObject) against pyenv's headers of each.
foreach(minor 9 10)
	file(GLOB XS_PY3${minor}_DIRS /root/.pyenv/versions/3.${minor}.*/include/python3.${minor})
	list(SORT XS_PY3${minor}_DIRS)
	list(POP_BACK XS_PY3${minor}_DIRS XS_PY3${minor}_INCLUDE)
	if(XS_PY3${minor}_INCLUDE AND EXISTS ${XS_PY3${minor}_INCLUDE}/internal/pycore_interp.h)
		xsprof_unit_test(test_py_offsets_3${minor}
			SOURCES daemon/python/test_py_offsets_frameobject.c LIBS xsprof_python)
		target_include_directories(test_py_offsets_3${minor} PRIVATE
			${XS_PY3${minor}_INCLUDE} ${XS_PY3${minor}_INCLUDE}/internal)
	else()
		add_test(NAME test_py_offsets_3${minor} COMMAND sh -c
			"echo 'test_py_offsets_3${minor}: no pyenv CPython 3.${minor} headers under /root/.pyenv/versions' >&2; exit 1")
	endif()
endforeach()

# Offsets from a live 3.13's _Py_DebugOffsets against pyenv's 3.13 headers.
file(GLOB XS_PY313_DIRS /root/.pyenv/versions/3.13.*/include/python3.13)
list(SORT XS_PY313_DIRS)
list(POP_BACK XS_PY313_DIRS XS_PY313_INCLUDE)
if(XS_PY313_INCLUDE AND EXISTS ${XS_PY313_INCLUDE}/internal/pycore_frame.h)
	xsprof_unit_test(test_py_offsets_313 SOURCES daemon/python/test_py_offsets_313.c LIBS xsprof_python)
	target_include_directories(test_py_offsets_313 PRIVATE ${XS_PY313_INCLUDE}
		${XS_PY313_INCLUDE}/internal)
else()
	add_test(NAME test_py_offsets_313 COMMAND sh -c
		"echo 'test_py_offsets_313: no pyenv CPython 3.13 headers under /root/.pyenv/versions' >&2; exit 1")
endif()

# PyTorch's engine in shape (tests/workloads/torch_double.c, built as libtorch_cpu.so): backward
# kernels launched by the engine's own thread, on the GPU double (run.sh torch_engine).
if(TARGET xs_cupti_fake)
	add_library(xs_torch_double SHARED workloads/torch_double.c)
	set_target_properties(xs_torch_double PROPERTIES OUTPUT_NAME torch_cpu
		LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests/torch_double)
	target_compile_options(xs_torch_double PRIVATE ${XS_FRAME_FLAGS})
	target_include_directories(xs_torch_double PRIVATE ${PROJECT_SOURCE_DIR})
	target_link_libraries(xs_torch_double PRIVATE xs_gpu_double Threads::Threads)
	foreach(case torch_engine dataloader_gpu)
		add_test(NAME python_${case}
			COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/daemon/python/run.sh ${CMAKE_BINARY_DIR} ${case})
		set_tests_properties(python_${case} PROPERTIES TIMEOUT 300)
	endforeach()
else()
	foreach(case torch_engine dataloader_gpu)
		add_test(NAME python_${case} COMMAND sh -c
			"echo 'python_${case}: no CUDA toolkit found at configure time (set CUDAToolkit_ROOT)' >&2; exit 1")
	endforeach()
endif()
