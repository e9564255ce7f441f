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

# git as xsprof-history asks it, on a repository made in the test (test_history_git.c).
xsprof_unit_test(test_history_git
	SOURCES output/history/test_history_git.c
	LIBS xsprof_history_git)

# The whole of it (history_e2e.sh): a git repository of 20 commits profiled by the real xsprofd
# on the GPU double, stored, steps found and named, ci on pull-request-like branches, the
# shipped CI jobs' lines run as written; on SQLite and on PostgreSQL (with_postgres.sh).
add_test(NAME history_e2e
	COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/output/history/with_postgres.sh
		${CMAKE_CURRENT_SOURCE_DIR}/output/history/history_e2e.sh ${PROJECT_BINARY_DIR})
set_tests_properties(history_e2e PROPERTIES TIMEOUT 900 ENVIRONMENT XSPROF_PG_CMD_TIMEOUT=840)

# Rank statistics and the renderers (test_history_stats.c): p against enumeration, verdicts,
# steps over seeded histories, JSON/Markdown/badge.
xsprof_unit_test(test_history_stats
	SOURCES output/history/test_history_stats.c
	LIBS xsprof_history_stats PkgConfig::JSONC)
