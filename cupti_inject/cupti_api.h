/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libcupti, opened at run time. Linking it would make a missing or mismatched libcupti stop
 * CUDA from loading the injection library at all; opened by hand, its absence is one message.
 */
#ifndef XSPROF_CUPTI_INJECT_CUPTI_API_H
#define XSPROF_CUPTI_INJECT_CUPTI_API_H

#include <stddef.h>
#include <cupti.h>

#define CUPTI_API_FN(name) __typeof__(&name) name

struct cupti_api {
	void *handle;
	char path[256]; /* what was opened */
	CUPTI_API_FN(cuptiGetVersion);
	CUPTI_API_FN(cuptiGetResultString);
	CUPTI_API_FN(cuptiSubscribe);
#ifdef CUpti_SubscriberParams_STRUCT_SIZE
	CUPTI_API_FN(cuptiSubscribe_v2);
#endif
	CUPTI_API_FN(cuptiUnsubscribe);
	CUPTI_API_FN(cuptiEnableCallback);
	CUPTI_API_FN(cuptiSetThreadIdType);
	CUPTI_API_FN(cuptiActivityRegisterTimestampCallback);
	CUPTI_API_FN(cuptiActivityRegisterCallbacks);
	CUPTI_API_FN(cuptiActivityEnable);
	CUPTI_API_FN(cuptiActivityDisable);
	CUPTI_API_FN(cuptiActivityGetNextRecord);
	CUPTI_API_FN(cuptiActivityGetNumDroppedRecords);
	CUPTI_API_FN(cuptiActivityFlushAll);
	CUPTI_API_FN(cuptiActivityFlushPeriod);
	/* Optional (NULL where this libcupti lacks them): API records of chosen calls only. */
	CUPTI_API_FN(cuptiActivityEnableRuntimeApi);
	CUPTI_API_FN(cuptiActivityEnableDriverApi);
};

/*
 * Open libcupti: `override` if set, else libcupti.so.<major of the headers we built with>,
 * else fallback (the build's libcupti), and resolve every function. 0 or -ENOENT (not found,
 * why in err) or -ENOSYS (a function is missing: wrong libcupti).
 */
int cupti_api__open(struct cupti_api *api, const char *override, const char *fallback, char *err,
		    size_t err_len);

/* CUPTI's text for a result, safe before the library is open. */
const char *cupti_api__strerror(const struct cupti_api *api, CUptiResult res);

#endif
