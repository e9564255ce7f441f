# SPDX-License-Identifier: Apache-2.0
# One-shot outputs in every format from the real xsprofd (needs root and BTF), checked by the
# formats' own readers: python3's json and go tool pprof.
find_program(XS_GO go)
find_program(XS_PYTHON3 python3)
xsprof_unit_test(test_oneshot_outputs SOURCES daemon/oneshot/test_oneshot_outputs.c lib/harness.c)
target_compile_definitions(test_oneshot_outputs PRIVATE
	XSPROFD_PATH="$<TARGET_FILE:xsprofd>"
	XS_SPLIT_PATH="$<TARGET_FILE:xs_split>"
	XS_GO_PATH="${XS_GO}"
	XS_PYTHON3_PATH="${XS_PYTHON3}")
add_dependencies(test_oneshot_outputs xsprofd xs_split)

# GPU correlation end to end, without a GPU: xsprof:launch firings (USDT, real BPF) joined by
# correlation id to kernel records sent on the CUPTI socket, as libxsprof_cupti.so sends them.
if(TARGET xs_cupti_fake)
	add_executable(xs_usdt_gpu workloads/usdt_gpu.c)
	target_compile_options(xs_usdt_gpu PRIVATE -O1 -fno-omit-frame-pointer
		-mno-omit-leaf-frame-pointer -fno-optimize-sibling-calls)
	target_include_directories(xs_usdt_gpu PRIVATE ${PROJECT_SOURCE_DIR})
	target_link_libraries(xs_usdt_gpu PRIVATE xs_cupti_fake)
	target_compile_definitions(test_oneshot_outputs PRIVATE
		XS_USDT_GPU_PATH="$<TARGET_FILE:xs_usdt_gpu>")
	add_dependencies(test_oneshot_outputs xs_usdt_gpu)
endif()

# A kernel that refuses one optional BPF program still samples (tests/daemon/oneshot/refused_programs.sh).
if(TARGET xs_cupti_fake)
	add_test(NAME refused_programs COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/daemon/oneshot/refused_programs.sh
		${CMAKE_BINARY_DIR})
	set_tests_properties(refused_programs PROPERTIES TIMEOUT 600)
endif()

# NVTX phases of known CPU time (tests/daemon/oneshot/nvtx.sh): the nvtx3 headers, the NVTX injection of
# libxsprof_cupti.so, launches of the fake injection library inside a range.
if(TARGET xs_cupti_fake AND TARGET xsprof_cupti)
	add_executable(xs_nvtx_phases workloads/nvtx_phases.c)
	target_compile_options(xs_nvtx_phases PRIVATE -O1 -fno-omit-frame-pointer
		-mno-omit-leaf-frame-pointer -fno-optimize-sibling-calls)
	target_include_directories(xs_nvtx_phases PRIVATE ${PROJECT_SOURCE_DIR})
	target_include_directories(xs_nvtx_phases SYSTEM PRIVATE
		$<TARGET_PROPERTY:xsprof_cupti_encode,INTERFACE_INCLUDE_DIRECTORIES>)
	target_link_libraries(xs_nvtx_phases PRIVATE xs_cupti_fake ${CMAKE_DL_LIBS} Threads::Threads)
endif()
# The same phases as ITT tasks (tests/daemon/oneshot/itt.sh), through the ITT static part's protocol
# (workloads/itt_stub.h) into libxsprof_itt.so.
if(TARGET xs_cupti_fake)
	add_executable(xs_itt_phases workloads/itt_phases.c)
	target_compile_options(xs_itt_phases PRIVATE -O1 -fno-omit-frame-pointer
		-mno-omit-leaf-frame-pointer -fno-optimize-sibling-calls)
	target_include_directories(xs_itt_phases PRIVATE ${PROJECT_SOURCE_DIR})
	target_link_libraries(xs_itt_phases PRIVATE xs_cupti_fake ${CMAKE_DL_LIBS} Threads::Threads)
endif()
# bench/nvtx.sh: an ITT task pair's cost (no CUDA needed).
add_executable(xs_itt_cost ${PROJECT_SOURCE_DIR}/bench/itt_cost.c)
target_include_directories(xs_itt_cost PRIVATE ${PROJECT_SOURCE_DIR})
target_link_libraries(xs_itt_cost PRIVATE ${CMAKE_DL_LIBS} Threads::Threads)
# Short NVTX ranges on several threads (tests/daemon/oneshot/nvtx_short_ranges.sh): the nvtx3 headers only.
if(TARGET xsprof_cupti)
	add_executable(xs_nvtx_cycles workloads/nvtx_cycles.c)
	target_compile_options(xs_nvtx_cycles PRIVATE -O1 -fno-omit-frame-pointer
		-mno-omit-leaf-frame-pointer -fno-optimize-sibling-calls)
	target_include_directories(xs_nvtx_cycles PRIVATE ${PROJECT_SOURCE_DIR})
	target_include_directories(xs_nvtx_cycles SYSTEM PRIVATE
		$<TARGET_PROPERTY:xsprof_cupti_encode,INTERFACE_INCLUDE_DIRECTORIES>)
	target_link_libraries(xs_nvtx_cycles PRIVATE ${CMAKE_DL_LIBS} Threads::Threads)
endif()
# The same phases through xsprof/scope.h's USDT scopes (no library, no CUDA).
add_executable(xs_scope_phases workloads/scope_phases.c)
target_compile_options(xs_scope_phases PRIVATE -O1 -fno-omit-frame-pointer)
target_include_directories(xs_scope_phases PRIVATE ${PROJECT_SOURCE_DIR}
	${PROJECT_SOURCE_DIR}/cupti_inject/include)
# A scope in a shared library that is no CUDA library, for attaching to a running process.
add_library(xs_scope_lib SHARED workloads/scope_lib.c)
target_compile_options(xs_scope_lib PRIVATE -O1 -fno-omit-frame-pointer)
target_include_directories(xs_scope_lib PRIVATE ${PROJECT_SOURCE_DIR}
	${PROJECT_SOURCE_DIR}/cupti_inject/include)
add_executable(xs_scope_lib_loop workloads/scope_lib_main.c)
target_compile_options(xs_scope_lib_loop PRIVATE -O1 -fno-omit-frame-pointer)
target_include_directories(xs_scope_lib_loop PRIVATE ${PROJECT_SOURCE_DIR})
target_link_libraries(xs_scope_lib_loop PRIVATE xs_scope_lib)
# It fails, saying why, where the injection library or the workload could not be built.
add_test(NAME nvtx_ranges COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/daemon/oneshot/nvtx.sh ${CMAKE_BINARY_DIR})
set_tests_properties(nvtx_ranges PROPERTIES TIMEOUT 300)
add_test(NAME nvtx_short_ranges COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/daemon/oneshot/nvtx_short_ranges.sh
	${CMAKE_BINARY_DIR})
set_tests_properties(nvtx_short_ranges PROPERTIES TIMEOUT 180)

# bench/nvtx.sh: the cost of an NVTX push/pop with and without the injection and a daemon.
if(TARGET xsprof_cupti)
	add_executable(xs_nvtx_cost ${PROJECT_SOURCE_DIR}/bench/nvtx_cost.c)
	target_include_directories(xs_nvtx_cost SYSTEM PRIVATE
		$<TARGET_PROPERTY:xsprof_cupti_encode,INTERFACE_INCLUDE_DIRECTORIES>
		${PROJECT_SOURCE_DIR}/cupti_inject/include)
	target_link_libraries(xs_nvtx_cost PRIVATE ${CMAKE_DL_LIBS})
endif()

# OTLP profiles from one-shot runs (tests/daemon/oneshot/otlp_oneshot.sh): decoded by protoc against the
# vendored opentelemetry-proto files, CPU from xs_split and GPU from xs_usdt_gpu.
if(TARGET xs_usdt_gpu)
	add_test(NAME otlp_oneshot COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/daemon/oneshot/otlp_oneshot.sh
		${CMAKE_BINARY_DIR})
	set_tests_properties(otlp_oneshot PROPERTIES TIMEOUT 300)
endif()

# XPlane from one-shot runs (tests/daemon/oneshot/xplane.sh): decoded by protoc against the vendored
# xplane.proto and read with python3-protobuf, against the Chrome trace of the same run.
if(TARGET xs_usdt_gpu AND TARGET xs_nvtx_phases)
	add_test(NAME xplane COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/daemon/oneshot/xplane.sh ${CMAKE_BINARY_DIR})
	set_tests_properties(xplane PROPERTIES TIMEOUT 300)
endif()

# ITT tasks through libxsprof_itt.so (tests/daemon/oneshot/itt.sh): the phases of xs_nvtx_phases as ITT tasks
# through the static part's protocol, beside the NVTX ones; Debian's PyTorch through oneDNN.
if(TARGET xs_itt_phases AND TARGET xs_nvtx_phases)
	add_test(NAME itt COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/daemon/oneshot/itt.sh ${CMAKE_BINARY_DIR})
	set_tests_properties(itt PROPERTIES TIMEOUT 300)
endif()

# --stats FILE and -v say the same figures: the real xsprofd's file, rendered by the table of
# counters, against its log (tests/daemon/oneshot/test_stats_file.c). Needs root and BTF.
xsprof_unit_test(test_stats_file SOURCES daemon/oneshot/test_stats_file.c LIBS xsprof_counters xsprof_base)
target_compile_definitions(test_stats_file PRIVATE XSPROFD_PATH="$<TARGET_FILE:xsprofd>")
add_dependencies(test_stats_file xsprofd)
