# SPDX-License-Identifier: Apache-2.0
# Symbolizer unit tests (daemon/symbolize) and the fixture binaries they read.
add_subdirectory(daemon/symbolize/fixtures symbolize_fixtures)

xsprof_unit_test(test_proc_maps SOURCES daemon/symbolize/test_proc_maps.c LIBS xsprof_symbolize)
xsprof_unit_test(test_kallsyms SOURCES daemon/symbolize/test_kallsyms.c LIBS xsprof_symbolize)
xsprof_unit_test(test_elf_symtab SOURCES daemon/symbolize/test_elf_symtab.c LIBS xsprof_symbolize)
xsprof_unit_test(test_perf_map SOURCES daemon/symbolize/test_perf_map.c LIBS xsprof_symbolize)
xsprof_unit_test(test_symbolizer SOURCES daemon/symbolize/test_symbolizer.c LIBS xsprof_symbolize dl)
xsprof_unit_test(test_symbolizer_real SOURCES daemon/symbolize/test_symbolizer_real.c LIBS xsprof_symbolize dl
	pthread)

foreach(t test_elf_symtab test_symbolizer test_symbolizer_real)
	target_compile_definitions(${t} PRIVATE ${SYMFIX_DEFS})
	target_include_directories(${t} PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/daemon/symbolize/fixtures)
	add_dependencies(${t} symfix_all)
endforeach()

# The real xsprofd, system-wide, naming hundreds of 20 ms children (needs root and BTF).
xsprof_unit_test(test_short_lived SOURCES daemon/symbolize/test_short_lived.c lib/harness.c LIBS m)
target_compile_definitions(test_short_lived PRIVATE ${SYMFIX_DEFS}
	XSPROFD_PATH="$<TARGET_FILE:xsprofd>")
add_dependencies(test_short_lived xsprofd symfix_all)

# Symbolization speed beside addr2line and perf: bench/symbolize.sh runs it.
add_executable(xs_symbolize_bench ${PROJECT_SOURCE_DIR}/bench/symbolize.c)
target_link_libraries(xs_symbolize_bench PRIVATE xsprof_symbolize)

# libFuzzer harnesses for the parsers of what profiled processes control (-DXSPROF_FUZZ=ON).
option(XSPROF_FUZZ "Build the libFuzzer harnesses in tests/fuzz (needs clang)" OFF)
if(XSPROF_FUZZ)
	add_subdirectory(fuzz)
endif()
