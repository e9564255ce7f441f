# SPDX-License-Identifier: Apache-2.0
# Everything installed around the binaries (systemd unit, config, man pages, completion, sysusers)
# and the .deb. Included at the end of the top-level CMakeLists.txt, after the targets exist.
#
#   cpack -G DEB            (in the build folder) -> xsprof_VERSION_ARCH.deb
#   cmake --install BUILD --prefix /usr/local     the same files without a package
#
# Files that name other installed files (the unit's ExecStart=, the man pages' FILES) are filled
# in at install time from the prefix the install really uses: a package installs to /usr while
# the build was configured for /usr/local.

include(GNUInstallDirs)

set(XSPROF_PACKAGING_DIR ${CMAKE_CURRENT_LIST_DIR})
set(XSPROF_PACKAGING_OUT ${CMAKE_BINARY_DIR}/packaging)
file(MAKE_DIRECTORY ${XSPROF_PACKAGING_OUT})

# Where systemd looks for units. Absolute, outside the prefix: systemd reads no /usr/local.
if(NOT DEFINED XSPROF_SYSTEMD_UNITDIR)
	pkg_get_variable(_xsprof_unitdir systemd systemdsystemunitdir)
	if(NOT _xsprof_unitdir)
		set(_xsprof_unitdir /lib/systemd/system)
	endif()
	set(XSPROF_SYSTEMD_UNITDIR ${_xsprof_unitdir} CACHE PATH "Where xsprofd.service is installed")
endif()
set(XSPROF_DEB_MAINTAINER "xsprof maintainers <maintainers@users.noreply.a-seed-9069302d.example>"
	CACHE STRING "Maintainer field of the .deb")
# xsprofd reads /etc/xsprof/xsprofd.conf whatever the prefix (daemon/options.h).
set(XSPROF_CONFIG_DIR /etc/xsprof CACHE PATH "Where the default xsprofd.conf is installed")

# xsprof_install_configured(TEMPLATE DESTINATION [NAME NAME] [GZIP]): fill @XSPROF_BINDIR@,
# @XSPROF_LIBDIR@ and @XSPROF_VERSION@ in TEMPLATE at install time, optionally gzip it (man
# pages), and install it as NAME (default: TEMPLATE's name).
function(xsprof_install_configured template destination)
	cmake_parse_arguments(A "GZIP" "NAME" "" ${ARGN})
	get_filename_component(name ${template} NAME)
	if(A_NAME)
		set(name ${A_NAME})
	endif()
	set(out ${XSPROF_PACKAGING_OUT}/${name})
	set(installed ${out})
	if(A_GZIP)
		set(installed ${out}.gz)
	endif()
	set(code "
		set(XSPROF_BINDIR \"\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_BINDIR}\")
		set(XSPROF_LIBDIR \"\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_LIBDIR}\")
		set(XSPROF_INCLUDEDIR \"\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_INCLUDEDIR}\")
		set(XSPROF_VERSION \"${PROJECT_VERSION}\")
		configure_file(\"${template}\" \"${out}\" @ONLY)")
	if(A_GZIP)
		string(APPEND code "
		execute_process(COMMAND gzip -9 -n -c \"${out}\" OUTPUT_FILE \"${out}.gz\"
			RESULT_VARIABLE rc)
		if(rc)
			message(FATAL_ERROR \"gzip ${out} failed\")
		endif()")
	endif()
	install(CODE "${code}")
	install(FILES ${installed} DESTINATION ${destination})
endfunction()

xsprof_install_configured(${CMAKE_SOURCE_DIR}/systemd/xsprofd.service.in ${XSPROF_SYSTEMD_UNITDIR}
	NAME xsprofd.service)
xsprof_install_configured(${XSPROF_PACKAGING_DIR}/man/xsprofd.8 ${CMAKE_INSTALL_MANDIR}/man8 GZIP)
xsprof_install_configured(${XSPROF_PACKAGING_DIR}/man/xsprofctl.1 ${CMAKE_INSTALL_MANDIR}/man1 GZIP)
xsprof_install_configured(${XSPROF_PACKAGING_DIR}/man/xsprof-diff.1 ${CMAKE_INSTALL_MANDIR}/man1 GZIP)
xsprof_install_configured(${XSPROF_PACKAGING_DIR}/man/xsprof-history.1 ${CMAKE_INSTALL_MANDIR}/man1 GZIP)

# xsprof/scope.h for programs to name their phases (header only), and its pkg-config file.
install(FILES ${CMAKE_SOURCE_DIR}/cupti_inject/include/xsprof/scope.h
	DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/xsprof)
xsprof_install_configured(${XSPROF_PACKAGING_DIR}/xsprof.pc.in ${CMAKE_INSTALL_LIBDIR}/pkgconfig
	NAME xsprof.pc)

install(FILES ${XSPROF_PACKAGING_DIR}/completion/xsprofctl ${XSPROF_PACKAGING_DIR}/completion/xsprofd
	${XSPROF_PACKAGING_DIR}/completion/xsprof-diff ${XSPROF_PACKAGING_DIR}/completion/xsprof-history
	DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions)
# Not under LIBDIR: sysusers.d has no multiarch variant.
install(FILES ${XSPROF_PACKAGING_DIR}/sysusers.d/xsprof.conf DESTINATION lib/sysusers.d)
install(FILES ${XSPROF_PACKAGING_DIR}/debian/copyright DESTINATION ${CMAKE_INSTALL_DOCDIR})
# The GPU report's rules, thresholds and JSON schema (xsprofd(8) --report gpu points here).
install(FILES ${PROJECT_SOURCE_DIR}/output/gpu_report/GPU_REPORT.md ${PROJECT_SOURCE_DIR}/output/job/JOB_REPORT.md
	DESTINATION ${CMAKE_INSTALL_DOCDIR})
# Debian wants a changelog with every package; a native one is changelog.gz.
string(TIMESTAMP XSPROF_CHANGELOG_DATE "%a, %d %b %Y %H:%M:%S +0000" UTC)
configure_file(${XSPROF_PACKAGING_DIR}/debian/changelog.in ${XSPROF_PACKAGING_OUT}/changelog @ONLY)
install(CODE "execute_process(COMMAND gzip -9 -n -c \"${XSPROF_PACKAGING_OUT}/changelog\"
	OUTPUT_FILE \"${XSPROF_PACKAGING_OUT}/changelog.gz\")")
install(FILES ${XSPROF_PACKAGING_OUT}/changelog.gz DESTINATION ${CMAKE_INSTALL_DOCDIR})

# The config: a package marks it a conffile (dpkg keeps the admin's edits); a plain
# `cmake --install` leaves an existing one alone.
install(CODE "
	if(EXISTS \"\$ENV{DESTDIR}${XSPROF_CONFIG_DIR}/xsprofd.conf\")
		message(STATUS \"Keeping: \$ENV{DESTDIR}${XSPROF_CONFIG_DIR}/xsprofd.conf\")
	else()
		file(INSTALL \"${XSPROF_PACKAGING_DIR}/xsprofd.conf\"
			DESTINATION \"${XSPROF_CONFIG_DIR}\"
			FILE_PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ)
	endif()")

# ---- the .deb ----
file(WRITE ${XSPROF_PACKAGING_OUT}/conffiles "${XSPROF_CONFIG_DIR}/xsprofd.conf\n")
foreach(script postinst prerm postrm)
	configure_file(${XSPROF_PACKAGING_DIR}/debian/${script} ${XSPROF_PACKAGING_OUT}/${script}
		COPYONLY)
endforeach()

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME xsprof)
set(CPACK_PACKAGE_VENDOR "xsprof")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT ${XSPROF_DEB_MAINTAINER})
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "system-wide CPU and GPU profiler for Linux (BPF, CUDA)")
# CPack puts the summary first; this is the long part.
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION "xsprofd samples the kernel and user stacks of every CPU with CO-RE BPF
programs, catches the CPU stacks that launch CUDA work, joins them with the
GPU's own timing from a CUPTI injection library, and writes folded stacks and
interactive SVG flamegraphs.
.
It runs once from the command line, or as an always-on systemd service
(xsprofd.service, installed but not enabled) that keeps a rolling window of
profiles and answers xsprofctl on a Unix socket. Members of group xsprof may
profile their own processes.
.
Needs a kernel with BTF (/sys/kernel/btf/vmlinux).")
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# Found by dpkg-shlibdeps: libbpf, libelf, libsystemd, libmicrohttpd, json-c, ... Named here:
# what the maintainer scripts run (deb-systemd-invoke is in essential init-system-helpers).
set(CPACK_DEBIAN_PACKAGE_DEPENDS "adduser")
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "bash-completion")
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
	${XSPROF_PACKAGING_OUT}/postinst ${XSPROF_PACKAGING_OUT}/prerm
	${XSPROF_PACKAGING_OUT}/postrm ${XSPROF_PACKAGING_OUT}/conffiles)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
set(CPACK_SOURCE_GENERATOR "")
include(CPack)
