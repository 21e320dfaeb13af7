/* SPDX-License-Identifier: MIT */
/* cli.c — helpers the verbs share (see cli.h). */
#include "cli.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>

#include "tune/limits.h"
#include "ab/abrun.h"
#include "base/log.h"
#include "daemon/daemon.h"
#include "tune/journal.h"
#include "tune/launch.h"

const char *const cli_state_dirs[] = { JOURNAL_DEFAULT_DIR, DAEMON_DEFAULT_STATE_DIR, NULL };

int finish_stdout(int rc)
{
	int e;

	errno = 0;
	if (fflush(stdout) == 0 && !ferror(stdout))
		return rc;
	e = errno;    /* 0 when an earlier write failed and this flush had nothing left */
	log_msg(LOG_ERR, "writing standard output failed%s%s", e ? ": " : "", e ? nt_strerror(e) : "");
	return rc >= EXIT_USAGE ? rc : EXIT_RUNTIME;
}

int exit_code_for(int err)
{
	switch (err) {
	case -ENOMEM:
	case -EIO:
	case -EAGAIN:
	case -EINTR:
	case -EBUSY:
	case -ERANGE:
		return EXIT_RUNTIME;
	default:
		return EXIT_USAGE;
	}
}

json_t *cli_schema_doc(const char *name, json_t *doc)
{
	char id[96];
	json_t *named;

	snprintf(id, sizeof(id), "nodetune.%s/%d", name, NT_JSON_VERSION);
	named = json_is_object(doc) ? json_pack("{s:s}", "schema", id) : NULL;
	if (named && json_object_update(named, doc) < 0)
		json_decref(named), named = NULL;
	json_decref(doc);
	return named;
}

int print_json(const char *name, json_t *doc)
{
	int r = 0;

	if (name && doc)
		doc = cli_schema_doc(name, doc);
	if (!doc || json_dumpf(doc, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER) < 0) {
		/* a failed write is said once, by finish_stdout */
		if (!ferror(stdout))
			log_msg(LOG_ERR, "writing JSON failed%s", doc ? "" : ": out of memory");
		r = EXIT_RUNTIME;
	} else {
		fputc('\n', stdout);
	}
	json_decref(doc);
	return r;
}

void cli_note(int level, const char *msg, void *arg)
{
	(void)arg;
	log_msg(level, "%s", msg);
}

void ctx_release(struct ctx *x)
{
	plan_free(x->plan);
	topo_free(x->topo);
	policy_free(x->policy);
	fsroot_free(x->root);
	memset(x, 0, sizeof(*x));
}

int ctx_load(struct ctx *x, const struct opts *o, unsigned nranks, bool want_root)
{
	struct nt_err err = { 0 };

	memset(x, 0, sizeof(*x));
	if (o->policy) {
		x->policy = policy_load(o->policy, policy_trust_flags(), &err);
		if (!x->policy)
			goto out_err;
	}
	if (o->topology)
		x->topo = topo_load_xml(o->topology, &err);
	else if (o->synthetic)
		x->topo = topo_load_synthetic(o->synthetic, &err);
	else
		x->topo = topo_load_host(o->sysroot, &err);
	if (!x->topo)
		goto out_err;
	if (want_root && (o->sysroot || (!o->topology && !o->synthetic))) {
		x->root = fsroot_open(o->sysroot ? o->sysroot : "/");
		if (!x->root) {
			err_set(&err, -EINVAL, "--sysroot %s: %s", o->sysroot, nt_strerror(errno));
			goto out_err;
		}
	}
	if (x->policy) {
		x->plan = plan_build(x->policy, x->topo, nranks, x->root, &err);
		if (!x->plan)
			goto out_err;
	}
	return -1;
out_err:
	log_msg(LOG_ERR, "%s", err.msg);
	ctx_release(x);
	return exit_code_for(err.code);
}

int cli_check_limits(const struct ctx *x, const struct opts *o)
{
	struct nt_err err = { 0 };

	if (limits_check_file(o->limits, policy_trust_flags(), x->policy, x->topo, &err) < 0) {
		log_msg(LOG_ERR, "%s", err.msg);
		return exit_code_for(err.code);
	}
	return 0;
}

int cli_check_policy(const struct ab_config *cfg, const char *what, const char *policy)
{
	struct nt_err err = { 0 };

	if (abrun_policy_check(cfg, policy, &err) < 0) {
		log_msg(LOG_ERR, "%s: %s", what, err.msg);
		return exit_code_for(err.code);
	}
	return 0;
}

int cli_check_arm(const struct ab_config *cfg, const struct ab_arm *arm)
{
	char what[16];
	int rc;

	snprintf(what, sizeof(what), "arm %s", arm->name);
	if (arm->policy && (rc = cli_check_policy(cfg, what, arm->policy)))
		return rc;
	if (arm->argv[0] && !launch_command_found(arm->argv[0])) {
		log_msg(LOG_ERR, "arm %s: %s: command not found", arm->name, arm->argv[0]);
		return EXIT_USAGE;
	}
	return 0;
}

void cli_ab_config(const struct opts *o, struct ab_config *cfg)
{
	ab_config_defaults(cfg);
	if (o->given[OPT_TRIALS])
		cfg->trials = (int)o->trials;
	if (o->given[OPT_STEPS])
		cfg->steps = (int)o->steps;
	if (o->given[OPT_THRESHOLD])
		cfg->threshold = o->threshold;
	if (o->given[OPT_ALPHA])
		cfg->alpha = o->alpha;
	if (o->given[OPT_TRIM])
		cfg->trim = o->trim;
	if (o->given[OPT_BUDGET])
		cfg->budget_s = o->budget;
	if (o->given[OPT_SEED])
		cfg->seed = o->seed;
	if (o->given[OPT_SKIP_STEPS])
		cfg->skip_steps = o->skip_steps;
	cfg->metric = o->metric;
	cfg->limits = o->limits;
	if (o->metric_kind && !strcmp(o->metric_kind, "time"))
		cfg->metric_kind = ABFIGURE_TIME;
}

int cli_ab_machine(const struct opts *o, struct ab_config *cfg)
{
	struct nt_err err = { 0 };

	if (o->topology && !o->sysroot) {
		log_msg(LOG_ERR, "--topology describes another machine: the trials need this host or --sysroot DIR");
		return EXIT_USAGE;
	}
	cfg->sysroot = o->sysroot;
	cfg->topology = o->topology;
	if (o->as_user && ab_as_user(cfg, o->as_user, &err) < 0) {
		log_msg(LOG_ERR, "%s", err.msg);
		return EXIT_USAGE;
	}
	if (o->sysroot)
		setenv("NODETUNE_SYSROOT", o->sysroot, 1);
	return 0;
}

int cli_ab_files(const struct opts *o, const char *prefix, struct ab_files *f, struct ab_config *cfg)
{
	struct nt_err err = { 0 };

	if ((o->trial_dir ? ab_files_make_in(f, o->trial_dir, cfg, &err) : ab_files_make(f, prefix, cfg, &err)) < 0) {
		log_msg(LOG_ERR, "%s", err.msg);
		return EXIT_RUNTIME;
	}
	return 0;
}

void cli_guard_secrets(void)
{
	struct rlimit rl;

	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
		log_msg(LOG_DEBUG, "prctl(PR_SET_DUMPABLE): %s", nt_strerror(errno));
	if (getrlimit(RLIMIT_CORE, &rl) == 0) {
		rl.rlim_cur = 0;
		if (setrlimit(RLIMIT_CORE, &rl) < 0)
			log_msg(LOG_DEBUG, "setrlimit(RLIMIT_CORE): %s", nt_strerror(errno));
	}
}
