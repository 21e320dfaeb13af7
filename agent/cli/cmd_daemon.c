/* SPDX-License-Identifier: MIT */
/* cmd_daemon.c — `nodetune daemon`: keep a policy applied on this host
 * (daemon.h does it; this takes the options, says what happens on stderr
 * with syslog priorities, and maps the result to an exit code). */
#include <errno.h>
#include <libgen.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "tune/limits.h"
#include "daemon/ctlsock.h"
#include "daemon/daemon.h"
#include "daemon/flap.h"
#include "fleet/fleet_creds.h"
#include "fleet/fleet_host.h"
#include "fleet/sign.h"
#include "tune/policy.h"
#include "base/log.h"
#include "daemon/metrics.h"

static const struct opt_row daemon_opts[] = {
	{ OPT_POLICY, OPT_OPTIONAL, "file or NAME (default /etc/nodetune/policy.conf)" },
	{ OPT_TOPOLOGY, OPT_OPTIONAL, NULL },
	{ OPT_SYSROOT, OPT_OPTIONAL, NULL },
	{ OPT_STATE_DIR, OPT_OPTIONAL, "the journal (default /var/lib/nodetune)" },
	{ OPT_INTERVAL_S, OPT_OPTIONAL, NULL },
	{ OPT_FLAP, OPT_OPTIONAL, NULL },
	{ OPT_METRICS, OPT_OPTIONAL, NULL },
	{ OPT_NO_METRICS, OPT_OPTIONAL, NULL },
	{ OPT_TEXTFILE_DIR, OPT_OPTIONAL, NULL },
	{ OPT_SOCKET, OPT_OPTIONAL, NULL },
	{ OPT_REVERT_ON_EXIT, OPT_OPTIONAL, NULL },
	{ OPT_ENDPOINTS, OPT_OPTIONAL, NULL },
	{ OPT_CACERT, OPT_OPTIONAL, NULL },
	{ OPT_CERT, OPT_OPTIONAL, NULL },
	{ OPT_KEY, OPT_OPTIONAL, NULL },
	{ OPT_USER, OPT_OPTIONAL, NULL },
	{ OPT_PASSWORD_FILE, OPT_OPTIONAL, NULL },
	{ OPT_FLEET_CONF, OPT_OPTIONAL, NULL },
	{ OPT_INSECURE_PLAINTEXT, OPT_OPTIONAL, NULL },
	{ OPT_HOST, OPT_OPTIONAL, NULL },
	{ OPT_FLEET_KEYS, OPT_OPTIONAL, NULL },
	{ OPT_FLEET_INSECURE_UNSIGNED, OPT_OPTIONAL, NULL },
	{ OPT_FLEET_ID, OPT_OPTIONAL, NULL },
	{ OPT_FLEET_MAX_AGE, OPT_OPTIONAL, NULL },
	{ OPT_LIMITS, OPT_OPTIONAL, NULL },
	{ OPT_GATES_DIR, OPT_OPTIONAL, NULL },
	{ OPT_JSON, OPT_REFUSED, "the daemon reports through `nodetune status --json` and its metrics; its stderr is a log" },
	OPT_TABLE_END,
};

const struct verb_spec daemon_spec = {
	daemon_opts, VERB_NO_COMMAND,
	"nodetune daemon [OPTIONS] [--host NAME [FLEET OPTIONS]]",
	"keep a policy applied, correct drift and name its cause",
	"Applies the policy, verifies it every --interval, corrects drift naming the\n"
	"other writers, exports metrics; SIGHUP reloads, SIGTERM leaves the host tuned.\n"
	"With --host it joins a fleet and follows its signed policy.  See nodetune(8).",
};

static void daemon_note(int level, const char *msg, void *arg)
{
	(void)arg;
	log_msg(level, "%s", msg);
}

/* The status socket's directory: made (0755) when it is the default's and
 * missing; systemd's RuntimeDirectory= makes it otherwise. */
static void socket_dir(const char *path)
{
	char copy[512];

	snprintf(copy, sizeof(copy), "%s", path);
	if (mkdir(dirname(copy), 0755) < 0 && errno != EEXIST)
		log_msg(LOG_DEBUG, "%s: %s", copy, nt_strerror(errno));
}

/* The policy the store named last, kept in the state dir, when its signer
 * is still trusted (a key revoked since: the daemon's own file, said). */
static bool daemon_cached(const struct daemon_config *cfg, char *buf, size_t size)
{
	struct sign_keyring *kr = sign_keyring_load(cfg->fleet_keys ? cfg->fleet_keys : SIGN_KEYS_DIR,
						     policy_trust_flags() ? SIGN_TRUSTED_ONLY : 0, NULL);
	char why[512] = "";
	const char *p = fleet_host_cached_policy(cfg->state_dir, kr, cfg->fleet_insecure_unsigned, buf, size, why,
						 sizeof(why));

	sign_keyring_free(kr);
	if (!p && *why)
		log_msg(LOG_WARNING, "fleet: not starting with the policy the store named last: %s", why);
	return p != NULL;
}

int cmd_daemon(struct opts *o)
{
	char cached[4096];
	struct daemon_config cfg = {
		.policy_path = o->policy ? o->policy : DAEMON_DEFAULT_POLICY,
		.policy_flags = policy_trust_flags(),
		.topology = o->topology,
		.sysroot = o->sysroot,
		.state_dir = o->given[OPT_STATE_DIR] ? o->state_dir : DAEMON_DEFAULT_STATE_DIR,
		.interval_s = o->given[OPT_INTERVAL_S] ? o->interval_s : DAEMON_DEFAULT_INTERVAL_S,
		.flap_n = FLAP_DEFAULT_N,
		.flap_window_s = FLAP_DEFAULT_WINDOW_S,
		.metrics_addr = o->no_metrics ? NULL : o->metrics ? o->metrics : METRICS_DEFAULT_LISTEN,
		.textfile_dir = o->textfile_dir,
		.socket_path = o->socket ? o->socket : CTLSOCK_DEFAULT_PATH,
		.revert_on_exit = o->revert_on_exit,
		.fleet_host = o->host,
		.fleet_keys = o->fleet_keys,
		.fleet_insecure_unsigned = o->fleet_insecure_unsigned,
		.fleet_max_age_s = o->given[OPT_FLEET_MAX_AGE] ? o->fleet_max_age : 0,
		.limits_path = o->limits,
		.gates_dir = o->gates_dir,
		.note = daemon_note,
	};
	struct nt_err err = { 0 };
	struct fleet_creds creds = { 0 };
	bool runtime = false;
	int r;

	if (o->endpoints && !o->host) {
		log_msg(LOG_ERR, "--endpoints URLS and --host NAME go together");
		return EXIT_USAGE;
	}
	/* --host joins: the endpoints from --endpoints or fleet.conf (a
	 * fleet.conf there for the verbs alone does not make a member) */
	if (o->host && (r = cli_fleet_creds(o, &creds)))
		return r;
	cfg.fleet_endpoints = o->host ? creds.endpoints : NULL;
	cfg.fleet_creds = &creds;
	cfg.fleet_id = creds.fleet_id[0] ? creds.fleet_id : NULL;

	if (o->flap)
		flap_parse(o->flap, &cfg.flap_n, &cfg.flap_window_s);   /* checked by the option */
	if (!o->socket)
		socket_dir(cfg.socket_path);
	/* in a fleet, the policy the store named last (kept in the state dir)
	 * wins over the file: a restart while the store is out of reach keeps it */
	if (o->host && daemon_cached(&cfg, cached, sizeof(cached))) {
		cfg.local_policy = cfg.policy_path;
		cfg.policy_path = cached;
		log_msg(LOG_NOTICE, "fleet: starting with the policy the store named last (%s), not %s", cached,
			cfg.local_policy);
	}
	r = daemon_run(&cfg, &runtime, &err);
	explicit_bzero(&creds, sizeof(creds));
	if (r == 0)
		return 0;
	log_msg(LOG_ERR, "%s", err.msg);
	if (runtime || r == -EACCES)
		return EXIT_RUNTIME;
	return r == -EBUSY || r == -EADDRINUSE ? EXIT_USAGE : exit_code_for(r);
}
