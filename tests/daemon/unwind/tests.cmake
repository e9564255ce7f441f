# SPDX-License-Identifier: Apache-2.0
# User stacks without frame pointers (daemon/unwind, bpf/unwind.bpf.h). The workload and its
# library are built the way most distribution code is: -O2 without frame pointers.
add_library(xs_nofp_lib SHARED workloads/nofp_lib.c)
target_compile_options(xs_nofp_lib PRIVATE -O2 -fomit-frame-pointer -fasynchronous-unwind-tables)
add_executable(xs_nofp workloads/nofp.c)
target_compile_options(xs_nofp PRIVATE -O2 -fomit-frame-pointer -fasynchronous-unwind-tables)
target_link_libraries(xs_nofp PRIVATE xs_nofp_lib pthread)
set(XS_NOFP_DEFS
	XS_NOFP_PATH="$<TARGET_FILE:xs_nofp>"
	XS_NOFP_LIB_PATH="$<TARGET_FILE:xs_nofp_lib>")

xsprof_unit_test(test_unwind_table SOURCES daemon/unwind/test_unwind_table.c LIBS xsprof_unwind)
target_compile_definitions(test_unwind_table PRIVATE ${XS_NOFP_DEFS})
add_dependencies(test_unwind_table xs_nofp xs_nofp_lib)

# The real xsprofd on that workload, beside perf --call-graph dwarf (needs root, BTF, perf).
xsprof_unit_test(test_unwind_bpf SOURCES daemon/unwind/test_unwind_bpf.c lib/harness.c LIBS m)
target_compile_definitions(test_unwind_bpf PRIVATE ${XS_NOFP_DEFS}
	XSPROFD_PATH="$<TARGET_FILE:xsprofd>")
add_dependencies(test_unwind_bpf xsprofd xs_nofp xs_nofp_lib)

# CUDA launch stacks through code without frame pointers: the uprobe and USDT probes walk them
# with the same tables (needs the CUDA toolkit's libcudart, as the other CUDA tests).
if(TARGET CUDA::cudart)
	add_executable(xs_nofp_cuda workloads/nofp_cuda.c)
	target_compile_options(xs_nofp_cuda PRIVATE -O2 -fomit-frame-pointer
		-fasynchronous-unwind-tables -fno-optimize-sibling-calls)
	target_link_libraries(xs_nofp_cuda PRIVATE CUDA::cudart xs_cupti_fake)
	# Launch stacks that change between calls the ways a reused stack must notice.
	add_executable(xs_launch_sites workloads/launch_sites.c)
	target_compile_options(xs_launch_sites PRIVATE -O2 -fomit-frame-pointer
		-fasynchronous-unwind-tables -fno-optimize-sibling-calls)
	target_link_libraries(xs_launch_sites PRIVATE CUDA::cudart xs_cupti_fake)
	xsprof_unit_test(test_unwind_cuda SOURCES daemon/unwind/test_unwind_cuda.c lib/harness.c)
	target_compile_definitions(test_unwind_cuda PRIVATE XSPROFD_PATH="$<TARGET_FILE:xsprofd>"
		XS_NOFP_CUDA_PATH="$<TARGET_FILE:xs_nofp_cuda>"
		XS_LAUNCH_SITES_PATH="$<TARGET_FILE:xs_launch_sites>")
	add_dependencies(test_unwind_cuda xsprofd xs_nofp_cuda xs_launch_sites)
endif()

# Leaves without a frame in frame-pointer code: their caller comes from the tables.
add_executable(xs_fpleaf workloads/fpleaf.c)
target_compile_options(xs_fpleaf PRIVATE -O2 -fno-omit-frame-pointer -momit-leaf-frame-pointer
	-fno-optimize-sibling-calls)
# The same in a library opened after the process's mappings were read (xs_dlleaf).
add_library(xs_dlleaf_lib SHARED workloads/dlleaf_lib.c)
target_compile_options(xs_dlleaf_lib PRIVATE -O2 -fno-omit-frame-pointer
	-momit-leaf-frame-pointer -fno-optimize-sibling-calls)
add_executable(xs_dlleaf workloads/dlleaf.c)
target_link_libraries(xs_dlleaf PRIVATE ${CMAKE_DL_LIBS})
# The same code with neither frame pointers nor unwind tables (only the C runtime's objects
# have them): walks stop in it, and must say so ([truncated: ...]).
add_executable(xs_notable workloads/fpleaf.c)
target_compile_options(xs_notable PRIVATE -O2 -fomit-frame-pointer -fno-asynchronous-unwind-tables
	-fno-unwind-tables -fno-optimize-sibling-calls)
xsprof_unit_test(test_unwind_leaf SOURCES daemon/unwind/test_unwind_leaf.c lib/harness.c)
target_compile_definitions(test_unwind_leaf PRIVATE XSPROFD_PATH="$<TARGET_FILE:xsprofd>"
	XS_FPLEAF_PATH="$<TARGET_FILE:xs_fpleaf>" XS_DLLEAF_PATH="$<TARGET_FILE:xs_dlleaf>"
	XS_DLLEAF_LIB_PATH="$<TARGET_FILE:xs_dlleaf_lib>" XS_NOTABLE_PATH="$<TARGET_FILE:xs_notable>")
add_dependencies(test_unwind_leaf xsprofd xs_fpleaf xs_dlleaf xs_dlleaf_lib xs_notable)

# The unwinder on its real BPF maps (root): builds when asked, eviction, held samples.
xsprof_unit_test(test_unwinder SOURCES daemon/unwind/test_unwinder.c LIBS xsprof_unwind)
target_compile_options(test_unwinder PRIVATE -O1 -fno-omit-frame-pointer)

# bench/unwind.sh: a 64-deep recursion with frame pointers, whole in fp and table walks alike.
add_executable(xs_fpdeep workloads/fpdeep.c)
target_compile_options(xs_fpdeep PRIVATE -O2 -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer
	-fno-optimize-sibling-calls)

# JIT code without tables (V8's, Node.js with --perf-basic-prof) walked by its frame pointers,
# beside perf record -g on the same program (needs root, BTF, perf and nodejs: scripts/deps.sh).
xsprof_unit_test(test_unwind_jit SOURCES daemon/unwind/test_unwind_jit.c lib/harness.c)
target_compile_definitions(test_unwind_jit PRIVATE XSPROFD_PATH="$<TARGET_FILE:xsprofd>"
	XS_JIT_HOT_JS="${CMAKE_CURRENT_SOURCE_DIR}/workloads/jit_hot.js")
add_dependencies(test_unwind_jit xsprofd)

# Go without .eh_frame (tests/workloads/gomix, Debian's golang-go: scripts/deps.sh): its
# .gopclntab gives the frames, beside perf record -g on the same program. No Go toolchain:
# the tests fail, saying so.
find_program(XS_GO go)
set(XS_GOMIX ${CMAKE_CURRENT_BINARY_DIR}/xs_gomix)
set(XS_GOMIX_CGO ${CMAKE_CURRENT_BINARY_DIR}/xs_gomix_cgo)
if(XS_GO)
	set(XS_GOMIX_SRC ${CMAKE_CURRENT_SOURCE_DIR}/workloads/gomix)
	add_custom_command(OUTPUT ${XS_GOMIX}
		COMMAND ${CMAKE_COMMAND} -E env GOCACHE=${CMAKE_CURRENT_BINARY_DIR}/gocache
			GOFLAGS=-mod=mod GOTOOLCHAIN=local GOPROXY=off ${XS_GO} build -o ${XS_GOMIX} .
		WORKING_DIRECTORY ${XS_GOMIX_SRC}
		DEPENDS ${XS_GOMIX_SRC}/main.go ${XS_GOMIX_SRC}/go.mod
		COMMENT "go build xs_gomix")
	# The same program linked with cgo (-tags xscgo): C code with .eh_frame, Go code without.
	add_custom_command(OUTPUT ${XS_GOMIX_CGO}
		COMMAND ${CMAKE_COMMAND} -E env GOCACHE=${CMAKE_CURRENT_BINARY_DIR}/gocache
			GOFLAGS=-mod=mod GOTOOLCHAIN=local GOPROXY=off CGO_ENABLED=1
			${XS_GO} build -tags xscgo -o ${XS_GOMIX_CGO} .
		WORKING_DIRECTORY ${XS_GOMIX_SRC}
		DEPENDS ${XS_GOMIX_SRC}/main.go ${XS_GOMIX_SRC}/cgo.go ${XS_GOMIX_SRC}/go.mod
		COMMENT "go build -tags xscgo xs_gomix_cgo")
	add_custom_target(xs_gomix ALL DEPENDS ${XS_GOMIX} ${XS_GOMIX_CGO})
	add_test(NAME unwind_go COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/daemon/unwind/unwind_go.sh ${CMAKE_BINARY_DIR})
	set_tests_properties(unwind_go PROPERTIES TIMEOUT 300)
	foreach(t test_unwind_table test_elf_symtab)
		target_compile_definitions(${t} PRIVATE XS_GOMIX_PATH="${XS_GOMIX}"
			XS_GOMIX_CGO_PATH="${XS_GOMIX_CGO}")
		add_dependencies(${t} xs_gomix)
	endforeach()
else()
	add_test(NAME unwind_go COMMAND sh -c
		"echo 'unwind_go: no go toolchain (apt-get install golang-go)' >&2; exit 1")
	target_compile_definitions(test_unwind_table PRIVATE XS_GOMIX_PATH="" XS_GOMIX_CGO_PATH="")
	target_compile_definitions(test_elf_symtab PRIVATE XS_GOMIX_PATH="" XS_GOMIX_CGO_PATH="")
endif()

# The JVM: no wrong caller from JIT code without frame pointers (Debian's openjdk-17:
# scripts/deps.sh), and whole stacks with -XX:+PreserveFramePointer.
add_test(NAME unwind_java COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/daemon/unwind/unwind_java.sh ${CMAKE_BINARY_DIR})
set_tests_properties(unwind_java PROPERTIES TIMEOUT 300)
xsprof_unit_test(test_unwind_jvm SOURCES daemon/unwind/test_unwind_jvm.c LIBS xsprof_unwind)

# Whole stacks in real software (tests/daemon/unwind/fidelity.sh): Debian's clang++-14 compiling and python3's
# numpy in BLAS/LAPACK, each under the real xsprofd and beside perf (--call-graph dwarf, -g) on
# the same work; xsprofd's stacks must be whole and at least as whole as perf's best mode. Needs
# root, BTF, linux-perf, clang-14 and python3-numpy (scripts/deps.sh); about a minute here.
add_test(NAME fidelity_real_software COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/daemon/unwind/fidelity.sh
	${CMAKE_BINARY_DIR})
set_tests_properties(fidelity_real_software PROPERTIES TIMEOUT 600)
