# SPDX-License-Identifier: Apache-2.0
# Profiles over time (issue 55): a run's figures from folded stacks and from GPU reports xsprofd
# wrote, and the history store on SQLite.
xsprof_unit_test(test_history_figures
	SOURCES output/history/test_history_figures.c
	LIBS xsprof_history_store)
xsprof_unit_test(test_history_store
	SOURCES output/history/test_history_store.c
	LIBS xsprof_history_store)
