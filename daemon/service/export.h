/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Export sinks: each rolling-window slice, once closed, pushed to the profile stores a fleet
 * runs, from a thread of their own so the loop (sampling, the API) never waits on a store.
 * - otlp: OTLP/HTTP protobuf (output/otlp.h) POSTed to the URL as given (the OpenTelemetry
 *   Collector's and Pyroscope's .../v1development/profiles);
 * - pyroscope: POST URL/ingest?name=NAME{labels}&from=&until=&format=pprof&sampleRate=HZ,
 *   the gzipped pprof as the multipart field "profile" (Pyroscope's HTTP ingest API);
 * - parca: POST URL/profiles/writeraw, the gRPC-gateway JSON of WriteRawRequest: one series
 *   with the labels (__name__ NAME) and the pprof as rawProfile (base64), normalized.
 * A slice is encoded on the loop when it closes (its names are the symbolizer's then) and
 * queued; each sink pushes what it has queued every period. The queue is capped in bytes
 * (every sink together, --export-queue-kb): past the cap a sink's oldest slice goes, counted.
 * A push that fails (no connection, HTTP 5xx, 408, 429) is retried after 1 s, doubling up to
 * 32 s; a store that refuses a slice (another 4xx) does not get it again (counted rejected).
 * Credentials come from files only: a bearer token, basic auth ("user:password"), the tenant
 * header X-Scope-OrgID; TLS with a CA file and a client certificate and key.
 */
#ifndef XSPROF_DAEMON_SERVICE_EXPORT_H
#define XSPROF_DAEMON_SERVICE_EXPORT_H

#include <stddef.h>
#include <stdint.h>

struct exporter;
struct json_object;
struct profile_data;

#define EXPORT_MAX_SINKS      4
#define EXPORT_MAX_LABELS     16
#define EXPORT_DEFAULT_KB     (64 * 1024)
#define EXPORT_DEFAULT_PERIOD 10
#define EXPORT_BACKOFF_MAX_S  32

/*
 * From the sink specs ("FORMAT,url=URL[,period=S][,name=APP][,ca-file=F][,cert=F][,key=F]
 * [,token-file=F][,basic-auth-file=F][,tenant-file=F]"), static labels ("KEY=VALUE") and the
 * queue's cap. Reads the credential files now. NULL with a message for the user in err (a bad
 * URL, an unknown format or key, a file it cannot read).
 */
struct exporter *exporter__new(const char *const *specs, size_t n, const char *const *labels,
			       size_t nr_labels, unsigned int queue_kb, unsigned int freq_hz,
			       char *err, size_t err_size);
/* Starts the pushing thread. 0 or -errno. */
int exporter__start(struct exporter *e);
/* Stops the thread (a push in flight ends within its timeout) and frees. NULL is fine. */
void exporter__free(struct exporter *e);
/* A closed slice, encoded for each sink and queued. For lasting.on_slice. */
void exporter__on_slice(void *e, const struct profile_data *pd);
/* The status object "export": totals and each sink. */
struct json_object *exporter__json(struct exporter *e);

#endif
