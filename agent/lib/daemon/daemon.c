/* SPDX-License-Identifier: MIT */
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

#include "nt_clock.h"
#include "ab/trialcg.h"
#include "tune/apply.h"
#include "daemon/ctlsock.h"
#include "daemon/daemon.h"
#include "daemon/daemon_test.h"
#include "observe/doctor.h"
#include "daemon/flap.h"
#include "fleet/fleet_gate.h"
#include "fleet/fleet_host.h"
#include "tune/jobstate.h"
#include "tune/journal.h"
#include "tune/limits.h"
#include "machine/kstate.h"
#include "daemon/metrics.h"
#include "tune/plan.h"
#include "tune/policy.h"
#include "observe/sampler.h"
#include "machine/topo.h"
#include "tune/verify.h"
#include "daemon/writers.h"

#ifndef NODETUNE_VERSION
#define NODETUNE_VERSION "0.2.0"
#endif

/* One line for the caller's note callback (none: nothing). */
#define say(d, level, ...) notef((d)->cfg->note, (d)->cfg->note_arg, (level), __VA_ARGS__)

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

/* Is p within the site limits (cfg.limits_path, read each time: at start
 * and on SIGHUP)?  0, or -EPERM (the key and the limit named) or the
 * limits file's error, with err. */
static int within_limits(const struct daemon *d, const struct policy *p, struct nt_err *err)
{
	return limits_check_file(d->cfg->limits_path, d->cfg->policy_flags, p, d->topo, err);
}

/* Load the policy file, check it against the site limits and plan it:
 * *ret_policy, *ret_plan and its sha256 into sha, or -errno with err
 * (nothing returned). */
static int load_plan(const struct daemon *d, struct policy **ret_policy, struct plan **ret_plan,
		     char sha[SHA256_DIGEST_STRING_LENGTH], struct nt_err *err)
{
	struct policy *p = policy_load(d->cfg->policy_path, d->cfg->policy_flags, err);
	struct plan *pl;
	int r;

	if (!p)
		return err->code ? err->code : -EINVAL;
	if ((r = within_limits(d, p, err)) < 0) {
		policy_free(p);
		return r;
	}
	pl = plan_build(p, d->topo, 0, d->root, err);
	if (!pl) {
		policy_free(p);
		return err->code ? err->code : -EINVAL;
	}
	r = file_sha256(d->cfg->policy_path, sha);
	if (r < 0) {
		plan_free(pl);
		policy_free(p);
		return err_set(err, r, "%s: %s", d->cfg->policy_path, nt_strerror(-r));
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
	d->doctor_dur = nt_mono_s() - mono;
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

/* The daemon's metric families, one row each: name, type, help, and how
 * its samples are read from the daemon (one unlabelled value, or a function
 * that adds labelled samples).  Adding a metric is adding a row. */
enum daemon_metric {
	DM_BUILD_INFO, DM_POLICY_INFO, DM_VERIFY_LAST, DM_VERIFY_DURATION, DM_DOCTOR_DURATION, DM_VERIFY_TOTAL,
	DM_KNOBS_CHECKED, DM_KNOBS_DRIFTED, DM_CORRECTIONS, DM_CORRECTION_FAILURES, DM_RELOADS, DM_RELOAD_FAILURES,
	DM_DRIFT, DM_KNOB_CONTESTED, DM_DOCTOR_FINDING, DM_TLB, DM_DEVICE_IRQ, DM_PRESSURE, DM_MEMCG, DM_FLEET_REJECTED,
	DM_FLEET_FROZEN, DM_FLEET_TIMESTAMP_AGE, DM__COUNT
};

struct metric_row {
	const char *name;
	enum metric_type type;
	const char *help;
	double (*value)(const struct daemon *d);        /* one unlabelled sample; NULL: samples */
	int (*samples)(const struct daemon *d, struct metrics *m, const char *name, struct nt_err *err);
	bool (*present)(const struct daemon *d);        /* NULL: always; false: the family is left out */
};

/* A sample of family name; 0 or -errno with err. */
static int sample(struct metrics *m, const char *name, const char *const *labels, double v, struct nt_err *err)
{
	return metrics_add(m, name, labels, v, err);
}

static int build_info(const struct daemon *d, struct metrics *m, const char *name, struct nt_err *err)
{
	(void)d;
	return sample(m, name, (const char *[]){ "version", NODETUNE_VERSION, NULL }, 1, err);
}

static int policy_info(const struct daemon *d, struct metrics *m, const char *name, struct nt_err *err)
{
	return sample(m, name, (const char *[]){ "policy", d->cfg->policy_path, "sha256", d->sha256, NULL }, 1, err);
}

/* Per knob the flap tracker knows: its drift count or whether contested. */
struct knob_pass {
	struct metrics *m;
	const char *name;
	bool contested;
	struct nt_err *err;
	int r;
};

static void knob_sample(const char *key, unsigned long total, bool contested, void *arg)
{
	struct knob_pass *p = arg;
	char path[300];

	if (p->r < 0)
		return;
	snprintf(path, sizeof(path), "%s%s", strncmp(key, "cgroup", 6) ? "/" : "", key);
	p->r = sample(p->m, p->name, (const char *[]){ "path", path, NULL }, p->contested ? contested : (double)total,
		      p->err);
}

static int knob_samples(const struct daemon *d, struct metrics *m, const char *name, bool contested,
			struct nt_err *err)
{
	struct knob_pass p = { m, name, contested, err, 0 };

	flap_foreach(d->flap, knob_sample, &p);
	return p.r;
}

static int drift_samples(const struct daemon *d, struct metrics *m, const char *name, struct nt_err *err)
{
	return knob_samples(d, m, name, false, err);
}

static int contested_samples(const struct daemon *d, struct metrics *m, const char *name, struct nt_err *err)
{
	return knob_samples(d, m, name, true, err);
}

static int doctor_samples(const struct daemon *d, struct metrics *m, const char *name, struct nt_err *err)
{
	int r = 0;

	for (unsigned i = 0; d->doc_ok && i < d->doc.n && r == 0; i++)
		r = sample(m, name, (const char *[]){ "check", d->doc.hazards[i].code, "severity", "warning", NULL }, 1,
			   err);
	return r;
}

static int pressure_samples(const struct daemon *d, struct metrics *m, const char *name, struct nt_err *err)
{
	const struct sampler_snap *s = &d->snap;
	const struct { const char *r, *k; uint64_t us; } p[] = {
		{ "cpu", "some", s->psi.cpu_some_us },   { "memory", "some", s->psi.mem_some_us },
		{ "memory", "full", s->psi.mem_full_us }, { "io", "some", s->psi.io_some_us },
		{ "io", "full", s->psi.io_full_us },
	};
	int r = 0;

	for (size_t i = 0; i < sizeof(p) / sizeof(p[0]) && r == 0; i++)
		r = sample(m, name, (const char *[]){ "resource", p[i].r, "kind", p[i].k, NULL }, p[i].us / 1e6, err);
	return r;
}

static int memcg_samples(const struct daemon *d, struct metrics *m, const char *name, struct nt_err *err)
{
	int r = sample(m, name, (const char *[]){ "state", "kernel", NULL }, (double)d->snap.memcg_kernel, err);

	return r < 0 ? r : sample(m, name, (const char *[]){ "state", "live", NULL }, (double)d->snap.memcg_live, err);
}

static int fleet_rejected_samples(const struct daemon *d, struct metrics *m, const char *name, struct nt_err *err)
{
	int r = 0;

	for (unsigned i = 0; i < SIGN_REJ__COUNT && r == 0; i++)
		r = sample(m, name, (const char *[]){ "reason", sign_reject_names[i], NULL },
			   (double)fleet_host_rejected(d->fleet, (enum sign_reject)i), err);
	return r;
}

static bool in_fleet(const struct daemon *d) { return d->fleet != NULL; }

static double v_fleet_frozen(const struct daemon *d)
{
	struct fleet_host_fresh f;

	fleet_host_freshness(d->fleet, &f);
	return f.frozen;
}

static double v_fleet_ts_age(const struct daemon *d)
{
	struct fleet_host_fresh f;

	fleet_host_freshness(d->fleet, &f);
	return f.age_s;
}

static double v_verify_wall(const struct daemon *d) { return d->verify_wall; }
static double v_verify_dur(const struct daemon *d) { return d->verify_dur; }
static double v_doctor_dur(const struct daemon *d) { return d->doctor_dur; }
static double v_verifies(const struct daemon *d) { return (double)d->verifies; }
static double v_checked(const struct daemon *d) { return d->checked; }
static double v_drifted(const struct daemon *d) { return d->drifted; }
static double v_corrections(const struct daemon *d) { return (double)d->corrections; }
static double v_correct_failures(const struct daemon *d) { return (double)d->correct_failures; }
static double v_reloads(const struct daemon *d) { return (double)d->reloads; }
static double v_reload_failures(const struct daemon *d) { return (double)d->reload_failures; }
static double v_tlb(const struct daemon *d) { return (double)d->snap.tlb; }
static double v_device_irq(const struct daemon *d) { return (double)d->snap.irq.device; }
static bool has_sampler(const struct daemon *d) { return d->sampler_ok; }
static bool has_tlb(const struct daemon *d) { return d->sampler_ok && d->snap.tlb_ok; }
static bool has_psi(const struct daemon *d) { return d->sampler_ok && d->snap.psi.present; }
static bool has_memcg(const struct daemon *d) { return d->sampler_ok && d->snap.slow && d->snap.memcg_kernel >= 0; }

static const struct metric_row metric_rows[DM__COUNT] = {
	[DM_BUILD_INFO] = { "nodetune_build_info", METRIC_INFO, "The nodetune build.", NULL, build_info, NULL },
	[DM_POLICY_INFO] = { "nodetune_policy_info", METRIC_INFO, "The policy the daemon keeps applied.", NULL,
			     policy_info, NULL },
	[DM_VERIFY_LAST] = { "nodetune_verify_last_timestamp_seconds", METRIC_GAUGE,
			     "When the last verify ended (Unix time).", v_verify_wall, NULL, NULL },
	[DM_VERIFY_DURATION] = { "nodetune_verify_duration_seconds", METRIC_GAUGE,
				 "How long the last verify cycle took (verify, corrections, counters; not the doctor).",
				 v_verify_dur, NULL, NULL },
	[DM_DOCTOR_DURATION] = { "nodetune_doctor_duration_seconds", METRIC_GAUGE,
				 "How long the last doctor run took (it samples per-core %sys for half a second).",
				 v_doctor_dur, NULL, NULL },
	[DM_VERIFY_TOTAL] = { "nodetune_verify_total", METRIC_COUNTER, "Verify cycles run.", v_verifies, NULL, NULL },
	[DM_KNOBS_CHECKED] = { "nodetune_knobs_checked", METRIC_GAUGE, "Settings the last verify compared.", v_checked,
			       NULL, NULL },
	[DM_KNOBS_DRIFTED] = { "nodetune_knobs_drifted", METRIC_GAUGE,
			       "Settings away from the policy at the last verify.", v_drifted, NULL, NULL },
	[DM_CORRECTIONS] = { "nodetune_corrections_total", METRIC_COUNTER, "Settings written back after a drift.",
			     v_corrections, NULL, NULL },
	[DM_CORRECTION_FAILURES] = { "nodetune_correction_failures_total", METRIC_COUNTER, "Corrections that failed.",
				     v_correct_failures, NULL, NULL },
	[DM_RELOADS] = { "nodetune_reloads_total", METRIC_COUNTER, "Policy reloads (SIGHUP) that took effect.",
			 v_reloads, NULL, NULL },
	[DM_RELOAD_FAILURES] = { "nodetune_reload_failures_total", METRIC_COUNTER,
				 "Policy reloads refused (the old policy kept).", v_reload_failures, NULL, NULL },
	[DM_DRIFT] = { "nodetune_drift_total", METRIC_COUNTER, "Times a setting was found away from the policy.", NULL,
		       drift_samples, NULL },
	[DM_KNOB_CONTESTED] = { "nodetune_knob_contested", METRIC_GAUGE,
				"1 when a setting drifted too often and is no longer corrected.", NULL,
				contested_samples, NULL },
	[DM_DOCTOR_FINDING] = { "nodetune_doctor_finding", METRIC_GAUGE,
				"A hazard the doctor found (1 while it lasts).", NULL, doctor_samples, NULL },
	[DM_TLB] = { "nodetune_tlb_shootdowns_total", METRIC_COUNTER, "TLB shootdowns, all CPUs.", v_tlb, NULL,
		     has_tlb },
	[DM_DEVICE_IRQ] = { "nodetune_device_interrupts_total", METRIC_COUNTER,
			    "Device (numbered) interrupts, all CPUs.", v_device_irq, NULL, has_sampler },
	[DM_FLEET_REJECTED] = { "nodetune_fleet_rejected_total", METRIC_COUNTER,
				"Fleet documents refused (unsigned, bad signature, unknown key, other host, replay...).",
				NULL, fleet_rejected_samples, in_fleet },
	[DM_FLEET_FROZEN] = { "nodetune_fleet_frozen", METRIC_GAUGE,
			      "1 when the controller's last verified timestamp is older than --fleet-max-age (the "
			      "store may be withholding updates; the policy is kept).", v_fleet_frozen, NULL, in_fleet },
	[DM_FLEET_TIMESTAMP_AGE] = { "nodetune_fleet_timestamp_age_seconds", METRIC_GAUGE,
				     "Age of the controller's last verified timestamp (since the start when none).",
				     v_fleet_ts_age, NULL, in_fleet },
	[DM_PRESSURE] = { "nodetune_pressure_stalled_seconds_total", METRIC_COUNTER,
			  "Pressure stall time (PSI) by resource and kind.", NULL, pressure_samples, has_psi },
	[DM_MEMCG] = { "nodetune_memory_cgroups", METRIC_GAUGE,
		       "Memory cgroups the kernel counts, and live directories (zombies: the difference).", NULL,
		       memcg_samples, has_memcg },
};

/* One family: declared, then its samples.  0 or -errno with err. */
static int metric_family(const struct daemon *d, const struct metric_row *row, struct metrics *m,
			 struct nt_err *err)
{
	int r;

	if (row->present && !row->present(d))
		return 0;
	r = metrics_declare(m, row->name, row->type, row->help, err);
	if (r < 0)
		return r;
	return row->value ? sample(m, row->name, NULL, row->value(d), err) : row->samples(d, m, row->name, err);
}

/* The vmstat counters: one family per row of the sampler's table. */
static int metrics_vmstat(const struct daemon *d, struct metrics *m, struct nt_err *err)
{
	char name[160];
	int r = 0;

	for (int i = 0; d->sampler_ok && i < SAMPLER_VM && r == 0; i++) {
		if (d->snap.vm[i] < 0)
			continue;
		snprintf(name, sizeof(name), "nodetune_vmstat_%s_total", sampler_vm_counters[i].name);
		r = metrics_declare(m, name, METRIC_COUNTER, sampler_vm_counters[i].source, err);
		if (r == 0)
			r = sample(m, name, NULL, (double)d->snap.vm[i], err);
	}
	return r;
}

int daemon_metrics_fill(const struct daemon *d, struct metrics *m, struct nt_err *err)
{
	int r = 0;

	for (int i = 0; i < DM__COUNT && r == 0; i++) {
		if (i == DM_TLB)        /* the observer's families, after the daemon's own */
			r = metrics_vmstat(d, m, err);
		if (r == 0)
			r = metric_family(d, &metric_rows[i], m, err);
	}
	return r;
}

/* The host's freshness: {"frozen","age_s","max_age_s","timestamp":{"seq","time"}|null}. */
static json_t *fresh_json(const struct fleet_host *fh)
{
	struct fleet_host_fresh f;

	fleet_host_freshness(fh, &f);
	return json_pack("{s:b, s:f, s:f, s:o}", "frozen", f.frozen, "age_s", f.age_s, "max_age_s", f.max_age_s,
			 "timestamp", f.have ? json_pack("{s:I, s:f}", "seq", (json_int_t)f.seq, "time", f.time)
					     : json_null());
}

static json_t *status_json(const struct daemon *d)
{
	json_t *drift = json_object(), *contested = json_array(), *doc = json_array(), *recent = json_array(), *st;
	struct fleet_host_refusal last;
	unsigned long total = 0;

	for (unsigned i = 0; drift && i < d->n_recent; i++) {
		const struct drift_event *e = &d->recent[i];

		json_array_append_new(recent, json_pack("{s:f, s:s+, s:s, s:s, s:s}", "time", e->wall, "path", "/",
							e->path, "current", e->found, "wanted", e->want, "writers",
							e->writers));
	}
	for (unsigned i = 0; d->doc_ok && i < d->doc.n; i++)
		json_array_append_new(doc, json_pack("{s:s, s:s, s:s}", "check", d->doc.hazards[i].code, "summary",
						     d->doc.hazards[i].summary, "fix", d->doc.hazards[i].fix));
	st = json_pack("{s:s, s:s, s:s, s:{s:f, s:f, s:i, s:i, s:b}, s:o, s:o, s:o, s:o, s:I, s:I, s:I}",
		       "version", NODETUNE_VERSION, "policy", d->cfg->policy_path, "sha256", d->sha256,
		       "last_verify", "time", d->verify_wall, "duration_s", d->verify_dur, "checked", d->checked,
		       "drifted", d->drifted, "ok", d->verify_ok, "drift", drift, "contested", contested, "doctor",
		       doc, "recent", recent, "corrections", (json_int_t)d->corrections, "reloads",
		       (json_int_t)d->reloads, "reload_failures", (json_int_t)d->reload_failures);
	/* the NAME the policy file includes (what `policy use NAME` writes) */
	if (st && d->policy && d->policy->v[KNOB_MAIN_INCLUDE].value &&
	    !strcmp(d->policy->v[KNOB_MAIN_INCLUDE].file, d->policy->file))
		json_object_set_new(st, "include", json_string(d->policy->v[KNOB_MAIN_INCLUDE].value));
	if (st && fleet_host_last_refusal(d->fleet, &last)) {
		for (int i = 0; i < SIGN_REJ__COUNT; i++)
			total += fleet_host_rejected(d->fleet, (enum sign_reject)i);
		json_object_set_new(st, "fleet_refused",
				    json_pack("{s:s, s:I, s:I, s:f, s:s}", "reason", sign_reject_names[last.reason],
					      "count", (json_int_t)fleet_host_rejected(d->fleet, last.reason), "total",
					      (json_int_t)total, "time", last.wall, "what", last.what));
	}
	if (st && d->fleet)
		json_object_set_new(st, "fleet_fresh", fresh_json(d->fleet));
	return st;
}

static void status_knob(const char *key, unsigned long total, bool contested, void *arg)
{
	json_t *doc = arg;
	char path[300];

	snprintf(path, sizeof(path), "/%s", key);     /* the host path, as verify's */
	json_object_set_new(json_object_get(doc, "drift"), path, json_integer((json_int_t)total));
	if (contested)
		json_array_append_new(json_object_get(doc, "contested"), json_string(path));
}

static void publish(struct daemon *d)
{
	struct metrics *m = metrics_new();
	struct nt_err err = { 0 };
	char *text = NULL, *js;
	size_t len = 0;
	json_t *doc;

	if (!m || daemon_metrics_fill(d, m, &err) < 0 || metrics_render(m, &text, &len, &err) < 0) {
		say(d, LOG_WARNING, "metrics: %s (not published this cycle)", m ? err.msg : nt_strerror(ENOMEM));
	} else {
		if (d->ms && metrics_server_publish(d->ms, text, len) < 0)
			say(d, LOG_WARNING, "metrics: out of memory (the last text still served)");
		if (d->cfg->textfile_dir && metrics_write_textfile(d->cfg->textfile_dir, "nodetune", text, len, &err) < 0)
			say(d, LOG_WARNING, "textfile: %s", err.msg);
	}
	free(text);
	metrics_free(m);
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

struct drift_event *daemon_recent_push(struct drift_event recent[DAEMON_RECENT_MAX], unsigned *n)
{
	if (*n == DAEMON_RECENT_MAX)
		memmove(recent, recent + 1, (DAEMON_RECENT_MAX - 1) * sizeof(*recent));
	else
		(*n)++;
	return &recent[*n - 1];
}

static void remember(struct daemon *d, const struct verify_drift *v, const char *writers)
{
	struct drift_event *e = daemon_recent_push(d->recent, &d->n_recent);

	e->wall = nt_wall_s();
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

/* The trial cgroups a gate's ab killed -9 left (trialcg_sweep): what its
 * job started still runs there as the gate's user; killed, removed.  On
 * the live host, where ab makes them, also under --sysroot. */
static void sweep_trials(struct daemon *d)
{
	struct fsroot *live = fsroot_open("/");
	struct nt_err err = { 0 };
	int n = live ? trialcg_sweep(live, &err) : 0;

	if (n > 0)
		say(d, LOG_NOTICE, "fleet: %d trial cgroup directories of a killed ab: what they held killed, removed", n);
	fsroot_free(live);
}

/* The fleet's turn (fleet_host.h): it may replace the policy.  A gate
 * that ended may have left its ab's trial groups (sweep_trials). */
static void fleet_tick(struct daemon *d)
{
	struct fleet_host_view v = { d->root, d->topo, d->j, &d->policy, &d->plan, d->sha256, d->policy_name,
				     d->verify_ok, d->checked, d->drifted, d->verify_wall };
	bool gating = fleet_host_gating(d->fleet);

	if (d->fleet && fleet_host_tick(d->fleet, &v) == 1)
		flap_reset(d->flap);
	if (gating && !fleet_host_gating(d->fleet))
		sweep_trials(d);
}

static void cycle(struct daemon *d)
{
	struct verify_result res = { 0 };
	struct nt_err err = { 0 };
	double t0 = nt_mono_s();
	bool fix = false;

	if (fleet_host_gating(d->fleet)) {
		/* the gate's A/B holds the host: its arms are not drift */
		publish(d);
		fleet_tick(d);
		if (d->watchdog_s > 0)
			sd_notify(0, "WATCHDOG=1");
		return;
	}
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
	d->verify_dur = nt_mono_s() - t0;
	doctor_maybe(d, nt_mono_s());
	d->verifies++;
	d->verify_wall = nt_wall_s();
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
	/* a key added or revoked: documents from now on are held to the keys
	 * the directory has now */
	if (d->fleet && fleet_host_reload_keys(d->fleet, &err) < 0) {
		d->reload_failures++;
		say(d, LOG_ERR, "reload: the fleet keys: %s; keeping the keys loaded before", err.msg);
		err = (struct nt_err){ 0 };
	}
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
	struct fleet_host_config fc = { c->fleet_endpoints, c->fleet_creds, c->fleet_host, c->state_dir, local, c->policy_path,
					c->sysroot, c->topology, c->interval_s, c->note, c->note_arg,
					c->fleet_keys, c->fleet_insecure_unsigned, c->limits_path, c->gates_dir,
					c->fleet_id, c->fleet_max_age_s };

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
		return err_set(err, -errno, "--sysroot %s: %s", c->sysroot, nt_strerror(errno));
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

/* Each restore in rep, a line of its own. */
static void say_restored(struct daemon *d, const struct apply_changes *rep)
{
	for (unsigned i = 0; i < rep->n; i++)
		say(d, LOG_NOTICE, "restored /%s: %s -> %s", rep->changes[i].path, rep->changes[i].from,
		    rep->changes[i].to);
}

/* A fleet gate that a daemon killed mid-gate left in the state dir: its
 * arm is reverted (after the ab that got its parent's death signal lets
 * go of the journal, up to 30 s) before our policy is applied again, and
 * the trial groups of an ab killed with it swept (sweep_trials).  0, or
 * -errno with err (the journal is kept). */
static int gate_recover(struct daemon *d, struct nt_err *err)
{
	char dir[4200];
	int n;

	snprintf(dir, sizeof(dir), "%s/%s", d->cfg->state_dir, FLEET_GATE_DIR);
	n = fleet_gate_recover(dir, d->cfg->sysroot, 30, err);
	if (n > 0)
		say(d, LOG_NOTICE, "fleet: %s: the gate a stopped daemon left: %d settings restored", dir, n);
	if (d->cfg->fleet_endpoints)
		sweep_trials(d);
	return n < 0 ? n : 0;
}

/* Slurm jobs whose epilog could not revert them (tune/jobstate.h) are
 * reverted before our policy is applied: the daemon must not journal a
 * job's values as the node's originals.  A failure is said and the daemon
 * goes on (doctor names the job while it is pending; the next job's prolog
 * retries it). */
static void slurm_recover(struct daemon *d)
{
	struct apply_changes rep = { 0 };
	struct nt_err err = { 0 };
	int n = jobstate_retry_pending(d->root, d->cfg->sysroot, &rep, &err);

	say_restored(d, &rep);
	if (n < 0)
		say(d, LOG_ERR, "slurm: %s (kept; the next job's prolog retries it)", err.msg);
	else if (n > 0)
		say(d, LOG_NOTICE, "slurm: %d job%s whose epilog could not revert %s: reverted now, %u settings restored",
		    n, n == 1 ? "" : "s", n == 1 ? "it" : "them", rep.n);
	apply_changes_release(&rep);
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
	if ((r = gate_recover(d, err)) < 0)
		return r;
	slurm_recover(d);
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
	say_restored(d, &rep);
	say(d, LOG_NOTICE, "%s: %u settings restored", why, rep.n);
	apply_changes_release(&rep);
}

/* Wait for a signal until the next cycle is due.  Returns the signal, 0 at
 * the deadline, -1 when the fleet's fd (xfd) or a running gate's output
 * (gfd) is readable (-1: none). */
static int wait_signal(int sfd, int xfd, int gfd, double until)
{
	double left = until - nt_mono_s();
	struct pollfd pfd[3] = { { sfd, POLLIN, 0 }, { xfd, POLLIN, 0 }, { gfd, POLLIN, 0 } };
	struct signalfd_siginfo si;

	/* poll skips the entries whose fd is negative */
	if (left > 0 && poll(pfd, 3, (int)ceil(left * 1000)) > 0) {
		if ((pfd[0].revents & POLLIN) && read(sfd, &si, sizeof(si)) == sizeof(si))
			return (int)si.ssi_signo;
		if ((pfd[1].revents & POLLIN) || (pfd[2].revents & (POLLIN | POLLHUP)))
			return -1;
	}
	return 0;
}

enum daemon_action daemon_decide(int sig, double now, double next, bool watchdog, bool gating, bool reload_pending)
{
	if (sig == SIGTERM || sig == SIGINT)
		return DAEMON_STOP;
	if (sig == -1)
		return DAEMON_FLEET;
	if (sig == SIGHUP)     /* applying under a gate would fight its arm */
		return gating ? DAEMON_RELOAD_LATER : DAEMON_RELOAD;
	if (now >= next)
		return reload_pending && !gating ? DAEMON_RELOAD_HELD : DAEMON_CYCLE;
	return watchdog ? DAEMON_PING : DAEMON_WAIT;
}

double daemon_next_due(double next, double now, double interval)
{
	next += interval;
	return next < now ? now + interval : next;
}

static int loop(struct daemon *d, int sfd)
{
	double tick = d->cfg->interval_s, next;
	uint64_t usec = 0;

	if (sd_watchdog_enabled(0, &usec) > 0) {
		d->watchdog_s = usec / 1e6;
		tick = fmin(tick, d->watchdog_s / 2);    /* the verify still runs every interval */
	}
	next = nt_mono_s() + d->cfg->interval_s;
	for (;;) {
		int sig = wait_signal(sfd, fleet_host_fd(d->fleet), fleet_host_gate_fd(d->fleet),
				      fmin(next, nt_mono_s() + tick));

		switch (daemon_decide(sig, nt_mono_s(), next, d->watchdog_s > 0, fleet_host_gating(d->fleet),
				      d->reload_pending)) {
		case DAEMON_STOP: {
			char undo[600] = " until the revert (--revert-on-exit)";

			/* `nodetune revert` finds the default state dir's journal itself */
			if (!d->cfg->revert_on_exit && !strcmp(d->cfg->state_dir, DAEMON_DEFAULT_STATE_DIR))
				snprintf(undo, sizeof(undo), " (undo: nodetune revert)");
			else if (!d->cfg->revert_on_exit)
				snprintf(undo, sizeof(undo), " (undo: nodetune revert --state-dir %s)", d->cfg->state_dir);
			say(d, LOG_NOTICE, "%s: stopping; the host stays as it is%s", strsignal(sig), undo);
			return 0;
		}
		case DAEMON_FLEET:
			fleet_tick(d);          /* the store asked for something */
			break;
		case DAEMON_RELOAD_LATER:
			say(d, LOG_NOTICE, "SIGHUP: a fleet gate holds the host; the reload waits for its end");
			d->reload_pending = true;
			break;
		case DAEMON_RELOAD:
			reload(d);
			next = nt_mono_s() + d->cfg->interval_s;
			break;
		case DAEMON_RELOAD_HELD:
			d->reload_pending = false;
			reload(d);      /* the SIGHUP a gate held back; it cycles */
			next = daemon_next_due(next, nt_mono_s(), d->cfg->interval_s);
			break;
		case DAEMON_CYCLE:
			cycle(d);
			next = daemon_next_due(next, nt_mono_s(), d->cfg->interval_s);
			break;
		case DAEMON_PING:
			sd_notify(0, "WATCHDOG=1");     /* the loop is alive between cycles */
			break;
		case DAEMON_WAIT:
			break;
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
		return err_set(err, -errno, "signalfd: %s", nt_strerror(errno));
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
		fleet_host_gate_end(d.fleet);   /* its arm reverted before ours */
		if (cfg->revert_on_exit)
			revert_all(&d, "--revert-on-exit");
	}
	stop(&d);
	close(sfd);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return r;
}
