/* SPDX-License-Identifier: MIT */
/* test_asuser.c — a root thread takes a user's file-system identity and
 * gives it back: while entered, a root-only file is EACCES for it and a
 * world-readable one opens; another thread of the process stays root all
 * along; after leaving, root's access is back.  Skipped when not root. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <cmocka.h>

#include "base/asuser.h"
#include "test_util.h"

#define NOBODY 65534

struct fx {
	char dir[64], secret[128], open_file[128], closed_dir[128], in_closed[160];
};

static int setup(void **state)
{
	static struct fx fx;

	if (!test_tmpdir(fx.dir, sizeof(fx.dir)))
		return -1;
	chmod(fx.dir, 0755);
	snprintf(fx.secret, sizeof(fx.secret), "%s/secret", fx.dir);
	snprintf(fx.open_file, sizeof(fx.open_file), "%s/open", fx.dir);
	snprintf(fx.closed_dir, sizeof(fx.closed_dir), "%s/closed", fx.dir);
	snprintf(fx.in_closed, sizeof(fx.in_closed), "%s/closed/f", fx.dir);
	test_write(fx.dir, "secret", "root only\n");
	test_write(fx.dir, "open", "anyone\n");
	test_write(fx.dir, "closed/f", "anyone, in a closed directory\n");
	chmod(fx.secret, 0600);
	chmod(fx.open_file, 0644);
	chmod(fx.in_closed, 0644);
	chmod(fx.closed_dir, 0700);
	*state = &fx;
	return 0;
}

static int teardown(void **state)
{
	struct fx *fx = *state;

	test_rmrf(fx->dir);
	return 0;
}

/* open(path) on this thread: 0 or -errno */
static int try_open(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	close(fd);
	return 0;
}

struct other {
	const char *path;
	int go, done, result;
	pthread_mutex_t mu;
	pthread_cond_t cv;
};

/* another thread: waits for the main thread to enter, then opens path */
static void *other_thread(void *arg)
{
	struct other *o = arg;

	pthread_mutex_lock(&o->mu);
	while (!o->go)
		pthread_cond_wait(&o->cv, &o->mu);
	o->result = try_open(o->path);
	o->done = 1;
	pthread_cond_broadcast(&o->cv);
	pthread_mutex_unlock(&o->mu);
	return NULL;
}

static void test_enter_leave(void **state)
{
	struct fx *fx = *state;
	struct other o = { .path = fx->secret, .mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER };
	struct asuser u;
	struct asuser_saved saved;
	pthread_t th;

	if (geteuid() != 0) {
		test_skip_host("root", "not root: taking another user's identity needs root");
	}
	assert_int_equal(asuser_lookup(NOBODY, NOBODY, &u), 0);
	assert_int_equal(u.uid, NOBODY);
	assert_true(u.n_groups >= 1);
	assert_int_equal(pthread_create(&th, NULL, other_thread, &o), 0);

	assert_int_equal(asuser_enter(&u, &saved), 0);
	assert_int_equal(try_open(fx->secret), -EACCES);
	assert_int_equal(try_open(fx->open_file), 0);
	assert_int_equal(try_open(fx->in_closed), -EACCES);   /* the directory is closed to it */
	/* the other thread is root meanwhile */
	pthread_mutex_lock(&o.mu);
	o.go = 1;
	pthread_cond_broadcast(&o.cv);
	while (!o.done)
		pthread_cond_wait(&o.cv, &o.mu);
	pthread_mutex_unlock(&o.mu);
	assert_int_equal(o.result, 0);
	assert_int_equal(try_open(fx->secret), -EACCES);      /* and this one still not */
	asuser_leave(&saved);
	pthread_join(th, NULL);

	assert_int_equal(try_open(fx->secret), 0);
	assert_int_equal(try_open(fx->in_closed), 0);
	asuser_leave(&saved);                                 /* twice: a no-op */
	assert_int_equal(try_open(fx->secret), 0);
}

static void test_root_as_root(void **state)
{
	struct fx *fx = *state;
	struct asuser u;
	struct asuser_saved saved;

	if (geteuid() != 0) {
		/* not root: only itself */
		assert_int_equal(asuser_lookup(geteuid(), getegid(), &u), 0);
		assert_int_equal(asuser_enter(&u, &saved), 0);
		asuser_leave(&saved);
		assert_int_equal(asuser_lookup(geteuid() + 1, getegid(), &u), 0);
		assert_int_equal(asuser_enter(&u, &saved), -EPERM);
		return;
	}
	assert_int_equal(asuser_lookup(0, 0, &u), 0);
	assert_int_equal(asuser_enter(&u, &saved), 0);
	assert_int_equal(try_open(fx->secret), 0);
	asuser_leave(&saved);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_enter_leave),
		cmocka_unit_test(test_root_as_root),
	};

	return cmocka_run_group_tests_name("asuser", tests, setup, teardown);
}
