/* SPDX-License-Identifier: MIT */
/* verify.c — drift between a plan and the host (see verify.h). */
#include "tune/verify.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tune/apply.h"
#include "tune/jobcg.h"

/* Append a drift; rep->drift has room for it (allocated for the worst case). */
static void add_drift(struct verify_result *rep, enum verify_kind kind, enum knob_id knob, const char *path,
		      const char *expected, const char *actual)
{
	struct verify_drift *d = &rep->drift[rep->n++];

	d->kind = kind;
	d->knob = knob;
	snprintf(d->path, sizeof(d->path), "%s", path);
	snprintf(d->expected, sizeof(d->expected), "%s", expected);
	snprintf(d->actual, sizeof(d->actual), "%s", actual);
}

/* Read back path and compare it with the value the plan wants. */
static void check_setting(const struct fsroot *root, enum knob_id knob, const char *path, const char *to,
			  struct verify_result *rep)
{
	char raw[1024], now[PLAN_VALUE_MAX] = "(unreadable)", want[PLAN_VALUE_MAX];

	rep->checked++;
	apply_normalize(to, want, sizeof(want));
	if (fsroot_read(root, path, raw, sizeof(raw)) >= 0)
		apply_normalize(raw, now, sizeof(now));
	if (strcmp(now, want))
		add_drift(rep, VERIFY_SETTING, knob, path, want, now);
}

int verify_plan(const struct plan *pl, const struct fsroot *root, struct verify_result *ret,
		struct nt_err *err)
{
	struct verify_result rep = { 0 };

	/* every setting, plus the cgroup: at most that many drifts */
	rep.drift = calloc(pl->n_host + pl->n_irqs + 1, sizeof(*rep.drift));
	if (!rep.drift)
		return err_set(err, -ENOMEM, "out of memory");
	for (unsigned i = 0; i < pl->n_host; i++)
		check_setting(root, pl->host[i].knob, pl->host[i].path, pl->host[i].to, &rep);
	for (unsigned i = 0; i < pl->n_irqs; i++)
		check_setting(root, KNOB_IRQ_DEVICES, pl->irqs[i].path, pl->irqs[i].to, &rep);
	if (pl->cgroup[0] && fsroot_is_host(root)) {
		rep.checked++;
		if (!jobcg_exists(pl->cgroup))
			add_drift(&rep, VERIFY_CGROUP, KNOB_CGROUP_NAME, "cgroup", pl->cgroup, "(missing)");
	}
	*ret = rep;
	return 0;
}

void verify_result_release(struct verify_result *rep)
{
	free(rep->drift);
	memset(rep, 0, sizeof(*rep));
}
