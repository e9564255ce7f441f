# SPDX-License-Identifier: Apache-2.0
# Profiles over time (issue 55): a run's figures from folded stacks and from GPU reports xsprofd
# wrote, and the history store, on SQLite and, through with_postgres.sh (a PostgreSQL server of
# the test's own), on PostgreSQL: the same test binary, told by XSPROF_TEST_PG_URL.
xsprof_unit_test(test_history_figures
	SOURCES output/history/test_history_figures.c
	LIBS xsprof_history_store)
xsprof_unit_test(test_history_store
	SOURCES output/history/test_history_store.c
	LIBS xsprof_history_store)
if(XSPROF_HISTORY_PG)
	add_test(NAME test_history_store_pg
		COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/output/history/with_postgres.sh
			$<TARGET_FILE:test_history_store> --verbose=0 -j1)
	set_tests_properties(test_history_store_pg PROPERTIES TIMEOUT 300)
else()
	message(WARNING "xsprof: no libpq: test_history_store_pg (the store on PostgreSQL) is "
		"left out")
endif()
