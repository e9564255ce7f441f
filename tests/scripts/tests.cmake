# SPDX-License-Identifier: Apache-2.0
# The house's arrows point one way: no include circle inside these folders
# (scripts/include_graph.sh; output/'s rooms: model <- analyses <- writers).
add_test(NAME include_graph COMMAND ${PROJECT_SOURCE_DIR}/scripts/include_graph.sh
	${PROJECT_SOURCE_DIR}/output ${PROJECT_SOURCE_DIR}/output/model
	${PROJECT_SOURCE_DIR}/output/gpu_report ${PROJECT_SOURCE_DIR}/output/job
	${PROJECT_SOURCE_DIR}/output/diff ${PROJECT_SOURCE_DIR}/daemon/service
	${PROJECT_SOURCE_DIR}/daemon/ctl)
