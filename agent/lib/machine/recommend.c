/* SPDX-License-Identifier: MIT */
/* recommend.c — see recommend.h.
 *
 * Divisions: the rules (pure); Slurm hostlists; the facts (read below the
 * fsroot).
 */
#include "machine/recommend.h"

#include <ctype.h>
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/parse.h"

/* ---- the rules -------------------------------------------------------- */

static const char *const names[REC_POLICY_COUNT] = {
	[REC_BASELINE] = "baseline",
	[REC_GPU_TRAIN] = "gpu-train",
	[REC_GPU_SHARED] = "gpu-shared",
};

const char *recommend_name(enum rec_policy p)
{
	return (unsigned)p < REC_POLICY_COUNT ? names[p] : "?";
}

/* First match wins; a field of -1 matches anything. */
static const struct rec_rule {
	int gpus;          /* 0: none, 1: some */
	int slurm, kubelet;
	enum rec_policy policy;
	const char *why;
} rules[] = {
	{ 0, -1, -1, REC_BASELINE,
	  "no GPU: the GPU policies bind ranks next to GPUs, so change nothing" },
	{ 1, -1, REC_KUBELET_STATIC, REC_BASELINE,
	  "the kubelet's static CPU manager pins containers' CPUs itself: binding ranks again would fight it, and pods share the node" },
	{ 1, -1, REC_KUBELET_SHARED, REC_GPU_SHARED,
	  "pods share the node and the kubelet does not pin CPUs: bind ranks next to their GPU, change nothing host-wide" },
	{ 1, REC_SLURM_SHARED, -1, REC_GPU_SHARED,
	  "Slurm may put other jobs on this node: bind ranks next to their GPU, change nothing host-wide (the plugin tunes the node only for --exclusive jobs)" },
	{ 1, -1, -1, REC_GPU_TRAIN,
	  "a GPU node that one job owns at a time: bind ranks and tune the host for training" },
};

enum rec_policy recommend_decide(const struct rec_facts *f, const char **ret_why)
{
	for (size_t i = 0; i < sizeof(rules) / sizeof(rules[0]); i++) {
		const struct rec_rule *r = &rules[i];

		if ((r->gpus < 0 || r->gpus == (f->gpus > 0)) && (r->slurm < 0 || r->slurm == (int)f->slurm) &&
		    (r->kubelet < 0 || r->kubelet == (int)f->kubelet)) {
			*ret_why = r->why;
			return r->policy;
		}
	}
	*ret_why = rules[0].why;   /* not reached: the last rule matches every GPU host */
	return REC_BASELINE;
}

/* ---- Slurm hostlists -------------------------------------------------- */

/* Does one item ("gpu[01-04,07]x", "login1") name host? */
static bool item_has(const char *item, size_t len, const char *host)
{
	const char *open = memchr(item, '[', len), *close = open ? memchr(open, ']', len - (size_t)(open - item)) : NULL;
	size_t pre, suf, hl = strlen(host);
	char digits[32], *end;
	uint64_t n;

	if (!open || !close)
		return len == hl && !strncmp(item, host, len);
	pre = (size_t)(open - item);
	suf = len - (size_t)(close - item) - 1;
	if (hl <= pre + suf || strncmp(item, host, pre) || strncmp(close + 1, host + hl - suf, suf) ||
	    hl - pre - suf >= sizeof(digits))
		return false;
	memcpy(digits, host + pre, hl - pre - suf);
	digits[hl - pre - suf] = '\0';
	if (parse_u64(digits, UINT64_MAX, &n))
		return false;
	for (const char *p = open + 1; p < close; p = end + 1) {
		unsigned long long lo = strtoull(p, &end, 10), hi = lo;

		if (end == p)
			break;
		if (*end == '-') {
			p = end + 1;
			hi = strtoull(p, &end, 10);
			if (end == p)
				break;
		}
		if (n >= lo && n <= hi)
			return true;
		if (*end != ',')
			break;
	}
	return false;
}

bool recommend_hostlist_has(const char *expr, const char *host)
{
	int depth = 0;
	const char *start = expr;

	for (const char *p = expr;; p++) {
		if (*p == '[')
			depth++;
		else if (*p == ']')
			depth--;
		if (*p && (*p != ',' || depth > 0))
			continue;
		if ((p - start == 3 && !strncasecmp(start, "ALL", 3)) || item_has(start, (size_t)(p - start), host))
			return true;
		if (!*p)
			return false;
		start = p + 1;
	}
}

/* ---- the facts -------------------------------------------------------- */

/* The value of KEY= (case-insensitive) in a slurm.conf line, into out. */
static bool slurm_value(const char *line, const char *key, char *out, size_t size)
{
	size_t kl = strlen(key);

	for (const char *p = line; *p; p++) {
		if ((p == line || isspace((unsigned char)p[-1])) && !strncasecmp(p, key, kl) && p[kl] == '=') {
			size_t n = strcspn(p + kl + 1, " \t");

			snprintf(out, size, "%.*s", (int)(n < size ? n : size - 1), p + kl + 1);
			return true;
		}
	}
	return false;
}

/* This node's name: the kernel's hostname, else etc/hostname; "" unknown. */
static void node_name(const struct fsroot *root, char *out, size_t size)
{
	if (fsroot_read(root, "proc/sys/kernel/hostname", out, size) <= 0 &&
	    fsroot_read(root, "etc/hostname", out, size) <= 0)
		out[0] = '\0';
	out[strcspn(out, ".")] = '\0';   /* Slurm's NodeName is the short name */
}

static int slurm_fact(const struct fsroot *root, struct rec_facts *f)
{
	char *buf = malloc(1u << 20), host[256], nodes[1024], over[64], name[64], disp[512];
	unsigned parts = 0, shared = 0;
	char *save = NULL;

	if (!buf)
		return -ENOMEM;
	fsroot_display(root, "etc/slurm/slurm.conf", disp, sizeof(disp));
	if (fsroot_read(root, "etc/slurm/slurm.conf", buf, 1u << 20) < 0) {
		free(buf);
		snprintf(f->slurm_src, sizeof(f->slurm_src), "none (no %.400s)", disp);
		return 0;
	}
	node_name(root, host, sizeof(host));
	for (char *line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		line[strcspn(line, "#")] = '\0';
		if (!slurm_value(line, "PartitionName", name, sizeof(name)) ||
		    (host[0] && slurm_value(line, "Nodes", nodes, sizeof(nodes)) && !recommend_hostlist_has(nodes, host)))
			continue;
		parts++;
		if (!slurm_value(line, "OverSubscribe", over, sizeof(over)) && !slurm_value(line, "Shared", over, sizeof(over)))
			snprintf(over, sizeof(over), "NO");
		if (strcasecmp(over, "EXCLUSIVE"))
			shared++;
	}
	free(buf);
	f->slurm = parts && !shared ? REC_SLURM_EXCLUSIVE : REC_SLURM_SHARED;
	snprintf(f->slurm_src, sizeof(f->slurm_src), "%.300s: %.64s: %u partition%s, %u letting jobs share the node (OverSubscribe not EXCLUSIVE)",
		 disp, host[0] ? host : "hostname unknown, every partition counted", parts, parts == 1 ? "" : "s", shared);
	return 0;
}

/* The kubelet's CPU manager policy from its checkpoint or its config;
 * "" when neither says. */
static int cpu_manager_policy(const struct fsroot *root, char *out, size_t size, const char **ret_src)
{
	char buf[8192];
	json_t *doc;

	*ret_src = "var/lib/kubelet/cpu_manager_state";
	if (fsroot_read(root, *ret_src, buf, sizeof(buf)) >= 0) {
		doc = json_loads(buf, 0, NULL);
		if (!json_is_string(json_object_get(doc, "policyName"))) {
			json_decref(doc);
			return -EINVAL;
		}
		snprintf(out, size, "%s", json_string_value(json_object_get(doc, "policyName")));
		json_decref(doc);
		return 0;
	}
	*ret_src = "var/lib/kubelet/config.yaml";
	out[0] = '\0';
	if (fsroot_read(root, *ret_src, buf, sizeof(buf)) >= 0) {
		char *p = strstr(buf, "cpuManagerPolicy:");

		if (p) {
			p += strlen("cpuManagerPolicy:");
			p += strspn(p, " \t\"'");
			snprintf(out, size, "%.*s", (int)strcspn(p, " \t\"'\n#"), p);
		}
		return 0;
	}
	*ret_src = NULL;
	return 0;
}

static int kubelet_fact(const struct fsroot *root, struct rec_facts *f, struct nt_err *err)
{
	char pol[64] = "", disp[512];
	const char *src;
	int r = cpu_manager_policy(root, pol, sizeof(pol), &src);

	if (r < 0)
		return err_set(err, r, "%s: not a CPU manager checkpoint (no policyName)",
			       fsroot_display(root, src, disp, sizeof(disp)));
	if (!src && !fsroot_exists(root, "etc/kubernetes/kubelet.conf")) {
		f->kubelet = REC_KUBELET_NONE;
		snprintf(f->kubelet_src, sizeof(f->kubelet_src), "none (no var/lib/kubelet/cpu_manager_state, config.yaml or etc/kubernetes/kubelet.conf below %.300s)",
			 fsroot_path(root));
		return 0;
	}
	f->kubelet = !strcmp(pol, "static") ? REC_KUBELET_STATIC : REC_KUBELET_SHARED;
	fsroot_display(root, src ? src : "etc/kubernetes/kubelet.conf", disp, sizeof(disp));
	snprintf(f->kubelet_src, sizeof(f->kubelet_src), "%.400s: CPU manager policy %.64s", disp, pol[0] ? pol : "none (unset)");
	return 0;
}

int recommend_facts(const struct fsroot *root, const struct topo *t, struct rec_facts *ret, struct nt_err *err)
{
	struct rec_facts f = { 0 };
	int r;

	f.gpus = t->n_gpus;
	snprintf(f.gpus_src, sizeof(f.gpus_src), "the topology: %u GPU%s", t->n_gpus, t->n_gpus == 1 ? "" : "s");
	if ((r = slurm_fact(root, &f)) < 0)
		return err_set(err, r, "out of memory");
	if ((r = kubelet_fact(root, &f, err)) < 0)
		return r;
	*ret = f;
	return 0;
}
