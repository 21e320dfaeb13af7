/* daemon.c — see daemon.h.
 *
 * Divisions: state and saying things; loading a policy into a plan; the
 * observer's counters and the doctor; publishing (metrics, textfile, the
 * status socket, sd_notify); one verify cycle; reload; start, the loop and
 * the stop.
 */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <poll.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>
#include <sha2.h>
#include <systemd/sd-daemon.h>

#include "tune/apply.h"
#include "daemon/ctlsock.h"
#include "daemon/daemon.h"
#include "observe/doctor.h"
#include "daemon/flap.h"
#include "fleet/fleet_host.h"
#include "tune/journal.h"
#include "machine/kstate.h"
#include "daemon/metrics.h"
#include "tune/plan.h"
#include "tune/policy.h"
#include "observe/sampler.h"
#include "machine/topo.h"
#include "tune/verify.h"
#include "daemon/writers.h"
#include "tune/launch.h"

#ifndef NODETUNE_VERSION
#define NODETUNE_VERSION "0.2.0"
#endif

#define RECENT_MAX 16           /* drift events kept for `nodetune status` */

struct drift_event {
	double wall;
	char path[256];
	char want[PLAN_VALUE_MAX], found[PLAN_VALUE_MAX];
	char writers[512];
};

struct daemon {
	const struct daemon_config *cfg;
	struct fsroot *root;
	struct topo *topo;
	struct policy *policy;
	struct plan *plan;
	char sha256[SHA256_DIGEST_STRING_LENGTH];
	struct journal *j;
	struct flap *flap;
	struct metrics_server *ms;
	struct ctlsock *cs;
	struct sampler sampler;
	bool sampler_ok;
	struct sampler_snap snap;
	struct doctor_findings doc;
	bool doc_ok;
	double next_doctor;
	/* the last verify */
	double verify_wall, verify_dur;
	double doctor_dur;            /* the last doctor run (it samples for window_s) */
	unsigned checked, drifted;
	bool verify_ok;
	unsigned long verifies, corrections, reloads, reload_failures, correct_failures;
	struct drift_event recent[RECENT_MAX];
	unsigned n_recent;
	double watchdog_s;            /* 0: no watchdog */
	struct fleet_host *fleet;     /* --fleet: NULL none */
	char policy_name[FLEET_NAME_MAX];
};

/* One line for the caller's note callback (none: nothing). */
#define say(d, level, ...) launch_notef((d)->cfg->note, (d)->cfg->note_arg, (level), __VA_ARGS__)

static double now_mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static double now_wall(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* ---- loading a policy -------------------------------------------------- */

/* The sha256 of the file at path, in hex, into out.  0 or -errno. */
static int file_sha256(const char *path, char out[SHA256_DIGEST_STRING_LENGTH])
{
	FILE *f = fopen(path, "re");
	char *buf = NULL;
	size_t len = 0, cap = 0, n;
	int r = 0;

	if (!f)
		return -errno;
	do {
		if (len == cap) {
			char *grown = realloc(buf, cap ? cap * 2 : 65536);

			if (!grown) {
				r = -ENOMEM;
				break;
			}
			buf = grown;
			cap = cap ? cap * 2 : 65536;
		}
		n = fread(buf + len, 1, cap - len, f);
		len += n;
	} while (n > 0);
	if (r == 0 && ferror(f))
		r = -EIO;
	fclose(f);
	if (r == 0)
		SHA256Data((const uint8_t *)(buf ? buf : ""), len, out);
	free(buf);
	return r;
}

/* Load and plan the policy file: *ret_policy, *ret_plan and its sha256
 * into sha, or -errno with err (nothing returned). */
static int load_plan(const struct daemon *d, struct policy **ret_policy, struct plan **ret_plan,
		     char sha[SHA256_DIGEST_STRING_LENGTH], struct nt_err *err)
{
	struct policy *p = policy_load(d->cfg->policy_path, d->cfg->policy_flags, err);
	struct plan *pl;
	int r;

	if (!p)
		return err->code ? err->code : -EINVAL;
	pl = plan_build(p, d->topo, d->topo->n_gpus ? d->topo->n_gpus : 1, d->root, err);
	if (!pl) {
		policy_free(p);
		return err->code ? err->code : -EINVAL;
	}
	r = file_sha256(d->cfg->policy_path, sha);
	if (r < 0) {
		plan_free(pl);
		policy_free(p);
		return err_set(err, r, "%s: %s", d->cfg->policy_path, strerror(-r));
	}
	*ret_policy = p;
	*ret_plan = pl;
	return 0;
}

/* ---- the observer and the doctor -------------------------------------- */

static void doctor_maybe(struct daemon *d, double mono)
{
	struct doctor_config dc = { 0.5, 0.1, d->plan };
	struct doctor_findings fresh = { 0 };
	struct kstate ks = { 0 };
	struct nt_err err = { 0 };
	double every = d->cfg->doctor_every_s > 0 ? d->cfg->doctor_every_s : fmax(60, 10 * d->cfg->interval_s);

	if (mono < d->next_doctor)
		return;
	d->next_doctor = mono + every;
	if (kstate_read(d->root, &ks, &err) < 0 || doctor_run(d->root, d->topo, &ks, &dc, &fresh, &err) < 0) {
		say(d, LOG_WARNING, "doctor: %s", err.msg);
		kstate_release(&ks);
		return;
	}
	kstate_release(&ks);
	d->doctor_dur = now_mono() - mono;
	for (unsigned i = 0; i < fresh.n; i++) {
		bool known = false;

		for (unsigned k = 0; d->doc_ok && k < d->doc.n && !known; k++)
			known = !strcmp(d->doc.hazards[k].code, fresh.hazards[i].code);
		if (!known)
			say(d, LOG_WARNING, "doctor: %s: %s (%s)", fresh.hazards[i].code, fresh.hazards[i].summary,
			    fresh.hazards[i].fix);
	}
	if (d->doc_ok)
		doctor_findings_release(&d->doc);
	d->doc = fresh;
	d->doc_ok = true;
}

/* ---- publishing -------------------------------------------------------- */

static void add(struct metrics *m, const char *name, enum metric_type type, const char *help,
		const char *const *labels, double v)
{
	struct nt_err err = { 0 };

	if (help)
		metrics_declare(m, name, type, help, &err);
	metrics_add(m, name, labels, v, &err);
}

static void add_knob(const char *key, unsigned long total, bool contested, void *arg)
{
	struct metrics *m = arg;
	const char *labels[] = { "path", key, NULL };
	char path[300];

	if (strncmp(key, "cgroup", 6))
		snprintf(path, sizeof(path), "/%s", key);
	else
		snprintf(path, sizeof(path), "%s", key);
	labels[1] = path;
	add(m, "nodetune_drift_total", METRIC_COUNTER, NULL, labels, (double)total);
	add(m, "nodetune_knob_contested", METRIC_GAUGE, NULL, labels, contested);
}

/* The daemon's own families. */
static void metrics_daemon(const struct daemon *d, struct metrics *m)
{
	const char *build[] = { "version", NODETUNE_VERSION, NULL };
	const char *pol[] = { "policy", d->cfg->policy_path, "sha256", d->sha256, NULL };

	add(m, "nodetune_build_info", METRIC_INFO, "The nodetune build.", build, 1);
	add(m, "nodetune_policy_info", METRIC_INFO, "The policy the daemon keeps applied.", pol, 1);
	add(m, "nodetune_verify_last_timestamp_seconds", METRIC_GAUGE, "When the last verify ended (Unix time).",
	    NULL, d->verify_wall);
	add(m, "nodetune_verify_duration_seconds", METRIC_GAUGE,
	    "How long the last verify cycle took (verify, corrections, counters; not the doctor).", NULL, d->verify_dur);
	add(m, "nodetune_doctor_duration_seconds", METRIC_GAUGE,
	    "How long the last doctor run took (it samples per-core %sys for half a second).", NULL, d->doctor_dur);
	add(m, "nodetune_verify_total", METRIC_COUNTER, "Verify cycles run.", NULL, (double)d->verifies);
	add(m, "nodetune_knobs_checked", METRIC_GAUGE, "Settings the last verify compared.", NULL, d->checked);
	add(m, "nodetune_knobs_drifted", METRIC_GAUGE, "Settings away from the policy at the last verify.", NULL,
	    d->drifted);
	add(m, "nodetune_corrections_total", METRIC_COUNTER, "Settings written back after a drift.", NULL,
	    (double)d->corrections);
	add(m, "nodetune_correction_failures_total", METRIC_COUNTER, "Corrections that failed.", NULL,
	    (double)d->correct_failures);
	add(m, "nodetune_reloads_total", METRIC_COUNTER, "Policy reloads (SIGHUP) that took effect.", NULL,
	    (double)d->reloads);
	add(m, "nodetune_reload_failures_total", METRIC_COUNTER, "Policy reloads refused (the old policy kept).",
	    NULL, (double)d->reload_failures);
	metrics_declare(m, "nodetune_drift_total", METRIC_COUNTER, "Times a setting was found away from the policy.",
			NULL);
	metrics_declare(m, "nodetune_knob_contested", METRIC_GAUGE,
			"1 when a setting drifted too often and is no longer corrected.", NULL);
	flap_foreach(d->flap, add_knob, m);
	metrics_declare(m, "nodetune_doctor_finding", METRIC_GAUGE, "A hazard the doctor found (1 while it lasts).",
			NULL);
	for (unsigned i = 0; d->doc_ok && i < d->doc.n; i++) {
		const char *labels[] = { "check", d->doc.hazards[i].code, "severity", "warning", NULL };

		add(m, "nodetune_doctor_finding", METRIC_GAUGE, NULL, labels, 1);
	}
}

/* The observer's counters, since boot (Prometheus takes the rates). */
static void metrics_observer(const struct daemon *d, struct metrics *m)
{
	const struct sampler_snap *s = &d->snap;
	char name[160];

	if (!d->sampler_ok)
		return;
	for (int i = 0; i < SAMPLER_VM; i++) {
		if (s->vm[i] < 0)
			continue;
		snprintf(name, sizeof(name), "nodetune_vmstat_%s_total", sampler_vm_counters[i].name);
		add(m, name, METRIC_COUNTER, sampler_vm_counters[i].source, NULL, (double)s->vm[i]);
	}
	if (s->tlb_ok)
		add(m, "nodetune_tlb_shootdowns_total", METRIC_COUNTER, "TLB shootdowns, all CPUs.", NULL,
		    (double)s->tlb);
	add(m, "nodetune_device_interrupts_total", METRIC_COUNTER, "Device (numbered) interrupts, all CPUs.", NULL,
	    (double)s->irq.device);
	if (s->psi.present) {
		const struct { const char *r, *k; uint64_t us; } p[] = {
			{ "cpu", "some", s->psi.cpu_some_us },   { "memory", "some", s->psi.mem_some_us },
			{ "memory", "full", s->psi.mem_full_us }, { "io", "some", s->psi.io_some_us },
			{ "io", "full", s->psi.io_full_us },
		};

		metrics_declare(m, "nodetune_pressure_stalled_seconds_total", METRIC_COUNTER,
				"Pressure stall time (PSI) by resource and kind.", NULL);
		for (size_t i = 0; i < sizeof(p) / sizeof(p[0]); i++) {
			const char *labels[] = { "resource", p[i].r, "kind", p[i].k, NULL };

			add(m, "nodetune_pressure_stalled_seconds_total", METRIC_COUNTER, NULL, labels, p[i].us / 1e6);
		}
	}
	if (s->slow && s->memcg_kernel >= 0) {
		const char *k[] = { "state", "kernel", NULL }, *l[] = { "state", "live", NULL };

		add(m, "nodetune_memory_cgroups", METRIC_GAUGE,
		    "Memory cgroups the kernel counts, and live directories (zombies: the difference).", k,
		    (double)s->memcg_kernel);
		add(m, "nodetune_memory_cgroups", METRIC_GAUGE, NULL, l, (double)s->memcg_live);
	}
}

static json_t *status_json(const struct daemon *d)
{
	json_t *drift = json_object(), *contested = json_array(), *doc = json_array(), *recent = json_array();

	for (unsigned i = 0; drift && i < d->n_recent; i++) {
		const struct drift_event *e = &d->recent[i];

		json_array_append_new(recent, json_pack("{s:f, s:s, s:s, s:s, s:s}", "time", e->wall, "path", e->path,
							"want", e->want, "found", e->found, "writers", e->writers));
	}
	for (unsigned i = 0; d->doc_ok && i < d->doc.n; i++)
		json_array_append_new(doc, json_pack("{s:s, s:s, s:s}", "check", d->doc.hazards[i].code, "summary",
						     d->doc.hazards[i].summary, "fix", d->doc.hazards[i].fix));
	return json_pack("{s:s, s:s, s:s, s:{s:f, s:f, s:i, s:i, s:b}, s:o, s:o, s:o, s:o, s:I, s:I, s:I}",
			 "version", NODETUNE_VERSION, "policy", d->cfg->policy_path, "sha256", d->sha256,
			 "last_verify", "time", d->verify_wall, "duration_s", d->verify_dur, "checked", d->checked,
			 "drifted", d->drifted, "ok", d->verify_ok, "drift", drift, "contested", contested, "doctor",
			 doc, "recent", recent, "corrections", (json_int_t)d->corrections, "reloads",
			 (json_int_t)d->reloads, "reload_failures", (json_int_t)d->reload_failures);
}

static void status_knob(const char *key, unsigned long total, bool contested, void *arg)
{
	json_t *doc = arg;

	json_object_set_new(json_object_get(doc, "drift"), key, json_integer((json_int_t)total));
	if (contested)
		json_array_append_new(json_object_get(doc, "contested"), json_string(key));
}

static void publish(struct daemon *d)
{
	struct metrics *m = metrics_new();
	struct nt_err err = { 0 };
	char *text = NULL, *js;
	size_t len = 0;
	json_t *doc;

	if (m) {
		metrics_daemon(d, m);
		metrics_observer(d, m);
		if (metrics_render(m, &text, &len, &err) == 0) {
			if (d->ms)
				metrics_server_publish(d->ms, text, len);
			if (d->cfg->textfile_dir &&
			    metrics_write_textfile(d->cfg->textfile_dir, "nodetune", text, len, &err) < 0)
				say(d, LOG_WARNING, "textfile: %s", err.msg);
		}
		free(text);
		metrics_free(m);
	}
	doc = status_json(d);
	if (doc && d->cs) {
		flap_foreach(d->flap, status_knob, doc);
		if ((js = json_dumps(doc, JSON_COMPACT)))
			ctlsock_publish(d->cs, js);
		free(js);
	}
	json_decref(doc);
	sd_notifyf(0, "STATUS=%s: %u settings, %u drifted at the last verify, %lu corrected in all",
		   d->cfg->policy_path, d->checked, d->drifted, d->corrections);
}

/* ---- one verify cycle -------------------------------------------------- */

static bool skip_contested(const char *path, void *arg)
{
	return flap_contested(arg, path);
}

static void remember(struct daemon *d, const struct verify_drift *v, const char *writers)
{
	struct drift_event *e;

	if (d->n_recent == RECENT_MAX)
		memmove(d->recent, d->recent + 1, (RECENT_MAX - 1) * sizeof(*d->recent));
	else
		d->n_recent++;
	e = &d->recent[d->n_recent - 1];
	e->wall = now_wall();
	snprintf(e->path, sizeof(e->path), "%s", v->path);
	snprintf(e->want, sizeof(e->want), "%s", v->expected);
	snprintf(e->found, sizeof(e->found), "%s", v->actual);
	snprintf(e->writers, sizeof(e->writers), "%s", writers);
}

/* One drift: name the other writers, count it, say it.  Returns whether
 * it is to be corrected (false once contested). */
static bool drift_seen(struct daemon *d, const struct verify_drift *v, double mono)
{
	struct writer w[WRITERS_MAX];
	char who[512] = "";
	int n;

	if (flap_contested(d->flap, v->path))     /* said once already; no /proc scan each interval */
		return false;
	n = v->kind == VERIFY_SETTING ? writers_find(d->root, v->path, w, WRITERS_MAX) : 0;
	if (n > 0)
		writers_describe(w, n, who, sizeof(who));
	remember(d, v, who);
	say(d, LOG_NOTICE, "drift: /%s: want %s, found %s%s%s", v->path, v->expected, v->actual,
	    n > 0 ? "; other writers: " : "; no other writer found", who);
	if (flap_drift(d->flap, v->path, mono) == 1) {
		say(d, LOG_WARNING,
		    "/%s is contested: it drifted %lu times, %u within the flap window; no longer corrected "
		    "(stop the other writer, or change the policy and reload)",
		    v->path, flap_total(d->flap, v->path), d->cfg->flap_n);
		return false;
	}
	return true;
}

static void correct(struct daemon *d)
{
	struct apply_changes rep = { 0 };
	struct nt_err err = { 0 };

	if (apply_converge(d->plan, d->root, d->j, skip_contested, d->flap, &rep, &err) < 0) {
		d->correct_failures++;
		say(d, LOG_ERR, "correcting drift failed: %s (tried again next interval)", err.msg);
	}
	for (unsigned i = 0; i < rep.n; i++)
		say(d, LOG_NOTICE, "corrected: /%s: %s -> %s", rep.changes[i].path, rep.changes[i].from,
		    rep.changes[i].to);
	d->corrections += rep.n;
	apply_changes_release(&rep);
}

/* The fleet's turn (fleet_host.h): it may replace the policy. */
static void fleet_tick(struct daemon *d)
{
	struct fleet_host_view v = { d->root, d->topo, d->j, &d->policy, &d->plan, d->sha256, d->policy_name,
				     d->verify_ok, d->checked, d->drifted, d->verify_wall };

	if (d->fleet && fleet_host_tick(d->fleet, &v) == 1)
		flap_reset(d->flap);
}

static void cycle(struct daemon *d)
{
	struct verify_result res = { 0 };
	struct nt_err err = { 0 };
	double t0 = now_mono();
	bool fix = false;

	d->verify_ok = verify_plan(d->plan, d->root, &res, &err) == 0;
	if (!d->verify_ok)
		say(d, LOG_ERR, "verify: %s", err.msg);
	for (unsigned i = 0; i < res.n; i++)
		fix |= drift_seen(d, &res.drift[i], t0);
	if (fix)
		correct(d);
	d->checked = res.checked;
	d->drifted = res.n;
	verify_result_release(&res);
	if (d->sampler_ok)
		sampler_take(&d->sampler, &d->snap);
	d->verify_dur = now_mono() - t0;
	doctor_maybe(d, now_mono());
	d->verifies++;
	d->verify_wall = now_wall();
	publish(d);
	fleet_tick(d);
	if (d->watchdog_s > 0)
		sd_notify(0, "WATCHDOG=1");
}

/* ---- reload ------------------------------------------------------------ */

static void reload(struct daemon *d)
{
	struct apply_changes rep = { 0 };
	struct nt_err err = { 0 };
	struct policy *p = NULL;
	struct plan *pl = NULL;
	char sha[SHA256_DIGEST_STRING_LENGTH];

	sd_notify(0, "RELOADING=1");
	if (load_plan(d, &p, &pl, sha, &err) < 0) {
		d->reload_failures++;
		say(d, LOG_ERR, "reload refused: %s; keeping %s (sha256 %.12s)", err.msg, d->cfg->policy_path, d->sha256);
		sd_notify(0, "READY=1");
		return;
	}
	if (apply_converge(pl, d->root, d->j, NULL, NULL, &rep, &err) < 0) {
		struct apply_changes back = { 0 };
		struct nt_err e2 = { 0 };

		d->reload_failures++;
		say(d, LOG_ERR, "reload: applying the new policy failed: %s; going back to the old one", err.msg);
		if (apply_converge(d->plan, d->root, d->j, skip_contested, d->flap, &back, &e2) < 0)
			say(d, LOG_ERR, "reload: going back failed too: %s", e2.msg);
		apply_changes_release(&back);
		plan_free(pl);
		policy_free(p);
	} else {
		for (unsigned i = 0; i < rep.n; i++)
			say(d, LOG_NOTICE, "/%s: %s -> %s", rep.changes[i].path, rep.changes[i].from, rep.changes[i].to);
		plan_free(d->plan);
		policy_free(d->policy);
		d->plan = pl;
		d->policy = p;
		memcpy(d->sha256, sha, sizeof(sha));
		flap_reset(d->flap);
		d->reloads++;
		say(d, LOG_NOTICE, "reloaded %s (sha256 %.12s): %u changes", d->cfg->policy_path, d->sha256, rep.n);
	}
	apply_changes_release(&rep);
	sd_notify(0, "READY=1");
	cycle(d);
}

/* ---- start, loop, stop ------------------------------------------------- */

static int fleet_start(struct daemon *d, struct nt_err *err)
{
	const struct daemon_config *c = d->cfg;
	const char *local = c->local_policy ? c->local_policy : c->policy_path, *base = strrchr(local, '/');
	struct fleet_host_config fc = { c->fleet_endpoints, c->fleet_host, c->state_dir, local, c->policy_path,
					c->sysroot, c->topology, c->interval_s, c->note, c->note_arg };

	snprintf(d->policy_name, sizeof(d->policy_name), "%s", base ? base + 1 : local);
	d->fleet = fleet_host_start(&fc, d->topo, err);
	return d->fleet ? 0 : err->code;
}

/* Everything that can be refused before the host is touched. */
static int start_inputs(struct daemon *d, struct nt_err *err)
{
	const struct daemon_config *c = d->cfg;

	d->root = fsroot_open(c->sysroot ? c->sysroot : "/");
	if (!d->root)
		return err_set(err, -errno, "--sysroot %s: %s", c->sysroot, strerror(errno));
	d->topo = c->topology ? topo_load_xml(c->topology, err) : topo_load_host(c->sysroot, err);
	if (!d->topo)
		return err->code ? err->code : -EINVAL;
	d->flap = flap_new(c->flap_n, c->flap_window_s);
	if (!d->flap)
		return err_set(err, -EINVAL, "--flap %u/%g: out of range", c->flap_n, c->flap_window_s);
	if (load_plan(d, &d->policy, &d->plan, d->sha256, err) < 0)
		return err->code;
	if (c->metrics_addr) {
		struct sockaddr_storage sa;
		socklen_t len;

		if (metrics_parse_listen(c->metrics_addr, &sa, &len, err) < 0)
			return err->code;
	}
	d->j = journal_open(c->state_dir, err);   /* the daemon's lock, held until it stops */
	if (!d->j && err->code == -EBUSY)
		err_set(err, -EBUSY, "%s is held by another nodetune (a daemon, or an apply or revert): one daemon "
			"per state dir; nothing was changed", c->state_dir);
	if (!d->j)
		return err->code;
	return c->fleet_endpoints ? fleet_start(d, err) : 0;
}

/* The servers, then the first apply and verify. */
static int start_host(struct daemon *d, struct nt_err *err)
{
	static const int no_pids[1];    /* none, but not NULL: sampler_init memcpy's it (UB on NULL) */
	struct apply_changes rep = { 0 };
	int r;

	if (d->cfg->metrics_addr && !(d->ms = metrics_server_start(d->cfg->metrics_addr, err)))
		return err->code;
	if (d->ms)     /* the port bound: --metrics ADDR:0 asks for a free one */
		say(d, LOG_NOTICE, "metrics: /metrics served on %s (port %u)", d->cfg->metrics_addr,
		    metrics_server_port(d->ms));
	if (d->cfg->socket_path && !(d->cs = ctlsock_start(d->cfg->socket_path, NULL, err)))
		return err->code;
	d->sampler_ok = sampler_init(&d->sampler, d->cfg->sysroot ? d->cfg->sysroot : "/", no_pids, 0, false) == 0;
	r = apply_converge(d->plan, d->root, d->j, NULL, NULL, &rep, err);
	for (unsigned i = 0; i < rep.n_notes; i++)
		say(d, LOG_NOTICE, "%s", rep.notes[i]);
	for (unsigned i = 0; i < rep.n; i++)
		say(d, LOG_NOTICE, "/%s: %s -> %s", rep.changes[i].path, rep.changes[i].from, rep.changes[i].to);
	if (r == 0)
		say(d, LOG_NOTICE, "applied %s (sha256 %.12s): %u changes; journal %s", d->cfg->policy_path, d->sha256,
		    rep.n, journal_path(d->j));
	apply_changes_release(&rep);
	return r;
}

static void stop(struct daemon *d)
{
	fleet_host_stop(d->fleet);
	metrics_server_stop(d->ms);
	ctlsock_stop(d->cs);
	if (d->sampler_ok) {
		sampler_snap_release(&d->snap);
		sampler_release(&d->sampler);
	}
	if (d->doc_ok)
		doctor_findings_release(&d->doc);
	journal_close(d->j);
	flap_free(d->flap);
	plan_free(d->plan);
	policy_free(d->policy);
	topo_free(d->topo);
	fsroot_free(d->root);
}

/* Put back what the journal in the state dir holds (the daemon's lock
 * released first). */
static void revert_all(struct daemon *d, const char *why)
{
	struct apply_changes rep = { 0 };
	struct nt_err err = { 0 };

	journal_close(d->j);
	d->j = NULL;
	if (apply_revert(d->cfg->state_dir, d->cfg->sysroot, &rep, &err) < 0)
		say(d, LOG_ERR, "%s: revert failed: %s", why, err.msg);
	for (unsigned i = 0; i < rep.n; i++)
		say(d, LOG_NOTICE, "restored /%s: %s -> %s", rep.changes[i].path, rep.changes[i].from, rep.changes[i].to);
	say(d, LOG_NOTICE, "%s: %u settings restored", why, rep.n);
	apply_changes_release(&rep);
}

/* Wait for a signal until the next cycle is due.  Returns the signal, 0 at
 * the deadline, -1 when the fleet's fd (xfd, -1 none) is readable. */
static int wait_signal(int sfd, int xfd, double until)
{
	double left = until - now_mono();
	struct pollfd pfd[2] = { { sfd, POLLIN, 0 }, { xfd, POLLIN, 0 } };
	struct signalfd_siginfo si;

	if (left > 0 && poll(pfd, xfd >= 0 ? 2 : 1, (int)ceil(left * 1000)) > 0) {
		if ((pfd[0].revents & POLLIN) && read(sfd, &si, sizeof(si)) == sizeof(si))
			return (int)si.ssi_signo;
		if (pfd[1].revents & POLLIN)
			return -1;
	}
	return 0;
}

static int loop(struct daemon *d, int sfd)
{
	double tick = d->cfg->interval_s, next;
	uint64_t usec = 0;

	if (sd_watchdog_enabled(0, &usec) > 0) {
		d->watchdog_s = usec / 1e6;
		tick = fmin(tick, d->watchdog_s / 2);    /* the verify still runs every interval */
	}
	next = now_mono() + d->cfg->interval_s;
	for (;;) {
		int sig = wait_signal(sfd, fleet_host_fd(d->fleet), fmin(next, now_mono() + tick));

		if (sig == SIGTERM || sig == SIGINT) {
			char undo[600] = " until the revert (--revert-on-exit)";

			/* `nodetune revert` finds the default state dir's journal itself */
			if (!d->cfg->revert_on_exit && !strcmp(d->cfg->state_dir, DAEMON_DEFAULT_STATE_DIR))
				snprintf(undo, sizeof(undo), " (undo: nodetune revert)");
			else if (!d->cfg->revert_on_exit)
				snprintf(undo, sizeof(undo), " (undo: nodetune revert --state-dir %s)", d->cfg->state_dir);
			say(d, LOG_NOTICE, "%s: stopping; the host stays as it is%s", strsignal(sig), undo);
			return 0;
		}
		if (sig == -1) {
			fleet_tick(d);          /* the store asked for something */
		} else if (sig == SIGHUP) {
			reload(d);
			next = now_mono() + d->cfg->interval_s;
		} else if (now_mono() >= next) {
			cycle(d);
			next += d->cfg->interval_s;
			if (next < now_mono())          /* a cycle longer than the interval: no burst */
				next = now_mono() + d->cfg->interval_s;
		} else if (d->watchdog_s > 0) {
			sd_notify(0, "WATCHDOG=1");     /* the loop is alive between cycles */
		}
	}
}

int daemon_run(const struct daemon_config *cfg, bool *ret_runtime, struct nt_err *err)
{
	struct daemon d = { .cfg = cfg };
	sigset_t mask, old;
	int sfd, r;

	*ret_runtime = false;
	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGHUP);
	if (pthread_sigmask(SIG_BLOCK, &mask, &old) != 0 || (sfd = signalfd(-1, &mask, SFD_CLOEXEC)) < 0)
		return err_set(err, -errno, "signalfd: %s", strerror(errno));
	r = start_inputs(&d, err);
	if (r == 0) {
		r = start_host(&d, err);
		if (r < 0 && d.j) {
			*ret_runtime = true;
			revert_all(&d, "start failed");
		}
	}
	if (r == 0) {
		cycle(&d);
		sd_notify(0, "READY=1");
		say(&d, LOG_NOTICE, "ready: %u settings verified every %g s (pid %ld)", d.checked, cfg->interval_s,
		    (long)getpid());
		r = loop(&d, sfd);
		sd_notify(0, "STOPPING=1");
		if (cfg->revert_on_exit)
			revert_all(&d, "--revert-on-exit");
	}
	stop(&d);
	close(sfd);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return r;
}
