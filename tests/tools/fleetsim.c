/* SPDX-License-Identifier: MIT */
/* fleetsim — N fleet hosts in one process, running the real host code
 * (fleet_host.h: its lease thread, watch, tick, apply, verify, status),
 * for bench/fleet_scale.sh (issue 43, item 3).
 *
 *   fleetsim --endpoints URLS --dir DIR --first I --count N --policy FILE
 *            --topologies XML[,XML...] --keys-dir D --gates-dir D
 *            [--interval S] [--loops K] [--ramp S] [--cacert F --password-dir D]
 *
 * Host h<k> (k = I .. I+N-1) runs on DIR/h<k>/root (a tree the caller
 * copied: apply writes into it) with its state in DIR/h<k>/state, the
 * topology k mod the count of XMLs (the classes of fleet_scale.sh), and
 * logs in as nodetune-host-h<k> with DIR's password file of that name when
 * --password-dir is given, and DIR/h<k>/limits.conf as its site limits
 * when the caller made one (a host that refuses a policy).  Each host is what `nodetune daemon --fleet`
 * holds: its fsroot, journal, policy and plan, applied at the start; the
 * loop then does the daemon's cycle per host every interval (verify, then
 * fleet_host_tick) and ticks a host at once when its fleet_host_fd (or a
 * gate's fd) is readable.  Unlike N daemons: one process, K poll loops
 * (--loops, 8 by default: the hosts split into K slices, each ticked by
 * its own thread, so that one host's apply or slow store request holds up
 * N/K hosts, not N; a daemon holds up only itself), two threads per host
 * (the lease and watch threads) with small stacks; each host still has its
 * own etcd clients (its connections, lease and watch), as a daemon has.
 * --ramp S starts the hosts evenly over S seconds (0, the default: as fast
 * as they come up), as a fleet's daemons start over its hosts' boots.  A gate's `ab` (argv[1] "ab": fleet_gate.h runs
 * /proc/self/exe) becomes build/nodetune's.  Prints "fleetsim: N hosts up" on stdout when every
 * host started; SIGTERM or SIGINT stops them all (leases revoked).
 * Exit 2 on a bad argument, 3 when a host cannot start. */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <sha2.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "nt_clock.h"
#include "base/fsroot.h"
#include "fleet/fleet_creds.h"
#include "fleet/fleet_host.h"
#include "machine/topo.h"
#include "tune/apply.h"
#include "tune/journal.h"
#include "tune/plan.h"
#include "tune/policy.h"
#include "tune/verify.h"

#define TOPOS_MAX 8

struct sim_host {
	char name[FLEET_NAME_MAX], root_path[512], state[512], limits[512];
	struct fsroot *root;
	const struct topo *topo;
	struct journal *j;
	struct policy *policy;
	struct plan *plan;
	char sha256[SHA256_DIGEST_STRING_LENGTH];
	char policy_name[FLEET_NAME_MAX];
	struct fleet_creds creds;
	struct fleet_host *fh;
	bool verify_ok;
	unsigned checked, drifted;
	double verify_wall;
	double next_cycle;            /* monotonic */
};

struct sim {
	const char *endpoints, *dir, *policy, *keys, *gates, *cacert, *pwdir;
	long first, count, loops;
	double interval, ramp;
	struct topo *topos[TOPOS_MAX];
	const char *topo_paths[TOPOS_MAX];
	unsigned n_topos;
	struct sim_host *h;
};

static volatile sig_atomic_t stop_now;

static void on_signal(int sig)
{
	(void)sig;
	stop_now = 1;
}

/* A host's notes: errors only, to stderr with its name (the log of N). */
static void sim_note(int level, const char *msg, void *arg)
{
	if (level <= LOG_WARNING)
		fprintf(stderr, "%s: %s\n", ((struct sim_host *)arg)->name, msg);
}

static int usage(const char *why)
{
	fprintf(stderr, "fleetsim: %s\n", why);
	return 2;
}

static int parse_topos(struct sim *s, char *list)
{
	for (char *save = NULL, *t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		struct nt_err err = { 0 };

		if (s->n_topos == TOPOS_MAX)
			return usage("--topologies: more than 8");
		s->topo_paths[s->n_topos] = t;
		if (!(s->topos[s->n_topos++] = topo_load_xml(t, &err)))
			return usage(err.msg);
	}
	return s->n_topos ? 0 : usage("--topologies: none");
}

static int parse_args(struct sim *s, int argc, char **argv)
{
	static const struct option lo[] = {
		{ "endpoints", 1, 0, 'e' }, { "dir", 1, 0, 'd' }, { "first", 1, 0, 'f' }, { "count", 1, 0, 'n' },
		{ "policy", 1, 0, 'p' }, { "topologies", 1, 0, 't' }, { "keys-dir", 1, 0, 'k' },
		{ "gates-dir", 1, 0, 'g' }, { "interval", 1, 0, 'i' }, { "cacert", 1, 0, 'c' },
		{ "password-dir", 1, 0, 'w' }, { "loops", 1, 0, 'l' }, { "ramp", 1, 0, 'r' },
		{ 0, 0, 0, 0 }
	};
	char *topos = NULL;

	s->first = 1;
	s->interval = 30;
	s->loops = 8;
	for (int c; (c = getopt_long(argc, argv, "", lo, NULL)) != -1;) {
		switch (c) {
		case 'e': s->endpoints = optarg; break;
		case 'd': s->dir = optarg; break;
		case 'f': s->first = strtol(optarg, NULL, 10); break;
		case 'n': s->count = strtol(optarg, NULL, 10); break;
		case 'p': s->policy = optarg; break;
		case 't': topos = optarg; break;
		case 'k': s->keys = optarg; break;
		case 'g': s->gates = optarg; break;
		case 'i': s->interval = strtod(optarg, NULL); break;
		case 'c': s->cacert = optarg; break;
		case 'w': s->pwdir = optarg; break;
		case 'l': s->loops = strtol(optarg, NULL, 10); break;
		case 'r': s->ramp = strtod(optarg, NULL); break;
		default: return 2;
		}
	}
	if (!s->endpoints || !s->dir || !s->policy || !topos || s->count < 1 || s->first < 1 || s->interval <= 0 ||
	    s->loops < 1 || s->loops > 256 || s->ramp < 0 || s->ramp > 3600)
		return usage("--endpoints, --dir, --policy, --topologies and --count N (N >= 1) are needed "
			     "(--loops 1 to 256, --ramp 0 to 3600 s)");
	return parse_topos(s, topos);
}

/* The daemon's start_inputs and start_host for one host, without its
 * servers: the tree, the policy planned and applied over the journal. */
static int host_inputs(const struct sim *s, struct sim_host *h, struct nt_err *err)
{
	struct apply_changes rep = { 0 };
	int r;

	if (!(h->root = fsroot_open(h->root_path)))
		return err_set(err, -errno, "%s: cannot open", h->root_path);
	if (!(h->policy = policy_load(s->policy, policy_trust_flags(), err)))
		return -EINVAL;
	if (!(h->plan = plan_build(h->policy, h->topo, 0, h->root, err)))
		return -EINVAL;
	if (!SHA256File(s->policy, h->sha256))
		return err_set(err, -errno, "%s: cannot read", s->policy);
	if (!(h->j = journal_open(h->state, err)))
		return -EIO;
	r = apply_converge(h->plan, h->root, h->j, NULL, NULL, &rep, err);
	apply_changes_release(&rep);
	return r;
}

static void host_creds(const struct sim *s, struct sim_host *h)
{
	snprintf(h->creds.endpoints, sizeof(h->creds.endpoints), "%s", s->endpoints);
	if (s->cacert)
		snprintf(h->creds.cacert, sizeof(h->creds.cacert), "%s", s->cacert);
	if (s->pwdir) {
		snprintf(h->creds.user, sizeof(h->creds.user), "nodetune-host-%s", h->name);
		snprintf(h->creds.password_file, sizeof(h->creds.password_file), "%s/nodetune-host-%s", s->pwdir,
			 h->name);
	}
}

static int host_start(const struct sim *s, struct sim_host *h, long k, struct nt_err *err)
{
	const char *base = strrchr(s->policy, '/');
	unsigned t = (unsigned)(k % s->n_topos);
	struct fleet_host_config fc = { 0 };

	snprintf(h->name, sizeof(h->name), "h%ld", k);
	snprintf(h->root_path, sizeof(h->root_path), "%s/h%ld/root", s->dir, k);
	snprintf(h->state, sizeof(h->state), "%s/h%ld/state", s->dir, k);
	snprintf(h->policy_name, sizeof(h->policy_name), "%s", base ? base + 1 : s->policy);
	h->topo = s->topos[t];
	if (host_inputs(s, h, err) < 0)
		return err->code ? err->code : -EINVAL;
	host_creds(s, h);
	fc.endpoints = s->endpoints;
	fc.creds = &h->creds;
	fc.host = h->name;
	fc.state_dir = h->state;
	fc.local_policy = fc.start_policy = s->policy;
	fc.sysroot = h->root_path;
	fc.topology = s->topo_paths[t];
	fc.interval_s = s->interval;
	fc.note = sim_note;
	fc.note_arg = h;
	fc.keys_dir = s->keys;
	fc.gates_dir = s->gates;
	snprintf(h->limits, sizeof(h->limits), "%s/h%ld/limits.conf", s->dir, k);
	fc.limits_path = access(h->limits, F_OK) == 0 ? h->limits : NULL;
	h->fh = fleet_host_start(&fc, h->topo, err);
	return h->fh ? 0 : err->code;
}

/* The daemon's fleet_tick: the view of this host's state. */
static void host_tick(struct sim_host *h)
{
	struct fleet_host_view v = { h->root, h->topo, h->j, &h->policy, &h->plan, h->sha256, h->policy_name,
				     h->verify_ok, h->checked, h->drifted, h->verify_wall };

	fleet_host_tick(h->fh, &v);
}

/* The daemon's cycle: verify (not while a gate holds the host), tick. */
static void host_cycle(struct sim_host *h)
{
	struct verify_result res = { 0 };
	struct nt_err err = { 0 };

	if (!fleet_host_gating(h->fh)) {
		h->verify_ok = verify_plan(h->plan, h->root, &res, &err) == 0;
		h->checked = res.checked;
		h->drifted = res.n;
		h->verify_wall = nt_wall_s();
		verify_result_release(&res);
	}
	host_tick(h);
}

static void host_free(struct sim_host *h)
{
	fleet_host_gate_end(h->fh);
	fleet_host_stop(h->fh);
	journal_close(h->j);
	plan_free(h->plan);
	policy_free(h->policy);
	fsroot_free(h->root);
}

/* One poll loop's hosts: s->h[first .. first + count - 1]. */
struct slice {
	const struct sim *s;
	long first, count;
};

/* Poll a slice's fds; tick the readable hosts.  Each host's cycle comes
 * an interval after its last one ended, as a daemon's does (the first ones
 * spread over an interval, as N daemons started apart are).  Returns the
 * seconds until the next cycle due. */
static double cycles_due(const struct slice *sl)
{
	const struct sim *s = sl->s;
	double now = nt_mono_s(), soonest = s->interval;

	for (long i = sl->first; i < sl->first + sl->count; i++) {
		struct sim_host *h = &s->h[i];

		if (h->next_cycle <= now) {
			host_cycle(h);
			now = nt_mono_s();
			h->next_cycle = now + s->interval;
		}
		if (h->next_cycle - now < soonest)
			soonest = h->next_cycle - now;
	}
	return soonest;
}

static void *run_slice(void *arg)
{
	const struct slice *sl = arg;
	struct sim_host *h = &sl->s->h[sl->first];
	struct pollfd *pf = calloc((size_t)sl->count * 2, sizeof(*pf));
	double wait = 0;

	if (!pf)
		return NULL;
	while (!stop_now) {
		int n;

		for (long i = 0; i < sl->count; i++) {
			pf[2 * i] = (struct pollfd){ .fd = fleet_host_fd(h[i].fh), .events = POLLIN };
			pf[2 * i + 1] = (struct pollfd){ .fd = fleet_host_gate_fd(h[i].fh), .events = POLLIN };
		}
		/* at most a second: stop_now is seen by every loop, not only the signalled thread */
		n = poll(pf, (nfds_t)sl->count * 2, wait > 0 ? (int)(fmin(wait, 1) * 1000) + 1 : 0);
		for (long i = 0; n > 0 && i < sl->count; i++)
			if ((pf[2 * i].revents | pf[2 * i + 1].revents) & (POLLIN | POLLHUP | POLLERR))
				host_tick(&h[i]);
		wait = cycles_due(sl);
	}
	free(pf);
	return NULL;
}

/* The hosts in s->loops slices, each ticked by a thread of its own (a
 * full-size stack: apply and verify run there); the main thread takes the
 * first slice and waits for the others. */
static void run(struct sim *s)
{
	long k = s->loops < s->count ? s->loops : s->count;
	struct slice *sl = calloc((size_t)k, sizeof(*sl));
	pthread_t *t = calloc((size_t)k, sizeof(*t));
	bool *up = calloc((size_t)k, sizeof(*up));
	double t0 = nt_mono_s();
	pthread_attr_t a;

	if (!sl || !t || !up || pthread_attr_init(&a) != 0)
		goto out;
	pthread_attr_setstacksize(&a, 8 << 20);
	for (long i = 0; i < s->count; i++)
		s->h[i].next_cycle = t0 + s->interval * (double)i / (double)s->count;
	for (long j = 0; j < k; j++) {
		sl[j] = (struct slice){ s, s->count * j / k, s->count * (j + 1) / k - s->count * j / k };
		if (j > 0)
			up[j] = pthread_create(&t[j], &a, run_slice, &sl[j]) == 0;
		if (j > 0 && !up[j]) {
			fprintf(stderr, "fleetsim: cannot start loop %ld; stopping\n", j);
			stop_now = 1;
		}
	}
	pthread_attr_destroy(&a);
	run_slice(&sl[0]);
	for (long j = 1; j < k; j++)
		if (up[j])
			pthread_join(t[j], NULL);
out:
	free(sl);
	free(t);
	free(up);
}

/* Room for N hosts: descriptors up to the hard limit, small thread stacks
 * (the lease thread: libcurl and a JSON document, no deep recursion). */
static void room(void)
{
	struct rlimit rl;
	pthread_attr_t a;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	if (pthread_attr_init(&a) == 0) {
		pthread_attr_setstacksize(&a, 512 * 1024);
		pthread_setattr_default_np(&a);
		pthread_attr_destroy(&a);
	}
}

/* A gate's `nodetune ab ...` (fleet_gate.h execs /proc/self/exe, which
 * is this program here): the real nodetune beside build/tests/, same argv. */
static int exec_nodetune(char **argv)
{
	char exe[4096], *slash;
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 32);

	if (n < 0)
		return 3;
	exe[n] = '\0';
	if ((slash = strrchr(exe, '/')))
		*slash = '\0';
	strcat(exe, "/../nodetune");
	execv(exe, argv);
	fprintf(stderr, "fleetsim: %s: %s\n", exe, strerror(errno));
	return 3;
}

static void *host_free_thread(void *arg)
{
	host_free(arg);
	return NULL;
}

/* Stop every host at once: fleet_host_stop waits for the host's lease
 * thread to leave its watch (up to a keepalive interval, 20 s), so one
 * after the other would take N times that. */
static void hosts_free(struct sim *s)
{
	pthread_t *t = calloc((size_t)s->count, sizeof(*t));
	bool *up = calloc((size_t)s->count, sizeof(*up));

	for (long i = 0; i < s->count; i++)
		if (!t || !up || !(up[i] = pthread_create(&t[i], NULL, host_free_thread, &s->h[i]) == 0))
			host_free(&s->h[i]);
	for (long i = 0; t && up && i < s->count; i++)
		if (up[i])
			pthread_join(t[i], NULL);
	free(t);
	free(up);
}

int main(int argc, char **argv)
{
	struct sim s = { 0 };
	long up = 0;
	int rc;

	if (argc > 1 && strcmp(argv[1], "ab") == 0)
		return exec_nodetune(argv);
	if ((rc = parse_args(&s, argc, argv)) != 0)
		return rc;
	room();
	signal(SIGTERM, on_signal);
	signal(SIGINT, on_signal);
	signal(SIGPIPE, SIG_IGN);
	if (!(s.h = calloc((size_t)s.count, sizeof(*s.h))))
		return 3;
	for (double t0 = nt_mono_s(); up < s.count && !stop_now; up++) {
		struct nt_err err = { 0 };
		double due = t0 + s.ramp * (double)up / (double)s.count, now = nt_mono_s();

		if (due > now)
			usleep((useconds_t)((due - now) * 1e6));

		if (host_start(&s, &s.h[up], s.first + up, &err) < 0) {
			fprintf(stderr, "fleetsim: h%ld: %s\n", s.first + up, err.msg);
			rc = 3;
			break;
		}
	}
	if (rc == 0) {
		printf("fleetsim: %ld hosts up\n", up);
		fflush(stdout);
		run(&s);
	}
	hosts_free(&s);
	for (unsigned i = 0; i < s.n_topos; i++)
		topo_free(s.topos[i]);
	free(s.h);
	return rc;
}
