# SPDX-License-Identifier: Apache-2.0
# The injection library's transport, encoder and entry point. None of these tests needs a GPU;
# test_cupti_inject runs nm and readelf (binutils) and the real libcupti, which refuses politely
# on a machine without one.
xsprof_unit_test(test_cupti_transport SOURCES cupti_inject/test_cupti_transport.c
	LIBS xsprof_cupti_transport xsprof_gpu)
if(TARGET xsprof_cupti)
	xsprof_unit_test(test_cupti_encode SOURCES cupti_inject/test_cupti_encode.c
		LIBS xsprof_cupti_encode xsprof_gpu)

	# A stand-in libcupti so the library's glue runs end to end without a GPU.
	add_library(xsprof_fake_cupti SHARED cupti_inject/fixtures/fake_cupti.c)
	target_include_directories(xsprof_fake_cupti SYSTEM PRIVATE
		${XSPROF_CUPTI_INCLUDE_DIR} ${CUDAToolkit_INCLUDE_DIRS})
	add_executable(xs_inject_host cupti_inject/fixtures/inject_host.c)
	target_link_libraries(xs_inject_host PRIVATE ${CMAKE_DL_LIBS})
	# A real libcudart program: kernels, copies, a graph and NVTX ranges when a GPU is there.
	find_package(CUDAToolkit REQUIRED) # imported targets are per directory
	add_executable(xs_cudart_smoke cupti_inject/fixtures/cudart_smoke.c)
	target_link_libraries(xs_cudart_smoke PRIVATE CUDA::cudart ${CMAKE_DL_LIBS})

	xsprof_unit_test(test_cupti_inject SOURCES cupti_inject/test_cupti_inject.c
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
