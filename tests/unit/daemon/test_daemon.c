/* SPDX-License-Identifier: MIT */
/* test_daemon.c — the daemon's parts that are pure functions of its state
 * (daemon_test.h): the metric table rendered from a constructed daemon
 * (every family, the observer's only when it sampled, promtool's verdict
 * where it is installed), an error in a row propagated and naming the
 * family; the loop's decision after each kind of wake-up (a SIGHUP
 * under a fleet gate held back, reloaded at the first due cycle after
 * it); the next due verify on time and after an overrun; the ring of
 * recent drift events. */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "daemon/daemon_test.h"
#include "test_util.h"

#define SHA_P "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"

/* A daemon after some cycles: counters set, one knob drifted twice (not
 * contested), one contested, one doctor finding; no sampler. */
struct world {
	struct daemon_config cfg;
	struct daemon d;
	struct doctor_hazard hz[1];
};

static void world_init(struct world *w)
{
	memset(w, 0, sizeof(*w));
	w->cfg.policy_path = "/etc/nodetune/policy.conf";
	w->d.cfg = &w->cfg;
	snprintf(w->d.sha256, sizeof(w->d.sha256), "%s", SHA_P);
	w->d.verify_wall = 1700000000.5;
	w->d.verify_dur = 0.0004;
	w->d.verifies = 42;
	w->d.checked = 9;
	w->d.drifted = 1;
	w->d.corrections = 3;
	w->d.correct_failures = 1;
	w->d.reloads = 2;
	w->d.reload_failures = 5;
	w->d.flap = flap_new(2, 60);
	assert_non_null(w->d.flap);
	assert_int_equal(flap_drift(w->d.flap, "proc/sys/vm/swappiness", 1), 0);
	assert_int_equal(flap_drift(w->d.flap, "sys/kernel/mm/transparent_hugepage/enabled", 1), 0);
	assert_int_equal(flap_drift(w->d.flap, "sys/kernel/mm/transparent_hugepage/enabled", 2), 1);
	snprintf(w->hz[0].code, sizeof(w->hz[0].code), "thp-defrag-always");
	w->d.doc.hazards = w->hz;
	w->d.doc.n = 1;
	w->d.doc_ok = true;
}

static char *render(const struct daemon *d)
{
	struct metrics *m = metrics_new();
	struct nt_err err = { 0 };
	char *text = NULL;
	size_t len;

	assert_non_null(m);
	assert_int_equal(daemon_metrics_fill(d, m, &err), 0);
	assert_int_equal(metrics_render(m, &text, &len, &err), 0);
	metrics_free(m);
	return text;
}

static void promtool_check(const char *text)
{
	char dir[64], cmd[256];

	if (system("command -v promtool >/dev/null 2>&1") != 0)
		test_need("promtool", "promtool not installed (Debian package prometheus, scripts/install-deps.sh)");
	assert_non_null(test_tmpdir(dir, sizeof(dir)));
	assert_int_equal(test_write(dir, "m.prom", text), 0);
	snprintf(cmd, sizeof(cmd), "promtool check metrics < '%s/m.prom'", dir);
	assert_int_equal(system(cmd), 0);
	test_rmrf(dir);
}

/* ---- the metric table -------------------------------------------------- */

static void test_metrics_daemon_families(void **state)
{
	struct world w;
	char *text;

	(void)state;
	world_init(&w);
	text = render(&w.d);
	assert_non_null(strstr(text, "nodetune_build_info{version=\""));
	assert_non_null(strstr(text, "nodetune_policy_info{policy=\"/etc/nodetune/policy.conf\",sha256=\"" SHA_P
				     "\"} 1\n"));
	assert_non_null(strstr(text, "\nnodetune_verify_last_timestamp_seconds 1700000000.5\n"));
	assert_non_null(strstr(text, "\nnodetune_verify_duration_seconds 0.0004\n"));
	assert_non_null(strstr(text, "\nnodetune_doctor_duration_seconds 0\n"));
	assert_non_null(strstr(text, "\nnodetune_verify_total 42\n"));
	assert_non_null(strstr(text, "\nnodetune_knobs_checked 9\n"));
	assert_non_null(strstr(text, "\nnodetune_knobs_drifted 1\n"));
	assert_non_null(strstr(text, "\nnodetune_corrections_total 3\n"));
	assert_non_null(strstr(text, "\nnodetune_correction_failures_total 1\n"));
	assert_non_null(strstr(text, "\nnodetune_reloads_total 2\n"));
	assert_non_null(strstr(text, "\nnodetune_reload_failures_total 5\n"));
	assert_non_null(strstr(text, "nodetune_drift_total{path=\"/proc/sys/vm/swappiness\"} 1\n"));
	assert_non_null(strstr(text, "nodetune_drift_total{path=\"/sys/kernel/mm/transparent_hugepage/enabled\"} 2\n"));
	assert_non_null(strstr(text, "nodetune_knob_contested{path=\"/proc/sys/vm/swappiness\"} 0\n"));
	assert_non_null(strstr(text, "nodetune_knob_contested{path=\"/sys/kernel/mm/transparent_hugepage/enabled\"} 1\n"));
	assert_non_null(strstr(text, "nodetune_doctor_finding{check=\"thp-defrag-always\",severity=\"warning\"} 1\n"));
	/* no sampler: none of the observer's families */
	assert_null(strstr(text, "nodetune_vmstat_"));
	assert_null(strstr(text, "nodetune_device_interrupts_total"));
	assert_null(strstr(text, "nodetune_pressure_stalled_seconds_total"));
	promtool_check(text);
	free(text);
	flap_free(w.d.flap);
}

static void test_metrics_observer_families(void **state)
{
	struct world w;
	char *text;

	(void)state;
	world_init(&w);
	w.d.sampler_ok = true;
	for (int i = 0; i < SAMPLER_VM; i++)
		w.d.snap.vm[i] = i == 0 ? -1 : 100 + i;        /* the first absent on this "host" */
	w.d.snap.irq.device = 777;
	w.d.snap.tlb = 12;                                  /* tlb_ok false: left out */
	w.d.snap.psi.present = true;
	w.d.snap.psi.mem_full_us = 2500000;
	w.d.snap.slow = true;
	w.d.snap.memcg_kernel = 40;
	w.d.snap.memcg_live = 30;
	text = render(&w.d);
	assert_null(strstr(text, sampler_vm_counters[0].name));
	for (int i = 1; i < SAMPLER_VM; i++) {
		char want[200];

		snprintf(want, sizeof(want), "\nnodetune_vmstat_%s_total %d\n", sampler_vm_counters[i].name, 100 + i);
		assert_non_null(strstr(text, want));
	}
	assert_null(strstr(text, "nodetune_tlb_shootdowns_total"));
	assert_non_null(strstr(text, "\nnodetune_device_interrupts_total 777\n"));
	assert_non_null(strstr(text, "nodetune_pressure_stalled_seconds_total{kind=\"full\",resource=\"memory\"} 2.5\n"));
	assert_non_null(strstr(text, "nodetune_memory_cgroups{state=\"kernel\"} 40\n"));
	assert_non_null(strstr(text, "nodetune_memory_cgroups{state=\"live\"} 30\n"));
	promtool_check(text);
	free(text);
	w.d.snap.tlb_ok = true;
	w.d.snap.slow = false;                              /* memcg only after the slow scans */
	text = render(&w.d);
	assert_non_null(strstr(text, "\nnodetune_tlb_shootdowns_total 12\n"));
	assert_null(strstr(text, "nodetune_memory_cgroups"));
	free(text);
	flap_free(w.d.flap);
}

/* A value metrics_add refuses (here a policy path that is not UTF-8) stops
 * the fill with the error, and err names the family. */
static void test_metrics_error_propagates(void **state)
{
	struct metrics *m = metrics_new();
	struct nt_err err = { 0 };
	struct world w;

	(void)state;
	world_init(&w);
	w.cfg.policy_path = "/etc/\xff.conf";
	assert_int_equal(daemon_metrics_fill(&w.d, m, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "nodetune_policy_info"));
	metrics_free(m);
	/* and a family declared twice (a duplicate row) is -EEXIST */
	w.cfg.policy_path = "/etc/nodetune/policy.conf";
	m = metrics_new();
	assert_int_equal(metrics_declare(m, "nodetune_verify_total", METRIC_COUNTER, "x", &err), 0);
	assert_int_equal(daemon_metrics_fill(&w.d, m, &err), -EEXIST);
	metrics_free(m);
	flap_free(w.d.flap);
}

/* ---- the loop ---------------------------------------------------------- */

static void test_decide(void **state)
{
	(void)state;
	assert_int_equal(daemon_decide(SIGTERM, 5, 10, false, false, false), DAEMON_STOP);
	assert_int_equal(daemon_decide(SIGINT, 50, 10, true, false, false), DAEMON_STOP);   /* even when due */
	assert_int_equal(daemon_decide(-1, 50, 10, false, false, false), DAEMON_FLEET);   /* the store first */
	assert_int_equal(daemon_decide(SIGHUP, 50, 10, false, false, false), DAEMON_RELOAD);
	assert_int_equal(daemon_decide(0, 10, 10, false, false, false), DAEMON_CYCLE);   /* due exactly */
	assert_int_equal(daemon_decide(0, 11, 10, true, false, false), DAEMON_CYCLE);
	assert_int_equal(daemon_decide(0, 9.5, 10, true, false, false), DAEMON_PING);   /* early: the watchdog */
	assert_int_equal(daemon_decide(0, 9.5, 10, false, false, false), DAEMON_WAIT);
	assert_int_equal(daemon_decide(SIGUSR1, 9.5, 10, false, false, false), DAEMON_WAIT);    /* not ours */
}

/* A SIGHUP while a fleet gate holds the host (review G1): held back, and
 * reloaded at the first due cycle after the gate's end, not before. */
static void test_decide_gate(void **state)
{
	(void)state;
	assert_int_equal(daemon_decide(SIGHUP, 50, 10, false, true, false), DAEMON_RELOAD_LATER);
	assert_int_equal(daemon_decide(SIGHUP, 50, 10, false, true, true), DAEMON_RELOAD_LATER);  /* a second one */
	assert_int_equal(daemon_decide(0, 11, 10, false, true, true), DAEMON_CYCLE);    /* still gated: verify only */
	assert_int_equal(daemon_decide(0, 9.5, 10, true, false, true), DAEMON_PING);    /* the gate ended, not due */
	assert_int_equal(daemon_decide(0, 10, 10, false, false, true), DAEMON_RELOAD_HELD);   /* due, no gate */
	assert_int_equal(daemon_decide(0, 11, 10, true, false, false), DAEMON_CYCLE);   /* none held: a verify */
	assert_int_equal(daemon_decide(SIGHUP, 5, 10, false, false, true), DAEMON_RELOAD);      /* a new one, no gate */
	assert_int_equal(daemon_decide(SIGTERM, 50, 10, false, true, true), DAEMON_STOP);      /* stop wins */
	assert_int_equal(daemon_decide(-1, 50, 10, false, true, true), DAEMON_FLEET);          /* the gate's own end */
}

static void test_next_due(void **state)
{
	(void)state;
	assert_true(daemon_next_due(10, 10.2, 30) == 40);      /* on time: the cadence holds */
	assert_true(daemon_next_due(10, 39.9, 30) == 40);
	assert_true(daemon_next_due(10, 75, 30) == 105);       /* overran two intervals: no burst */
}

static void test_recent_ring(void **state)
{
	struct drift_event recent[DAEMON_RECENT_MAX];
	unsigned n = 0;

	(void)state;
	for (unsigned i = 0; i < DAEMON_RECENT_MAX + 4; i++) {
		struct drift_event *e = daemon_recent_push(recent, &n);

		snprintf(e->path, sizeof(e->path), "k%u", i);
		assert_int_equal(n, i < DAEMON_RECENT_MAX ? i + 1 : DAEMON_RECENT_MAX);
	}
	assert_string_equal(recent[0].path, "k4");                          /* the four oldest dropped */
	assert_string_equal(recent[DAEMON_RECENT_MAX - 1].path, "k19");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_metrics_daemon_families),
		cmocka_unit_test(test_metrics_observer_families),
		cmocka_unit_test(test_metrics_error_propagates),
		cmocka_unit_test(test_decide),
		cmocka_unit_test(test_decide_gate),
		cmocka_unit_test(test_next_due),
		cmocka_unit_test(test_recent_ring),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
