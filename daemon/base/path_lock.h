/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One owner per socket path: a lock file beside the socket ("PATH.lock", flock) taken before the
 * socket path is touched, and held for as long as the socket is served. A second daemon with the
 * same path fails without unlinking anything; the lock file itself is never removed (removing it
 * would let two daemons lock two different files of the same name).
 */
#ifndef XSPROF_DAEMON_BASE_PATH_LOCK_H
#define XSPROF_DAEMON_BASE_PATH_LOCK_H

#include <stdbool.h>
#include <sys/types.h>

/*
 * Lock "path.lock" (created 0600 if missing) and write our pid in it. 0 with *ret_fd the lock
 * (close it to release); -EADDRINUSE when another process holds it (*ret_holder its pid, or 0
 * when unknown); another -errno when the lock file cannot be made.
 */
int path_lock__take(const char *path, int *ret_fd, pid_t *ret_holder);

/* Identity of the socket file we bound, so that only our own is ever removed. */
struct sock_file {
	dev_t dev;
	ino_t ino;
	bool known;
};

/* Remember what is at path now (just after bind). 0 or -errno. */
int sock_file__note(struct sock_file *f, const char *path);
/* Unlink path only if it is still the file noted (another daemon may have replaced it). */
void sock_file__remove_if_ours(const struct sock_file *f, const char *path);
/*
 * Before binding, with the lock held: a socket file left by a daemon that died is removed; a
 * socket someone still listens on (-EADDRINUSE) or any other kind of file (-EEXIST) is not ours.
 */
int sock_file__remove_stale(const char *path);
/*
 * Bind the Unix socket fd to path with mode, and group gid unless it is (gid_t)-1, noted in
 * *ret: bound in a directory of our own beside path, its mode and owner set there, then renamed
 * into place, so path never holds it with another mode or owner, and no chmod or chown by a
 * path that others could swap for a link. 0 or -errno (-ENAMETOOLONG when the temporary name
 * does not fit a socket address).
 */
int sock_file__bind(int fd, const char *path, mode_t mode, gid_t gid, struct sock_file *ret);

#endif
