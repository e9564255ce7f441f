// SPDX-License-Identifier: Apache-2.0
#include "cupti_inject/cupti_api.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

static void *try_open(const char *path, char *err, size_t err_len)
{
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);

	if (!h)
		snprintf(err, err_len, "%s", dlerror());
	return h;
}

int cupti_api__open(struct cupti_api *api, const char *override, const char *fallback, char *err,
		    size_t err_len)
{
	char soname[32];
	const char *tried[3];
	size_t n = 0;

	memset(api, 0, sizeof(*api));
	snprintf(soname, sizeof(soname), "libcupti.so.%d", CUPTI_API_VERSION / 10000);
	if (override && override[0]) {
		tried[n++] = override;
	} else {
		tried[n++] = soname;
		if (fallback && fallback[0])
			tried[n++] = fallback;
	}
	for (size_t i = 0; i < n && !api->handle; i++) {
		api->handle = try_open(tried[i], err, err_len);
		if (api->handle)
			snprintf(api->path, sizeof(api->path), "%s", tried[i]);
	}
	if (!api->handle)
		return -ENOENT;

#define RESOLVE(name)                                                             \
	do {                                                                      \
		*(void **)&api->name = dlsym(api->handle, #name);                 \
		if (!api->name) {                                                 \
			snprintf(err, err_len, "%s has no %s", api->path, #name); \
			goto missing;                                             \
		}                                                                 \
	} while (0)

	RESOLVE(cuptiGetVersion);
	RESOLVE(cuptiGetResultString);
	RESOLVE(cuptiSubscribe);
#ifdef CUpti_SubscriberParams_STRUCT_SIZE
	/* Optional: only newer libcupti names the tool that already holds the process. */
	*(void **)&api->cuptiSubscribe_v2 = dlsym(api->handle, "cuptiSubscribe_v2");
#endif
	RESOLVE(cuptiUnsubscribe);
	RESOLVE(cuptiEnableCallback);
	RESOLVE(cuptiSetThreadIdType);
	RESOLVE(cuptiActivityRegisterTimestampCallback);
	RESOLVE(cuptiActivityRegisterCallbacks);
	RESOLVE(cuptiActivityEnable);
	RESOLVE(cuptiActivityDisable);
	RESOLVE(cuptiActivityGetNextRecord);
	RESOLVE(cuptiActivityGetNumDroppedRecords);
	RESOLVE(cuptiActivityFlushAll);
	RESOLVE(cuptiActivityFlushPeriod);
	*(void **)&api->cuptiActivityEnableRuntimeApi =
		dlsym(api->handle, "cuptiActivityEnableRuntimeApi");
	*(void **)&api->cuptiActivityEnableDriverApi =
		dlsym(api->handle, "cuptiActivityEnableDriverApi");
#undef RESOLVE
	return 0;

missing:
	dlclose(api->handle);
	api->handle = NULL;
	return -ENOSYS;
}

const char *cupti_api__strerror(const struct cupti_api *api, CUptiResult res)
{
	const char *s = NULL;

	if (api->cuptiGetResultString && api->cuptiGetResultString(res, &s) == CUPTI_SUCCESS && s)
		return s;
	return "unknown CUPTI error";
}
