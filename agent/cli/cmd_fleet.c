/* SPDX-License-Identifier: MIT */
/* cmd_fleet.c — `nodetune fleet rollout|resume|abort|status|hosts`: roll a
 * policy through the fleet in waves (fleet_ctl.h does it over etcd; this
 * takes the options, prints the timeline as it happens and the result as
 * a table or JSON, and maps the end state to an exit code). */
#include <errno.h>
#include <limits.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "fleet/etcd.h"
#include "fleet/fleet_auth.h"
#include "fleet/fleet_creds.h"
#include "fleet/fleet_ctl.h"
#include "fleet/sign.h"
#include "base/log.h"
#include "nt_clock.h"

#define DEFAULT_WAVES "1/class,1%,10%,50%,100%"
#define DEFAULT_WAVE_TIMEOUT_S 600.0
#define EXIT_BEHIND 4                /* done, but a host skipped is behind */

#define FLEET_OPTS_COMMON { OPT_ENDPOINTS, OPT_OPTIONAL, NULL }, FLEET_OPTS_CREDS
#define FLEET_OPTS_CREDS { OPT_CACERT, OPT_OPTIONAL, NULL }, { OPT_CERT, OPT_OPTIONAL, NULL }, \
	{ OPT_KEY, OPT_OPTIONAL, NULL }, { OPT_USER, OPT_OPTIONAL, NULL }, { OPT_PASSWORD_FILE, OPT_OPTIONAL, NULL }, \
	{ OPT_FLEET_CONF, OPT_OPTIONAL, NULL }, { OPT_INSECURE_PLAINTEXT, OPT_OPTIONAL, NULL }

static const struct opt_row rollout_opts[] = {
	FLEET_OPTS_COMMON,
	{ OPT_POLICY, OPT_REQUIRED, NULL },
	{ OPT_NAME, OPT_REQUIRED, NULL },
	{ OPT_WAVES, OPT_OPTIONAL, NULL },
	{ OPT_GATE, OPT_OPTIONAL, NULL },
	{ OPT_GATE_BUDGET, OPT_OPTIONAL, NULL },
	{ OPT_WAVE_TIMEOUT, OPT_OPTIONAL, NULL },
	{ OPT_SHADOW, OPT_OPTIONAL, NULL },
	{ OPT_GATE_ALLOW_INCONCLUSIVE, OPT_OPTIONAL, NULL },
	{ OPT_SIGNING_KEY, OPT_OPTIONAL, NULL },
	{ OPT_FLEET_KEYS, OPT_OPTIONAL, NULL },
	{ OPT_FLEET_ID, OPT_OPTIONAL, NULL },
	{ OPT_JSON, OPT_OPTIONAL, NULL },
	OPT_TABLE_END,
};

static const struct opt_row name_opts[] = {
	FLEET_OPTS_COMMON,
	{ OPT_NAME, OPT_REQUIRED, NULL },
	{ OPT_SIGNING_KEY, OPT_OPTIONAL, NULL },
	{ OPT_FLEET_KEYS, OPT_OPTIONAL, NULL },
	{ OPT_FLEET_ID, OPT_OPTIONAL, NULL },
	{ OPT_JSON, OPT_OPTIONAL, NULL },
	OPT_TABLE_END,
};

static const struct opt_row timestamp_opts[] = {
	FLEET_OPTS_COMMON,
	{ OPT_SIGNING_KEY, OPT_REQUIRED, NULL },
	{ OPT_FLEET_ID, OPT_OPTIONAL, NULL },
	{ OPT_JSON, OPT_REFUSED, "timestamp prints one line, its seq and time" },
	OPT_TABLE_END,
};

static const struct opt_row status_opts[] = {
	FLEET_OPTS_COMMON,
	{ OPT_NAME, OPT_OPTIONAL, NULL },
	{ OPT_JSON, OPT_OPTIONAL, NULL },
	OPT_TABLE_END,
};

static const struct opt_row hosts_opts[] = {
	FLEET_OPTS_COMMON,
	{ OPT_JSON, OPT_OPTIONAL, NULL },
	OPT_TABLE_END,
};

/* the rest of each story (exit codes, signing, etcd's credentials) is in
 * nodetune-fleet(8) */
#define SEE_MAN "\nExit codes, signing and etcd's credentials: nodetune-fleet(8)."

const struct verb_spec fleet_rollout_spec = {
	rollout_opts, VERB_NO_COMMAND,
	"nodetune fleet rollout --policy FILE|NAME --name NAME [OPTIONS]\n"
	"                              [ETCD OPTIONS]",
	"roll a policy out in waves (canary gate, rollback)",
	"Validates the policy as every host will, stores it and leads the rollout in\n"
	"waves over the hosts alive now: a wave passes when each of its hosts reports it\n"
	"applied and verified; a failure rolls back every host touched.  --gate: each\n"
	"first-wave host A/Bs the old and new policy first.  A killed controller goes on\n"
	"with fleet resume." SEE_MAN,
};

const struct verb_spec fleet_resume_spec = {
	name_opts, VERB_NO_COMMAND,
	"nodetune fleet resume --name NAME\n"
	"                             [--signing-key FILE [--fleet-keys DIR]]\n"
	"                             [--fleet-id ID] [--json] [ETCD OPTIONS]",
	"go on with a rollout whose controller stopped",
	"Waits for a dead controller's lease to expire (at most 16 s), then leads the\n"
	"rollout from where the store says it is; no step is taken twice." SEE_MAN,
};

const struct verb_spec fleet_abort_spec = {
	name_opts, VERB_NO_COMMAND,
	"nodetune fleet abort --name NAME [--signing-key FILE [--fleet-keys DIR]]\n"
	"                            [--fleet-id ID] [--json] [ETCD OPTIONS]",
	"stop a rollout and put back what it changed",
	"Every host the rollout touched goes back to the policy it ran before; a running\n"
	"controller does it, or this command when there is none." SEE_MAN,
};

const struct verb_spec fleet_timestamp_spec = {
	timestamp_opts, VERB_NO_COMMAND,
	"nodetune fleet timestamp --signing-key FILE [--fleet-id ID]\n"
	"                                [ETCD OPTIONS]",
	"sign the fleet's timestamp again (on a schedule)",
	"Signs /nodetune/timestamp with the controller's key, a day's expiry and the\n"
	"next seq, and prints its seq and time.  A host whose last verified timestamp is\n"
	"older than its --fleet-max-age (default 4h) is frozen: run this on a schedule,\n"
	"e.g. every 15 minutes." SEE_MAN,
};

const struct verb_spec fleet_status_spec = {
	status_opts, VERB_NO_COMMAND,
	"nodetune fleet status [--name NAME] [--json] [ETCD OPTIONS]",
	"a rollout's waves, hosts, verdicts and timeline",
	"A table per rollout: its state, policy, reason, and per wave each host's class,\n"
	"state and gate verdict; then its timeline.  --json: the rollout documents." SEE_MAN,
};

const struct verb_spec fleet_hosts_spec = {
	hosts_opts, VERB_NO_COMMAND,
	"nodetune fleet hosts [--json] [ETCD OPTIONS]",
	"the fleet's hosts: alive, hardware class, policy, last verify",
	"Every host with keys in the store: whether its lease lives, its hardware class,\n"
	"the policy it runs, its last verify, what it was told to run; BEHIND: not its\n"
	"class's policy of record." SEE_MAN,
};

/* ---- output ------------------------------------------------------------ */

static void clock_of(double t, char *buf, size_t size)
{
	time_t s = (time_t)t;

	strftime(buf, size, "%H:%M:%S", localtime(&s));
}

/* The timeline, as it happens: stdout in text mode, stderr with --json. */
static void fleet_note(int level, const char *msg, void *arg)
{
	const struct opts *o = arg;
	char when[16];

	clock_of(nt_wall_s(), when, sizeof(when));
	if (level <= LOG_WARNING || o->json)
		log_msg(level, "%s", msg);
	else if (level <= log_get_level()) {
		printf("%s %s\n", when, msg);
		fflush(stdout);
	}
}

static void print_rollout(const struct fleet_rollout *r)
{
	char when[16];

	printf("rollout %s: %s  policy %s (sha256 %.12s)  waves %s%s%s\n", r->name, fleet_state_names[r->state],
	       r->policy, r->sha256, r->waves_spec, *r->gate ? "  gate: " : "", r->gate);
	if (r->reason)
		printf("reason: %s\n", r->reason);
	printf("%-4s %-8s %-12s %-16s %-34s %-12s %-13s %s\n", "WAVE", "SPEC", "WAVE STATE", "HOST", "CLASS", "STATE",
	       "VERDICT", "RATIO");
	for (unsigned w = 0; w < r->n_waves; w++)
		for (unsigned i = 0; i < r->waves[w].n; i++) {
			const struct fleet_rhost *h = &r->waves[w].hosts[i];
			char cls[96], ratio[16] = "-";

			snprintf(cls, sizeof(cls), "%s (%.6s)", h->label, h->class_id);
			if (*h->verdict)
				snprintf(ratio, sizeof(ratio), "%.3f", h->ratio);
			printf("%-4u %-8s %-12s %-16s %-34s %-12s %-13s %s%s%s\n", w, i ? "" : r->waves[w].spec,
			       i ? "" : fleet_wstate_names[r->waves[w].state], h->host, cls, fleet_rstate_names[h->state],
			       *h->verdict ? h->verdict : "-", ratio, h->note ? "  " : "", h->note ? h->note : "");
		}
	printf("timeline:\n");
	for (unsigned i = 0; i < r->n_events; i++) {
		clock_of(r->events[i].t, when, sizeof(when));
		printf("  %s %s\n", when, r->events[i].what);
	}
}

/* Print rollouts: text, or JSON named schema: one rollout's document, or
 * {"rollouts": [...]} (every rollout, or the one --name gave). */
static int print_rollouts(const struct opts *o, const struct fleet_rollout *r, unsigned n, const char *schema,
			  bool one)
{
	json_t *all = json_array();

	if (!o->json) {
		for (unsigned i = 0; i < n; i++) {
			if (i)
				printf("\n");
			print_rollout(&r[i]);
		}
		if (!n)
			printf("no rollouts\n");
		json_decref(all);
		return finish_stdout(0);
	}
	for (unsigned i = 0; all && i < n; i++) {
		char *s = fleet_rollout_json(&r[i]);

		json_array_append_new(all, s ? json_loads(s, 0, NULL) : NULL);
		free(s);
	}
	if (one && all) {
		json_t *first = json_incref(json_array_get(all, 0));

		json_decref(all);
		all = first;
	} else if (all) {
		all = json_pack("{s:o}", "rollouts", all);
	}
	return print_json(schema, all);
}

static int exit_for_state(const struct fleet_rollout *r)
{
	bool invalid = false;

	for (unsigned w = 0; r->shadow && w < r->n_waves; w++)
		for (unsigned i = 0; i < r->waves[w].n; i++)
			invalid |= r->waves[w].hosts[i].state == FLEET_R_LOST ||
				   (r->waves[w].hosts[i].state == FLEET_R_SHADOWED && !r->waves[w].hosts[i].shadow_valid);
	switch (r->state) {
	case FLEET_DONE:
		return invalid ? EXIT_PROBLEM : 0;
	case FLEET_ROLLED_BACK:
	case FLEET_ABORTED:
		return EXIT_PROBLEM;
	default:
		return EXIT_RUNTIME;
	}
}

/* ---- the verbs --------------------------------------------------------- */

/* The etcd endpoints and credentials: /etc/nodetune/fleet.conf (or
 * --fleet-conf FILE, which must exist) with the options over it; no
 * endpoints from either is refused.  0 or an exit code (said). */
int cli_fleet_creds(const struct opts *o, struct fleet_creds *ret)
{
	struct fleet_creds cl = { 0 };
	struct nt_err err = { 0 };
	const char *conf = o->fleet_conf ? o->fleet_conf : FLEET_CONF;
	const struct { char *field; size_t size; const char *v; } set[] = {
		{ cl.endpoints, sizeof(cl.endpoints), o->endpoints },
		{ cl.cacert, sizeof(cl.cacert), o->cacert }, { cl.cert, sizeof(cl.cert), o->cert },
		{ cl.key, sizeof(cl.key), o->key }, { cl.user, sizeof(cl.user), o->user },
		{ cl.password_file, sizeof(cl.password_file), o->password_file },
		{ cl.fleet_id, sizeof(cl.fleet_id), o->fleet_id },
	};

	cl.insecure_plaintext = o->insecure_plaintext;

	if (fleet_creds_load(conf, o->fleet_conf != NULL, ret, &err) < 0) {
		log_msg(LOG_ERR, "%s", err.msg);
		return EXIT_USAGE;
	}
	for (size_t i = 0; i < sizeof(set) / sizeof(set[0]); i++) {
		if (set[i].v && strlen(set[i].v) >= set[i].size) {
			log_msg(LOG_ERR, "%s: too long", set[i].v);
			return EXIT_USAGE;
		}
		if (set[i].v)
			snprintf(set[i].field, set[i].size, "%s", set[i].v);
	}
	fleet_creds_merge(ret, &cl);
	if (!ret->endpoints[0]) {
		log_msg(LOG_ERR, "no etcd endpoints: give --endpoints URLS or endpoints = in %s", conf);
		return EXIT_USAGE;
	}
	if (ret->password_file[0])
		cli_guard_secrets();
	return 0;
}

/* The controller's signing key (--signing-key): lives as long as the
 * command; wiped at exit by the controller's close (ctl_close). */
static struct sign_key signer;

/* The keys the controller trusts besides its own (--fleet-keys DIR, with
 * --signing-key only).  0 or an exit code (said). */
static int ctl_trust(const struct opts *o, struct fleet_ctl *c)
{
	struct nt_err err = { 0 };
	struct sign_keyring *kr = NULL;
	int r;

	if (o->fleet_keys && !o->signing_key) {
		log_msg(LOG_ERR, "--fleet-keys: only with --signing-key (the keys a signing controller verifies with)");
		return EXIT_USAGE;
	}
	if (o->fleet_keys && !(kr = sign_keyring_load(o->fleet_keys, policy_trust_flags() ? SIGN_TRUSTED_ONLY : 0,
						      &err))) {
		log_msg(LOG_ERR, "--fleet-keys: %s", err.msg);
		return EXIT_USAGE;
	}
	r = o->signing_key ? fleet_ctl_set_trust(c, kr, &err) : 0;
	sign_keyring_free(kr);
	if (r < 0)
		log_msg(LOG_ERR, "--fleet-keys: %s", err.msg);
	return r < 0 ? EXIT_USAGE : 0;
}

static void ctl_close(struct fleet_ctl *c)
{
	fleet_ctl_close(c);
	sign_key_wipe(&signer);
}

/* A controller over the endpoints with the credentials; NULL with
 * *ret_exit: 3 when the store refused us (TLS, login), else 2. */
static struct fleet_ctl *ctl_open(struct opts *o, int *ret_exit)
{
	struct nt_err err = { 0 };
	struct fleet_creds creds;
	char fleet[SIGN_NAME_MAX];
	struct fleet_ctl *c;

	if ((*ret_exit = cli_fleet_creds(o, &creds)))
		return NULL;
	if (o->signing_key)
		cli_guard_secrets();
	snprintf(fleet, sizeof(fleet), "%s", creds.fleet_id[0] ? creds.fleet_id : SIGN_FLEET_DEFAULT);
	if (o->signing_key && sign_key_load(o->signing_key, policy_trust_flags() ? SIGN_TRUSTED_ONLY : 0,
					    &signer, &err) < 0) {
		explicit_bzero(&creds, sizeof(creds));
		log_msg(LOG_ERR, "--signing-key: %s", err.msg);
		*ret_exit = EXIT_USAGE;
		return NULL;
	}
	c = fleet_ctl_open(creds.endpoints, &creds, fleet_note, o, &err);
	explicit_bzero(&creds, sizeof(creds));
	if (c && fleet_ctl_set_fleet(c, fleet, &err) < 0) {
		fleet_ctl_close(c);
		c = NULL;
	}
	if (!c) {
		log_msg(LOG_ERR, "%s", err.msg);
		*ret_exit = err.code == -EACCES ? EXIT_RUNTIME : EXIT_USAGE;
	} else {
		if (o->signing_key)
			fleet_ctl_set_signer(c, &signer);
		if ((*ret_exit = ctl_trust(o, c))) {
			ctl_close(c);
			return NULL;
		}
	}
	return c;
}

static int store_error(const struct nt_err *err)
{
	log_msg(LOG_ERR, "%s", err->msg);
	switch (err->code) {
	case -EINVAL:
	case -EEXIST:
	case -ENOENT:
		return EXIT_USAGE;
	default:
		return EXIT_RUNTIME;
	}
}

/* After a rollout ended done: wait (its --wave-timeout) for the hosts it
 * skipped to converge or leave (fleet_ctl_converge).  0, EXIT_BEHIND
 * (said: who is behind) or a store error's exit (said). */
static int converged(const struct opts *o, struct fleet_ctl *c, const struct fleet_rollout *r)
{
	struct nt_err err = { 0 };
	unsigned behind = 0;
	char names[1024] = "";

	if (fleet_ctl_converge(c, r, r->wave_timeout, names, sizeof(names), &behind, &err) < 0)
		return store_error(&err);
	if (behind) {
		log_msg(LOG_ERR, "done, but behind: %s", names);
		return EXIT_BEHIND;
	}
	if (*names && !o->json)
		printf("skipped: %s\n", names);
	return 0;
}

/* Lead rollout name to its end (abort: roll it back) and print it (JSON
 * named schema). */
static int lead(struct opts *o, struct fleet_ctl *c, const char *schema, bool abort, bool wait)
{
	struct fleet_rollout r = { 0 };
	struct nt_err err = { 0 };
	enum fleet_state final;
	int rc = abort ? fleet_ctl_abort(c, o->name, &final, &err) : fleet_ctl_run(c, o->name, false, wait, &final, &err);

	if (rc == 0)
		rc = fleet_ctl_get(c, o->name, &r, &err);
	if (rc < 0)
		return store_error(&err);
	rc = print_rollouts(o, &r, 1, schema, true);
	if (rc == 0)
		rc = exit_for_state(&r);
	if (rc == 0 && !abort)
		rc = converged(o, c, &r);
	fleet_rollout_release(&r);
	return rc;
}

/* The policy file (a NAME: found on the policy path) with its includes
 * resolved here, as the one self-contained text the rollout stores,
 * checked as a host will check it (without a machine to plan on: each host
 * plans it on its own). */
static int read_policy(const struct opts *o, char **ret, size_t *ret_len)
{
	struct nt_err err = { 0 };

	if (fleet_ctl_policy_text(o->policy, policy_trust_flags(), ret, ret_len, &err) < 0) {
		log_msg(LOG_ERR, "%s", err.msg);
		return EXIT_USAGE;
	}
	return 0;
}

int cmd_fleet_rollout(struct opts *o)
{
	const char *base = strrchr(o->policy, '/');
	struct fleet_rollout_opts ro = {
		o->name, base ? base + 1 : o->policy, NULL, 0, o->waves ? o->waves : DEFAULT_WAVES, o->gate,
		o->gate_budget, o->given[OPT_WAVE_TIMEOUT] ? o->wave_timeout : DEFAULT_WAVE_TIMEOUT_S, o->shadow,
		o->gate_allow_inconclusive,
	};
	struct fleet_wave_spec spec[FLEET_WAVES_MAX];
	struct nt_err err = { 0 };
	struct fleet_ctl *c;
	char *content;
	unsigned n;
	int rc;

	if (fleet_waves_parse(ro.waves, spec, &n, &err) < 0) {
		log_msg(LOG_ERR, "%s", err.msg);
		return EXIT_USAGE;
	}
	if ((rc = read_policy(o, &content, &ro.content_len)))
		return rc;
	ro.content = content;
	if (!(c = ctl_open(o, &rc))) {
		free(content);
		return rc;
	}
	rc = fleet_ctl_create(c, &ro, &err) < 0 ? store_error(&err) : lead(o, c, "fleet.rollout", false, false);
	ctl_close(c);
	free(content);
	return rc;
}

/* resume and abort: lead rollout --name to its end. */
static int lead_named(struct opts *o, const char *schema, bool abort)
{
	int rc;
	struct fleet_ctl *c = ctl_open(o, &rc);

	if (!c)
		return rc;
	rc = lead(o, c, schema, abort, true);
	ctl_close(c);
	return rc;
}

int cmd_fleet_resume(struct opts *o)
{
	return lead_named(o, "fleet.resume", false);
}

int cmd_fleet_abort(struct opts *o)
{
	return lead_named(o, "fleet.abort", true);
}

int cmd_fleet_timestamp(struct opts *o)
{
	struct fleet_stamp st = { 0 };
	struct nt_err err = { 0 };
	int rc;
	struct fleet_ctl *c = ctl_open(o, &rc);

	if (!c)
		return rc;
	rc = fleet_ctl_timestamp(c, &st, &err) < 0 ? store_error(&err) : 0;
	ctl_close(c);
	if (rc == 0)
		printf("timestamp: seq %llu, time %lld\n", (unsigned long long)st.seq, (long long)st.time);
	return finish_stdout(rc);
}

int cmd_fleet_status(struct opts *o)
{
	struct fleet_rollout one = { 0 }, *all = NULL;
	struct nt_err err = { 0 };
	unsigned n = 0;
	int rc;
	struct fleet_ctl *c = ctl_open(o, &rc);

	if (!c)
		return rc;
	rc = o->name ? fleet_ctl_get(c, o->name, &one, &err) : fleet_ctl_list(c, &all, &n, &err);
	if (rc < 0)
		rc = store_error(&err);
	else
		rc = o->name ? print_rollouts(o, &one, 1, "fleet.status", false)
			     : print_rollouts(o, all, n, "fleet.status", false);
	fleet_rollout_release(&one);
	for (unsigned i = 0; i < n; i++)
		fleet_rollout_release(&all[i]);
	free(all);
	ctl_close(c);
	return rc;
}

static json_t *host_json(const struct fleet_host_row *h)
{
	json_t *o = json_pack("{s:s, s:b}", "host", h->host, "alive", h->alive);

	if (h->alive)
		json_object_set_new(o, "class", json_pack("{s:s, s:s}", "id", h->info.class_id, "label", h->info.label));
	if (h->has_status)
		json_object_set_new(o, "status", json_pack("{s:s, s:s, s:s, s:I, s:b, s:i, s:f, s:s}", "policy",
							   h->status.policy, "sha256", h->status.sha256, "state",
							   fleet_hstate_names[h->status.state], "desired_rev",
							   (json_int_t)h->status.desired_rev, "verify_ok",
							   h->status.verify_ok, "drifted", (int)h->status.drifted,
							   "verify_time", h->status.verify_time, "error", h->status.error));
	if (h->has_desired)
		json_object_set_new(o, "desired", json_pack("{s:s, s:s, s:s}", "rollout", h->desired.rollout, "policy",
							    h->desired.policy, "sha256", h->desired.sha256));
	if (*h->record_sha)
		json_object_set_new(o, "record", json_pack("{s:s, s:b}", "sha256", h->record_sha, "behind", h->behind));
	if (*h->bad)
		json_object_set_new(o, "bad_value", json_string(h->bad));
	return o;
}

static void print_host(const struct fleet_host_row *h)
{
	char when[16] = "-", cls[96] = "-";

	if (h->has_status && h->status.verify_time > 0)
		clock_of(h->status.verify_time, when, sizeof(when));
	if (h->alive)
		snprintf(cls, sizeof(cls), "%s (%.6s)", h->info.label, h->info.class_id);
	printf("%-16s %-5s %-34s %-22s %-12.12s %-9s %-8s %s%s%.12s%s%s\n", h->host, h->alive ? "yes" : "no", cls,
	       h->has_status ? h->status.policy : "-", h->has_status ? h->status.sha256 : "-",
	       h->has_status ? fleet_hstate_names[h->status.state] : "-", when,
	       h->has_desired ? h->desired.rollout : "-", h->behind ? "  BEHIND: its class's policy of record is " : "",
	       h->behind ? h->record_sha : "", *h->bad ? "  bad value: " : "", h->bad);
}

int cmd_fleet_hosts(struct opts *o)
{
	struct fleet_host_row *rows = NULL;
	struct nt_err err = { 0 };
	unsigned n = 0;
	int rc;
	struct fleet_ctl *c = ctl_open(o, &rc);

	if (!c)
		return rc;
	rc = fleet_ctl_hosts(c, &rows, &n, &err);
	ctl_close(c);
	if (rc < 0)
		return store_error(&err);
	if (o->json) {
		json_t *a = json_array();

		for (unsigned i = 0; a && i < n; i++)
			json_array_append_new(a, host_json(&rows[i]));
		free(rows);
		return print_json("fleet.hosts", json_pack("{s:o}", "hosts", a));
	}
	printf("%-16s %-5s %-34s %-22s %-12s %-9s %-8s %s\n", "HOST", "ALIVE", "CLASS", "POLICY", "SHA256", "STATE",
	       "VERIFIED", "DESIRED BY");
	for (unsigned i = 0; i < n; i++)
		print_host(&rows[i]);
	free(rows);
	return finish_stdout(0);
}

/* ---- init-auth --------------------------------------------------------- */

static const struct opt_row init_auth_opts[] = {
	FLEET_OPTS_COMMON,
	{ OPT_HOSTS, OPT_REQUIRED, NULL },
	{ OPT_PASSWORD_DIR, OPT_REQUIRED, NULL },
	{ OPT_PRINT, OPT_OPTIONAL, NULL },
	{ OPT_JSON, OPT_REFUSED, "init-auth prints etcdctl commands (--print) or what it created, one line each" },
	OPT_TABLE_END,
};

const struct verb_spec fleet_init_auth_spec = {
	init_auth_opts, VERB_NO_COMMAND,
	"nodetune fleet init-auth --hosts NAME[,NAME...] --password-dir DIR\n"
	"                                [--print] [ETCD OPTIONS]",
	"the fleet's etcd roles and users (least privilege)",
	"Creates in etcd (--print: prints the etcdctl commands instead) the role and\n"
	"user nodetune-controller, per host NAME a role and user nodetune-host-NAME that\n"
	"reads and writes its own keys alone, then root and auth enable.  Passwords are\n"
	"DIR/USER, made when absent, never on a command line." SEE_MAN,
};

/* Every user's password file, DIR/USER: each one there checked first
 * (fleet_auth_password_file), then those absent made, so that a refused
 * one leaves DIR as it was.  0 or an exit code (said). */
static int password_files(const char *dir, const struct fleet_auth_step *steps, unsigned n)
{
	struct nt_err err = { 0 };

	for (int make = 0; make < 2; make++)
		for (unsigned i = 0; i < n; i++) {
			if (steps[i].op != FLEET_AUTH_USER_ADD ||
			    fleet_auth_password_file(dir, steps[i].name, make, &err) == 0)
				continue;
			log_msg(LOG_ERR, "%s", err.msg);
			return err.code == -EPERM || err.code == -ENOENT ? EXIT_USAGE : exit_code_for(err.code);
		}
	return 0;
}

/* One step of the plan as an etcdctl command (a user's password fed on
 * stdin from its file, made before). */
static void print_step(const char *ctl, const char *dir, const struct fleet_auth_step *s)
{

	switch (s->op) {
	case FLEET_AUTH_ROLE_ADD:
		printf("%s role add %s\n", ctl, s->name);
		break;
	case FLEET_AUTH_ROLE_GRANT:
		printf("%s role grant-permission %s%s %s %s\n", ctl, s->name, s->prefix ? " --prefix=true" : "",
		       fleet_auth_perm_names[s->perm], s->key);
		break;
	case FLEET_AUTH_USER_ADD:
		printf("%s user add %s --interactive=false < '%s/%s'\n", ctl, s->name, dir, s->name);
		break;
	case FLEET_AUTH_USER_GRANT:
		printf("%s user grant-role %s %s\n", ctl, s->name, s->role);
		break;
	case FLEET_AUTH_ENABLE:
		printf("%s auth enable\n", ctl);
		break;
	}
}

/* Take the steps through the gateway, with the credentials given (none
 * while auth is off; root's to add hosts later).  A role or user that
 * exists is left as it is.  0 or an exit code (said). */
static int apply_steps(struct opts *o, const struct fleet_auth_step *steps, unsigned n)
{
	struct fleet_creds creds;
	struct nt_err err = { 0 };
	struct etcd *e;
	unsigned existed = 0;
	int rc = cli_fleet_creds(o, &creds);

	if (rc)
		return rc;
	if (!(e = etcd_open(creds.endpoints, &err)) || fleet_creds_apply(e, &creds, &err) < 0) {
		log_msg(LOG_ERR, "%s", err.msg);
		etcd_close(e);
		return EXIT_USAGE;
	}
	for (unsigned i = 0; rc == 0 && i < n; i++) {
		char path[PATH_MAX], *password = NULL;
		int r = 0;

		if (steps[i].op == FLEET_AUTH_USER_ADD) {
			snprintf(path, sizeof(path), "%s/%s", o->password_dir, steps[i].name);
			r = fleet_creds_read_password(path, &password, &err);
		}
		if (r == 0)
			r = fleet_auth_apply(e, &steps[i], password, &err);
		if (password) {
			explicit_bzero(password, strlen(password));
			free(password);
		}
		if (r == -EEXIST)
			existed++;
		else if (r < 0) {
			log_msg(LOG_ERR, "%s", err.msg);
			rc = r == -EACCES || r == -ENOMEM ? EXIT_RUNTIME : exit_code_for(r);
		}
	}
	etcd_close(e);
	if (rc == 0)
		printf("init-auth: %u steps taken (%u roles or users existed already); auth is enabled; passwords in %s\n",
		       n - existed, existed, o->password_dir);
	return rc;
}

/* --hosts a,b,c into hosts[] (pointing into buf).  The count. */
static unsigned split_hosts(char *buf, const char **hosts, unsigned max)
{
	unsigned n = 0;
	char *save = NULL;

	for (char *h = strtok_r(buf, ",", &save); h && n < max; h = strtok_r(NULL, ",", &save))
		hosts[n++] = h;
	return n;
}

int cmd_fleet_init_auth(struct opts *o)
{
	char ctl[2 * PATH_MAX + FLEET_ENDPOINTS_MAX + 256], endpoints[FLEET_ENDPOINTS_MAX], cacert[PATH_MAX];
	char *buf = strdup(o->hosts);
	struct fleet_creds creds;
	const char **hosts = calloc(FLEET_HOSTS_MAX + 1, sizeof(*hosts));
	struct fleet_auth_step *steps = NULL;
	struct nt_err err = { 0 };
	unsigned n = 0;
	int rc = 0;

	cli_guard_secrets();     /* it makes and reads every user's password */
	if ((rc = cli_fleet_creds(o, &creds)))
		goto out;
	snprintf(endpoints, sizeof(endpoints), "%s", creds.endpoints);
	snprintf(cacert, sizeof(cacert), "%s", creds.cacert);
	explicit_bzero(&creds, sizeof(creds));
	if (strchr(endpoints, '\'') || strchr(cacert, '\'') ||
		   strchr(o->password_dir, '\'')) {
		log_msg(LOG_ERR, "init-auth: a quote in --endpoints, --cacert or --password-dir");
		rc = EXIT_USAGE;
	} else if (!buf || !hosts) {
		rc = EXIT_RUNTIME;
	} else if (fleet_auth_plan(hosts, split_hosts(buf, hosts, FLEET_HOSTS_MAX + 1), &steps, &n, &err) < 0) {
		log_msg(LOG_ERR, "--hosts: %s", err.msg);
		rc = err.code == -ENOMEM ? EXIT_RUNTIME : EXIT_USAGE;
	}
	snprintf(ctl, sizeof(ctl), "ETCDCTL_API=3 etcdctl --endpoints='%s'%s%s%s", endpoints,
		 cacert[0] ? " --cacert='" : "", cacert, cacert[0] ? "'" : "");
	if (rc == 0)
		rc = password_files(o->password_dir, steps, n);
	if (rc == 0 && !o->print)
		rc = apply_steps(o, steps, n);
	else if (rc == 0)
		printf("set -e\n");
	for (unsigned i = 0; o->print && rc == 0 && i < n; i++)
		print_step(ctl, o->password_dir, &steps[i]);
out:
	free(steps);
	free(hosts);
	free(buf);
	return finish_stdout(rc);
}
