# SPDX-License-Identifier: Apache-2.0
# The CUPTI pipe: the daemon's parser, server and GPU record store; the injection library's
# transport, encoder and entry point; xsprof-cupti-dump, a standalone receiver for trying the
# library on a GPU machine. None of these tests needs a GPU. test_cupti_inject runs nm and
# readelf (binutils) and the real libcupti, which refuses politely on a machine without one.

xsprof_unit_test(test_gpu_records SOURCES test_gpu_records.c LIBS xsprof_gpu)
xsprof_unit_test(test_cupti_wire SOURCES test_cupti_wire.c LIBS xsprof_gpu)
xsprof_unit_test(test_cupti_server SOURCES test_cupti_server.c LIBS xsprof_gpu)
xsprof_unit_test(test_cupti_transport SOURCES test_cupti_transport.c
	LIBS xsprof_cupti_transport xsprof_gpu)

add_executable(xsprof-cupti-dump cupti_dump.c)
target_link_libraries(xsprof-cupti-dump PRIVATE xsprof_gpu)

if(TARGET xsprof_cupti)
	xsprof_unit_test(test_cupti_encode SOURCES test_cupti_encode.c
		LIBS xsprof_cupti_encode xsprof_gpu)
	# The daemon's hand-typed CUPTI callback ids, checked by the real libcupti (no GPU needed).
	xsprof_unit_test(test_cupti_ids SOURCES test_cupti_ids.c
		LIBS xsprof_cuda ${XSPROF_CUPTI_LIBRARY})
	target_include_directories(test_cupti_ids SYSTEM PRIVATE
		${XSPROF_CUPTI_INCLUDE_DIR} ${CUDAToolkit_INCLUDE_DIRS})

	# A stand-in libcupti so the library's glue runs end to end without a GPU.
	add_library(xsprof_fake_cupti SHARED cupti_fixtures/fake_cupti.c)
	target_include_directories(xsprof_fake_cupti SYSTEM PRIVATE
		${XSPROF_CUPTI_INCLUDE_DIR} ${CUDAToolkit_INCLUDE_DIRS})
	add_executable(xs_inject_host cupti_fixtures/inject_host.c)
	target_link_libraries(xs_inject_host PRIVATE ${CMAKE_DL_LIBS})
	# A real libcudart program: kernels, copies, a graph and NVTX ranges when a GPU is there.
	find_package(CUDAToolkit REQUIRED) # imported targets are per directory
	add_executable(xs_cudart_smoke cupti_fixtures/cudart_smoke.c)
	target_link_libraries(xs_cudart_smoke PRIVATE CUDA::cudart ${CMAKE_DL_LIBS})

	xsprof_unit_test(test_cupti_inject SOURCES test_cupti_inject.c
		LIBS xsprof_gpu ${CMAKE_DL_LIBS})
	target_compile_definitions(test_cupti_inject PRIVATE
		XSPROF_CUPTI_LIB="$<TARGET_FILE:xsprof_cupti>"
		FAKE_CUPTI_LIB="$<TARGET_FILE:xsprof_fake_cupti>"
		REAL_CUPTI_LIB="${XSPROF_CUPTI_LIBRARY_REAL}"
		XS_INJECT_HOST="$<TARGET_FILE:xs_inject_host>"
		XS_CUDART_SMOKE="$<TARGET_FILE:xs_cudart_smoke>")
	add_dependencies(test_cupti_inject xsprof_cupti xsprof_fake_cupti xs_inject_host
		xs_cudart_smoke)
	# bench/cupti_lib.sh: the library's CPU per record, fed by the stand-in libcupti.
	add_executable(xs_cupti_lib_bench ${PROJECT_SOURCE_DIR}/bench/cupti_lib.c)
	target_link_libraries(xs_cupti_lib_bench PRIVATE ${CMAKE_DL_LIBS})
	target_compile_definitions(xs_cupti_lib_bench PRIVATE
		XS_CUPTI_LIB="$<TARGET_FILE:xsprof_cupti>"
		XS_FAKE_CUPTI_LIB="$<TARGET_FILE:xsprof_fake_cupti>")
	add_dependencies(xs_cupti_lib_bench xsprof_cupti xsprof_fake_cupti)
endif()

# bench/gpu_store.c: the GPU record store's cost per record at its cap.
add_executable(xs_gpu_store_bench ${PROJECT_SOURCE_DIR}/bench/gpu_store.c)
target_link_libraries(xs_gpu_store_bench PRIVATE xsprof_gpu)
