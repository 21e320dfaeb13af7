/* SPDX-License-Identifier: MIT */
/* test_writers.c — naming who else writes a knob, on a tree built here:
 * a running tuned with its profile, irqbalance for IRQ paths only, the
 * sysctl.d line that sets a key (and a same-named file in /etc masking the
 * one in /usr/lib), the kubelet's static CPU manager, a process holding the
 * file open for writing (and one holding it read-only, which is not named);
 * nothing found on a quiet tree; on this host, this test's own descriptor. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "base/fsroot.h"
#include "test_util.h"
#include "daemon/writers.h"

static char tree[256];

static void put(const char *rel, const char *content)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", tree, rel);
	test_mkdirs(path);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(content, f);
	fclose(f);
}

static void link_fd(int pid, int fd, const char *target, const char *flags)
{
	char path[512], rel[64], info[64];

	snprintf(path, sizeof(path), "%s/proc/%d/fd/%d", tree, pid, fd);
	test_mkdirs(path);
	assert_int_equal(symlink(target, path), 0);
	snprintf(rel, sizeof(rel), "proc/%d/fdinfo/%d", pid, fd);
	snprintf(info, sizeof(info), "pos:\t0\nflags:\t%s\nmnt_id:\t22\n", flags);
	put(rel, info);
}

static int setup(void **state)
{
	(void)state;
	snprintf(tree, sizeof(tree), "/tmp/nodetune-writers-XXXXXX");
	assert_non_null(mkdtemp(tree));
	put("proc/sys/vm/swappiness", "60\n");
	put("proc/1/comm", "systemd\n");
	return 0;
}

static int teardown(void **state)
{
	char cmd[300];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tree);
	return system(cmd);
}

static int find(const char *path, struct writer *w)
{
	struct fsroot *root = fsroot_open(tree);
	int n;

	assert_non_null(root);
	n = writers_find(root, path, w, WRITERS_MAX);
	fsroot_free(root);
	return n;
}

static void test_quiet_tree(void **state)
{
	struct writer w[WRITERS_MAX];

	(void)state;
	assert_int_equal(find("proc/sys/vm/swappiness", w), 0);
	assert_int_equal(find("/proc/sys/vm/swappiness", w), -EINVAL);
	assert_int_equal(find("", w), -EINVAL);
}

static void test_tuned_and_irqbalance(void **state)
{
	struct writer w[WRITERS_MAX];
	char buf[1024];

	(void)state;
	put("proc/812/comm", "tuned\n");
	put("etc/tuned/active_profile", "throughput-performance\n");
	put("proc/900/comm", "irqbalance\n");
	assert_int_equal(find("sys/kernel/mm/transparent_hugepage/defrag", w), 1);
	assert_string_equal(w[0].kind, "tuned");
	assert_int_equal(w[0].pid, 812);
	assert_string_equal(w[0].detail, "tuned is running (pid 812), profile throughput-performance");
	assert_int_equal(find("proc/irq/24/smp_affinity_list", w), 1);   /* not tuned's */
	assert_string_equal(w[0].kind, "irqbalance");
	assert_int_equal(w[0].pid, 900);
	assert_int_equal(find("proc/sys/vm/swappiness", w), 1);
	writers_describe(w, 1, buf, sizeof(buf));
	assert_string_equal(buf, "tuned is running (pid 812), profile throughput-performance");
	unlink(strcat(strcpy(buf, tree), "/proc/812/comm"));
	unlink(strcat(strcpy(buf, tree), "/proc/900/comm"));
}

static void test_sysctl_d(void **state)
{
	struct writer w[WRITERS_MAX];
	char buf[1024];

	(void)state;
	put("usr/lib/sysctl.d/50-default.conf", "# defaults\nvm.swappiness = 30\nkernel.pid_max = 4194304\n");
	put("etc/sysctl.d/50-default.conf", "kernel.pid_max = 99\n");      /* masks the one above */
	put("etc/sysctl.d/99-local.conf", "; comment\n-vm/swappiness=10\nvm.swappiness_x = 1\n");
	put("etc/sysctl.d/README", "vm.swappiness = 1\n");                 /* not a .conf */
	put("etc/sysctl.conf", "vm.swappiness=5\n");
	assert_int_equal(find("proc/sys/vm/swappiness", w), 2);
	assert_string_equal(w[0].kind, "sysctl.d");
	assert_string_equal(w[0].detail, "/etc/sysctl.d/99-local.conf:2 sets vm.swappiness = 10");
	assert_string_equal(w[1].detail, "/etc/sysctl.conf:1 sets vm.swappiness = 5");
	assert_int_equal(find("proc/sys/kernel/pid_max", w), 1);
	assert_string_equal(w[0].detail, "/etc/sysctl.d/50-default.conf:1 sets kernel.pid_max = 99");
	writers_describe(w, 1, buf, sizeof(buf));
	assert_non_null(strstr(buf, "pid_max = 99"));
	assert_int_equal(find("sys/kernel/mm/transparent_hugepage/enabled", w), 0);  /* not a sysctl */
}

static void test_kubelet(void **state)
{
	struct writer w[WRITERS_MAX];

	(void)state;
	put("var/lib/kubelet/cpu_manager_state", "{\"policyName\":\"none\",\"defaultCpuSet\":\"\"}");
	assert_int_equal(find("proc/irq/24/smp_affinity_list", w), 0);
	put("var/lib/kubelet/cpu_manager_state",
	    "{\"policyName\":\"static\",\"defaultCpuSet\":\"0-1\",\"entries\":{},\"checksum\":1}");
	assert_int_equal(find("proc/irq/24/smp_affinity_list", w), 1);
	assert_string_equal(w[0].kind, "kubelet");
	assert_non_null(strstr(w[0].detail, "policy static"));
	assert_int_equal(find("proc/sys/vm/nr_hugepages", w), 0);   /* CPUs only */
	put("var/lib/kubelet/cpu_manager_state", "not json");
	assert_int_equal(find("proc/irq/24/smp_affinity_list", w), 0);
}

static void test_open_descriptor(void **state)
{
	struct writer w[WRITERS_MAX];

	(void)state;
	put("proc/4242/comm", "echo\n");
	put("proc/4343/comm", "cat\n");
	link_fd(4242, 3, "/proc/sys/vm/dirty_ratio", "0100001");       /* O_WRONLY */
	link_fd(4343, 4, "/proc/sys/vm/dirty_ratio", "0100000");       /* O_RDONLY: a reader */
	link_fd(4343, 5, "/proc/sys/vm/dirty_ratio_x", "0100002");
	assert_int_equal(find("proc/sys/vm/dirty_ratio", w), 1);
	assert_string_equal(w[0].kind, "process");
	assert_int_equal(w[0].pid, 4242);
	assert_string_equal(w[0].detail, "pid 4242 (echo) has /proc/sys/vm/dirty_ratio open for writing");
	/* a process names itself: its name is shown in printable ASCII */
	put("proc/4242/comm", "e\033[2Jvil\xc3\xa9\n");
	assert_int_equal(find("proc/sys/vm/dirty_ratio", w), 1);
	assert_string_equal(w[0].detail, "pid 4242 (e?[2Jvil?" "?) has /proc/sys/vm/dirty_ratio open for writing");
}

static void test_bounded(void **state)
{
	struct writer w[2];
	struct fsroot *root = fsroot_open(tree);
	char line[64];

	(void)state;
	for (int i = 0; i < 5; i++) {
		snprintf(line, sizeof(line), "etc/sysctl.d/%d-x.conf", 10 + i);
		put(line, "vm.overcommit_ratio = 1\n");
	}
	assert_int_equal(writers_find(root, "proc/sys/vm/overcommit_ratio", w, 2), 2);
	fsroot_free(root);
}

/* On this host: a descriptor this process holds for writing is found.  A
 * file of our own under /tmp stands in for a knob (the scan is the same). */
static void test_live_host(void **state)
{
	struct writer w[WRITERS_MAX];
	struct fsroot *root = fsroot_open("/");
	char path[300], c;
	int n, found = 0, go[2];
	pid_t child;

	(void)state;
	snprintf(path, sizeof(path), "%s/knob", tree);
	assert_int_equal(pipe(go), 0);
	child = fork();
	assert_true(child >= 0);
	if (child == 0) {
		int kfd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);

		(void)!write(go[1], kfd < 0 ? "!" : "x", 1);
		pause();
		_exit(0);
	}
	close(go[1]);
	assert_int_equal(read(go[0], &c, 1), 1);
	close(go[0]);
	assert_int_equal(c, 'x');
	n = writers_find(root, path + 1, w, WRITERS_MAX);
	for (int i = 0; i < n; i++)
		found += w[i].pid == child && !strcmp(w[i].kind, "process");
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	fsroot_free(root);
	assert_int_equal(found, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_quiet_tree),
		cmocka_unit_test(test_tuned_and_irqbalance),
		cmocka_unit_test(test_sysctl_d),
		cmocka_unit_test(test_kubelet),
		cmocka_unit_test(test_open_descriptor),
		cmocka_unit_test(test_bounded),
		cmocka_unit_test(test_live_host),
	};

	return cmocka_run_group_tests_name("writers", tests, setup, teardown);
}
