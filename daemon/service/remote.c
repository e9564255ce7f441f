/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The network listener's own rules: TLS from --tls-cert/--tls-key (the HTTP library's TLS),
 * client certificates signed by --tls-client-ca as a second way in (for go tool pprof, which
 * sends no token), and what a network client may do: read profiles (GET) unless
 * --listen-allow-writes.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gnutls/gnutls.h>
#include <microhttpd.h>

#include "daemon/base/secret.h"
#include "daemon/log.h"
#include "daemon/options.h"
#include "daemon/service/http.h"
#include "daemon/service/internal.h"

#define MAX_PEM (256 * 1024)

/* A PEM file, whole, NUL-terminated. The key must not be readable by others. 0 or -errno. */
static int read_pem(const char *path, bool secret, char **ret)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	struct stat st;
	char *buf;
	ssize_t n;

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_size > MAX_PEM ||
	    (secret && (st.st_mode & 0077))) {
		close(fd);
		return st.st_size > MAX_PEM ? -EFBIG : -EPERM;
	}
	buf = malloc((size_t)st.st_size + 1);
	n = buf ? read(fd, buf, (size_t)st.st_size) : -1;
	close(fd);
	if (n < 0 || !strstr(buf ? (buf[n] = '\0', buf) : "", "-----BEGIN ")) {
		free(buf);
		return n < 0 ? -EIO : -EINVAL;
	}
	*ret = buf;
	return 0;
}

static int load_one(const char *flag, const char *path, bool secret, char **ret)
{
	int err = read_pem(path, secret, ret);

	if (err)
		log_err("%s %s: %s", flag, path,
			err == -EINVAL	? "not a PEM file"
			: err == -EFBIG ? "over 256 KiB"
			: err == -EPERM ? (secret ? "not a regular file, or readable by group or "
						    "others: chmod 600 it"
						  : "not a regular file")
					: strerror(-err));
	return err;
}

/* The TLS material of the network listener, or *ret NULL for plain HTTP. 0 or -errno. */
int remote__tls(struct service *s, struct http_tls *tls, const struct http_tls **ret)
{
	const struct xsprofd_opts *o = s->opts;
	int err;

	*ret = NULL;
	if (!o->tls_cert)
		return 0;
	err = load_one("--tls-cert", o->tls_cert, false, &tls->cert);
	if (!err)
		err = load_one("--tls-key", o->tls_key, true, &tls->key);
	if (!err && o->tls_client_ca)
		err = load_one("--tls-client-ca", o->tls_client_ca, false, &tls->ca);
	if (!err)
		*ret = tls;
	return err;
}

void remote__tls_free(struct http_tls *tls)
{
	if (tls->key)
		explicit_bzero(tls->key, strlen(tls->key));
	free(tls->cert);
	free(tls->key);
	free(tls->ca);
	memset(tls, 0, sizeof(*tls));
}

/* A client certificate that --tls-client-ca signed, checked by the TLS library. */
bool remote__cert_ok(struct service *s, struct MHD_Connection *c)
{
	const union MHD_ConnectionInfo *ci;
	unsigned int status = ~0u, n = 0;

	if (!s->opts->tls_client_ca)
		return false;
	ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_GNUTLS_SESSION);
	if (!ci || !ci->tls_session)
		return false;
	if (!gnutls_certificate_get_peers((gnutls_session_t)ci->tls_session, &n) || !n)
		return false;
	return !gnutls_certificate_verify_peers2((gnutls_session_t)ci->tls_session, &status) &&
	       !status;
}

/* Network clients read (GET) unless --listen-allow-writes; false with the reply made. */
bool remote__may(struct service *s, struct req *q, const char *method, struct MHD_Connection *c,
		 enum MHD_Result *ret)
{
	if (!q->tcp || s->opts->listen_allow_writes || !strcmp(method, "GET") ||
	    !strcmp(method, "HEAD"))
		return true;
	*ret = reply__error(c, 403, "the network API is read-only",
			    "GET profiles and /debug/pprof/profile; the daemon's "
			    "--listen-allow-writes lets network clients attach and record");
	return false;
}

/* One base64 character's value, or -1. */
static int b64_value(unsigned char ch)
{
	if (ch >= 'A' && ch <= 'Z')
		return ch - 'A';
	if (ch >= 'a' && ch <= 'z')
		return ch - 'a' + 26;
	if (ch >= '0' && ch <= '9')
		return ch - '0' + 52;
	return ch == '+' ? 62 : ch == '/' ? 63 : -1;
}

/* Standard base64 (padding optional) into out, NUL-terminated; -1 when malformed or too long. */
static int b64_decode(const char *in, char *out, size_t size)
{
	unsigned int acc = 0, bits = 0;
	size_t n = 0;

	for (; *in && *in != '='; in++) {
		int v = b64_value((unsigned char)*in);

		if (v < 0)
			return -1;
		acc = (acc << 6) | (unsigned int)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			if (n + 1 >= size)
				return -1;
			out[n++] = (char)((acc >> bits) & 0xff);
		}
	}
	out[n] = '\0';
	return (int)n;
}

/*
 * The token as HTTP Basic auth's password (any user name): what a URL's user info becomes, for
 * clients that cannot send a bearer header (go tool pprof https://x:TOKEN@host:port/).
 * Compared in time that depends only on the length sent.
 */
bool remote__basic_ok(struct service *s, struct MHD_Connection *c)
{
	const char *h = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
	char dec[600], *pw;
	bool ok;

	if (!s->token || !h || strncasecmp(h, "Basic ", 6) || strlen(h + 6) > 780 ||
	    b64_decode(h + 6, dec, sizeof(dec)) < 0 || !(pw = strchr(dec, ':')))
		return false;
	ok = secret__equal(pw + 1, s->token);
	explicit_bzero(dec, sizeof(dec));
	return ok;
}
