# SPDX-License-Identifier: Apache-2.0
# Symbolizer unit tests (daemon/symbolize) and the fixture binaries they read.
add_subdirectory(symbolize_fixtures)

xsprof_unit_test(test_proc_maps SOURCES test_proc_maps.c LIBS xsprof_symbolize)
xsprof_unit_test(test_kallsyms SOURCES test_kallsyms.c LIBS xsprof_symbolize)
xsprof_unit_test(test_elf_symtab SOURCES test_elf_symtab.c LIBS xsprof_symbolize)
xsprof_unit_test(test_symbolizer SOURCES test_symbolizer.c LIBS xsprof_symbolize dl)

foreach(t test_elf_symtab test_symbolizer)
	target_compile_definitions(${t} PRIVATE ${SYMFIX_DEFS})
	target_include_directories(${t} PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/symbolize_fixtures)
	add_dependencies(${t} symfix_all)
endforeach()
