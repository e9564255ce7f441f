// SPDX-License-Identifier: Apache-2.0
/*
 * The CUPTI callback ids the daemon names launches by (daemon/cuda/cuda_api.c, typed by hand)
 * against the real libcupti: each id must be the function CUPTI itself calls it. No GPU needed:
 * cuptiGetCallbackName reads CUPTI's own table.
 */
#include <criterion/criterion.h>
#include <string.h>

#include <cupti.h>

#include "cupti_inject/xsprof_wire.h"
#include "daemon/cuda/cuda_api.h"

/* CUPTI's name is ours, or ours with its version ("cudaLaunchKernel_v7000"). */
static bool same_function(const char *ours, const char *cuptis)
{
	size_t n = strlen(ours);

	if (strncmp(ours, cuptis, n))
		return false;
	if (!cuptis[n])
		return true;
	if (strncmp(cuptis + n, "_v", 2) || !cuptis[n + 2])
		return false;
	return strspn(cuptis + n + 2, "0123456789") == strlen(cuptis + n + 2);
}

Test(cupti_ids, every_launch_id_is_the_function_cupti_names)
{
	cr_assert_gt(cupti_nr_apis, 20);
	for (size_t i = 0; i < cupti_nr_apis; i++) {
		const struct cupti_api *a = &cupti_apis[i];
		const char *name = NULL;
		CUptiResult r;

		cr_assert(a->domain == CUPTI_CB_DOMAIN_DRIVER_API ||
				  a->domain == CUPTI_CB_DOMAIN_RUNTIME_API,
			  "%s: domain %u", a->name, a->domain);
		r = cuptiGetCallbackName((CUpti_CallbackDomain)a->domain, a->cbid, &name);
		cr_assert_eq(r, CUPTI_SUCCESS, "%s: CUPTI knows no callback %u in domain %u",
			     a->name, a->cbid, a->domain);
		cr_expect(same_function(a->name, name), "callback %u of domain %u is %s, not %s",
			  a->cbid, a->domain, name, a->name);
		cr_expect_str_eq(cupti_api__name(XSPROF_USDT_API(a->domain, a->cbid)), a->name);
	}
}

Test(cupti_ids, the_launches_libxsprof_cupti_reports_are_named)
{
	/* A few the injection library fires xsprof:launch for (cupti_inject/inject.c). */
	static const struct {
		CUpti_CallbackDomain domain;
		CUpti_CallbackId cbid;
	} fired[] = {
		{CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000},
		{CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000},
		{CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000},
		{CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020},
		{CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_v3020},
		{CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel},
	};

	for (size_t i = 0; i < sizeof(fired) / sizeof(fired[0]); i++)
		cr_expect_not_null(cupti_api__name(XSPROF_USDT_API(fired[i].domain, fired[i].cbid)),
				   "callback %u of domain %u has no name here", fired[i].cbid,
				   fired[i].domain);
}
