/* SPDX-License-Identifier: MIT */
/* plan.c — see plan.h.
 *
 * Divisions:
 *   1. notes, enum values
 *   2. CPU sets: housekeeping, even division of a set among ranks
 *   3. rank placement per affinity mode
 *   4. host settings, IRQs, cgroup
 *   5. plan_build / plan_free
 *   6. output (JSON, text)
 */
#include "tune/plan.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "base/cpulist.h"
#include "machine/kstate.h"
#include "base/parse.h"

/* ---- 1. notes, enum values -------------------------------------------- */

#define plan_note(pl, ...) log_note_add((pl)->notes, &(pl)->n_notes, PLAN_MAX_NOTES, __VA_ARGS__)

/* The policy's value of an enum knob as the table's own (static) string,
 * or NULL when unset. */
static const char *enum_value(const struct policy *p, enum knob_id k)
{
	const char *v = policy_value(p, k);

	for (const char *const *e = knob_table[k].values; v && *e; e++)
		if (!strcmp(*e, v))
			return *e;
	return NULL;
}

/* ---- 2. CPU sets ------------------------------------------------------- */

/* The cores of t in logical order as CPU sets (a PU alone when the topology
 * has no cores).  Returns the count, or -ENOMEM; *ret_cores freed by caller
 * with free_sets(). */
static int core_sets(const struct topo *t, hwloc_bitmap_t **ret_cores)
{
	hwloc_obj_type_t type = hwloc_get_nbobjs_by_type(t->hw, HWLOC_OBJ_CORE) > 0
				? HWLOC_OBJ_CORE : HWLOC_OBJ_PU;
	int n = hwloc_get_nbobjs_by_type(t->hw, type);
	hwloc_bitmap_t *sets = calloc((size_t)n + 1, sizeof(*sets));

	if (!sets)
		return -ENOMEM;
	for (int i = 0; i < n; i++) {
		sets[i] = hwloc_bitmap_dup(hwloc_get_obj_by_type(t->hw, type, (unsigned)i)->cpuset);
		if (!sets[i]) {
			for (int j = 0; j < i; j++)
				hwloc_bitmap_free(sets[j]);
			free(sets);
			return -ENOMEM;
		}
	}
	*ret_cores = sets;
	return n;
}

static void free_sets(hwloc_bitmap_t *sets, int n)
{
	for (int i = 0; sets && i < n; i++)
		hwloc_bitmap_free(sets[i]);
	free(sets);
}

/* Divide avail among k ranks, disjoint and equal: whole cores when there
 * are at least k cores, otherwise single PUs (siblings kept together as far
 * as the count allows).  Cores or PUs left over after equal shares stay
 * unassigned (a note says so).  out[0..k) must be allocated bitmaps. */
static int split_evenly(struct plan *pl, const struct topo *t, hwloc_const_bitmap_t avail,
			unsigned k, hwloc_bitmap_t *out, const char *what, struct nt_err *err)
{
	hwloc_bitmap_t *cores;
	int nc = core_sets(t, &cores), r = 0;
	unsigned usable = 0, pus = (unsigned)hwloc_bitmap_weight(avail);
	char *list;

	if (nc < 0)
		return err_set(err, -ENOMEM, "out of memory");
	for (int i = 0; i < nc; i++) {
		hwloc_bitmap_and(cores[i], cores[i], avail);
		usable += !hwloc_bitmap_iszero(cores[i]);
	}
	for (unsigned i = 0; i < k; i++)
		hwloc_bitmap_zero(out[i]);
	if (usable >= k) {
		unsigned per = usable / k, idx = 0;

		for (int i = 0; i < nc; i++) {
			if (hwloc_bitmap_iszero(cores[i]))
				continue;
			if (idx / per < k)
				hwloc_bitmap_or(out[idx / per], out[idx / per], cores[i]);
			idx++;
		}
		if (usable % k)
			plan_note(pl, "%s: %u cores for %u ranks: %u core(s) left unassigned so that every rank gets %u",
				  what, usable, k, usable % k, per);
	} else if (pus >= k) {
		unsigned per = pus / k, idx = 0;

		for (int i = 0; i < nc; i++) {
			int pu;

			hwloc_bitmap_foreach_begin(pu, cores[i]) {
				if (idx / per < k)
					hwloc_bitmap_set(out[idx / per], (unsigned)pu);
				idx++;
			} hwloc_bitmap_foreach_end();
		}
		plan_note(pl, "%s: %u cores for %u ranks: ranks get single hardware threads", what, usable, k);
	} else {
		list = cpulist_format_alloc(avail);
		r = err_set(err, -EINVAL, "%s: %u ranks but only %u CPUs (%s) to give them",
			    what, k, pus, list ? list : "?");
		free(list);
	}
	free_sets(cores, nc);
	return r;
}

/* Housekeeping CPUs from the policy: none, a cpulist, or auto (the first
 * core of every NUMA node holding a GPU). */
static int plan_housekeeping(struct plan *pl, const struct policy *p, const struct topo *t,
			     struct nt_err *err)
{
	const char *spec = policy_value(p, KNOB_AFFINITY_HOUSEKEEPING);
	hwloc_const_bitmap_t all = hwloc_topology_get_topology_cpuset(t->hw);

	if (!spec || !strcmp(spec, "none"))
		return 0;
	if (strcmp(spec, "auto")) {
		if (cpulist_parse(spec, pl->housekeeping) < 0 || !hwloc_bitmap_isincluded(pl->housekeeping, all)) {
			char *l = cpulist_format_alloc(all);

			err_set(err, -EINVAL, "[affinity] housekeeping = %s: not CPUs of this machine (%s)",
				spec, l ? l : "?");
			free(l);
			return -EINVAL;
		}
		return 0;
	}
	if (t->n_gpus == 0) {
		plan_note(pl, "housekeeping = auto: no GPUs, so no housekeeping cores are reserved");
		return 0;
	}
	for (unsigned n = 0; n < t->n_numa; n++) {
		bool has_gpu = false;
		hwloc_obj_t core;
		int first;

		for (unsigned g = 0; g < t->n_gpus; g++)
			has_gpu |= t->gpus[g].numa_node == (int)t->numa[n].os_index;
		first = hwloc_bitmap_first(t->numa[n].cpus);
		if (!has_gpu || first < 0)
			continue;
		core = hwloc_get_pu_obj_by_os_index(t->hw, (unsigned)first);
		while (core && core->type != HWLOC_OBJ_CORE)
			core = core->parent;
		if (core)
			hwloc_bitmap_or(pl->housekeeping, pl->housekeeping, core->cpuset);
		else
			hwloc_bitmap_set(pl->housekeeping, (unsigned)first);
	}
	return 0;
}

/* ---- 3. rank placement -------------------------------------------------- */

/* Ranks whose base set is equal form a group that divides it. */
static int place_groups(struct plan *pl, const struct topo *t, hwloc_bitmap_t *base,
			const char *const *labels, struct nt_err *err)
{
	hwloc_bitmap_t taken = hwloc_bitmap_alloc(), avail = hwloc_bitmap_alloc();
	bool *done = calloc(pl->n_ranks, sizeof(*done));
	hwloc_bitmap_t *out = calloc(pl->n_ranks, sizeof(*out));
	unsigned *members = calloc(pl->n_ranks, sizeof(*members));
	int r = 0;

	if (!taken || !avail || !done || !out || !members) {
		r = err_set(err, -ENOMEM, "out of memory");
		goto out_free;
	}
	for (unsigned i = 0; i < pl->n_ranks && r == 0; i++) {
		unsigned k = 0;

		if (done[i])
			continue;
		for (unsigned j = i; j < pl->n_ranks; j++)
			if (!done[j] && hwloc_bitmap_isequal(base[i], base[j]))
				members[k++] = j, done[j] = true;
		hwloc_bitmap_andnot(avail, base[i], pl->housekeeping);
		hwloc_bitmap_andnot(avail, avail, taken);
		if (hwloc_bitmap_iszero(avail)) {
			char *l = cpulist_format_alloc(base[i]);

			r = err_set(err, -EINVAL, "%s: no CPUs left for rank %u (its CPUs %s are housekeeping or taken)",
				    labels[i], pl->ranks[i].local_rank, l ? l : "?");
			free(l);
			break;
		}
		for (unsigned m = 0; m < k; m++)
			out[m] = pl->ranks[members[m]].cpus = hwloc_bitmap_alloc();
		for (unsigned m = 0; m < k; m++)
			if (!out[m])
				r = err_set(err, -ENOMEM, "out of memory");
		if (r == 0)
			r = split_evenly(pl, t, avail, k, out, labels[i], err);
		for (unsigned m = 0; m < k && r == 0; m++)
			hwloc_bitmap_or(taken, taken, out[m]);
	}
out_free:
	hwloc_bitmap_free(taken);
	hwloc_bitmap_free(avail);
	free(done);
	free(out);
	free(members);
	return r;
}

static int plan_ranks(struct plan *pl, const struct policy *p, const struct topo *t, const unsigned *gpus,
		      unsigned n_gpus, struct nt_err *err)
{
	const char *mode = policy_value(p, KNOB_AFFINITY_MODE);
	hwloc_bitmap_t *base;
	const char **labels;
	char (*labelbuf)[64];
	int r = 0;

	if (!mode)
		mode = "none";
	/* GPUs: rank r uses GPU r mod G, as frameworks do by default */
	for (unsigned i = 0; i < pl->n_ranks; i++)
		pl->ranks[i].gpu = n_gpus ? (int)gpus[i % n_gpus] : t->n_gpus ? (int)(i % t->n_gpus) : -1;
	if (n_gpus && pl->n_ranks > n_gpus)
		plan_note(pl, "%u ranks on the job's %u GPUs: ranks share GPUs", pl->n_ranks, n_gpus);
	else if (!n_gpus && t->n_gpus && pl->n_ranks > t->n_gpus)
		plan_note(pl, "%u ranks on %u GPUs: ranks share GPUs", pl->n_ranks, t->n_gpus);
	if (!strcmp(mode, "none"))
		return 0;

	base = calloc(pl->n_ranks, sizeof(*base));
	labels = calloc(pl->n_ranks, sizeof(*labels));
	labelbuf = calloc(pl->n_ranks, sizeof(*labelbuf));
	if (!base || !labels || !labelbuf) {
		r = err_set(err, -ENOMEM, "out of memory");
		goto out_free;
	}
	if ((!strcmp(mode, "gpu-local") || !strcmp(mode, "far-numa")) && t->n_gpus == 0)
		plan_note(pl, "affinity %s: no GPUs on this machine, so ranks are spread over NUMA nodes, then cores",
			  mode);
	for (unsigned i = 0; i < pl->n_ranks && r == 0; i++) {
		const struct topo_dev *gpu = pl->ranks[i].gpu >= 0 ? &t->gpus[pl->ranks[i].gpu] : NULL;
		unsigned node_idx;

		if (!strcmp(mode, "gpu-local") && gpu) {
			if (hwloc_bitmap_iszero(gpu->cpus)) {
				r = err_set(err, -EINVAL, "GPU %d (%s) has no local CPUs", pl->ranks[i].gpu,
					    gpu->pci_bus_id);
				break;
			}
			base[i] = hwloc_bitmap_dup(gpu->cpus);
			snprintf(labelbuf[i], sizeof(labelbuf[i]), "GPU %d (%s)", pl->ranks[i].gpu, gpu->pci_bus_id);
		} else {
			/* numa, or no GPU: node r mod N; far-numa: the next node */
			node_idx = i % t->n_numa;
			if (gpu && gpu->numa_node >= 0)
				for (unsigned n = 0; n < t->n_numa; n++)
					if ((int)t->numa[n].os_index == gpu->numa_node)
						node_idx = n;
			if (!strcmp(mode, "far-numa")) {
				if (t->n_numa < 2 && i == 0)
					plan_note(pl, "affinity far-numa: one NUMA node only, so there is no far node; ranks stay on node %u",
						  t->numa[0].os_index);
				node_idx = (node_idx + 1) % t->n_numa;
			}
			base[i] = hwloc_bitmap_dup(t->numa[node_idx].cpus);
			snprintf(labelbuf[i], sizeof(labelbuf[i]), "NUMA node %u", t->numa[node_idx].os_index);
		}
		labels[i] = labelbuf[i];
		if (!base[i])
			r = err_set(err, -ENOMEM, "out of memory");
	}
	if (r == 0)
		r = place_groups(pl, t, base, labels, err);
out_free:
	for (unsigned i = 0; base && i < pl->n_ranks; i++)
		hwloc_bitmap_free(base[i]);
	free(base);
	free(labels);
	free(labelbuf);
	return r;
}

/* Memory nodes and NIC of each rank. */
static int plan_mems_nics(struct plan *pl, const struct policy *p, const struct topo *t,
			  struct nt_err *err)
{
	const char *mp = enum_value(p, KNOB_MEMORY_POLICY);

	pl->memory_policy = mp ? mp : "none";
	for (unsigned i = 0; i < pl->n_ranks; i++) {
		struct plan_rank *rk = &pl->ranks[i];
		const struct topo_dev *gpu = rk->gpu >= 0 ? &t->gpus[rk->gpu] : NULL;
		hwloc_const_bitmap_t where = rk->cpus ? rk->cpus : gpu ? gpu->cpus : NULL;

		if (strcmp(pl->memory_policy, "none")) {
			rk->mems = hwloc_bitmap_alloc();
			if (!rk->mems)
				return err_set(err, -ENOMEM, "out of memory");
			for (unsigned n = 0; n < t->n_numa; n++)
				if (!where || hwloc_bitmap_intersects(where, t->numa[n].cpus))
					hwloc_bitmap_set(rk->mems, t->numa[n].os_index);
		}
		if (gpu && gpu->nearest_nic >= 0) {
			snprintf(rk->nic, sizeof(rk->nic), "%s", t->nics[gpu->nearest_nic].name);
		} else if (where) {
			for (unsigned n = 0; n < t->n_nics && !rk->nic[0]; n++)
				if (hwloc_bitmap_intersects(t->nics[n].cpus, where))
					snprintf(rk->nic, sizeof(rk->nic), "%s", t->nics[n].name);
		}
	}
	return 0;
}

/* ---- 4. host settings, IRQs, cgroup ------------------------------------- */

static int host_add(struct plan *pl, enum knob_id knob, const char *path, const char *to,
		    const struct fsroot *root, struct nt_err *err)
{
	struct plan_host *h, *tmp;
	int r;

	tmp = realloc(pl->host, (pl->n_host + 1) * sizeof(*tmp));
	if (!tmp)
		return err_set(err, -ENOMEM, "out of memory");
	pl->host = tmp;
	h = &pl->host[pl->n_host];
	memset(h, 0, sizeof(*h));
	h->knob = knob;
	snprintf(h->path, sizeof(h->path), "%s", path);
	snprintf(h->to, sizeof(h->to), "%s", to);
	if (root) {
		r = knob_read_effective(root, &knob_table[knob], path, h->from, sizeof(h->from));
		if (r == -EINVAL) {
			char disp[512];

			return err_set(err, -EINVAL, "%s: unexpected content for [%s] %s",
				       fsroot_display(root, path, disp, sizeof(disp)),
				       knob_table[knob].section, knob_table[knob].key);
		}
		if (r < 0)
			return r; /* -ENOENT: the caller decides */
	}
	pl->n_host++;
	return 0;
}

/* A one-file knob (KS_HOST, KS_SYSCTL): a file this kernel lacks is
 * skipped with a note. */
static int host_one(struct plan *pl, enum knob_id k, const char *to, const struct fsroot *root,
		    struct nt_err *err)
{
	const struct knob *kn = &knob_table[k];
	char path[256], disp[512];
	int r = host_add(pl, k, knob_host_path(kn, 0, path, sizeof(path)), to, root, err);

	if (r == -ENOENT) {
		plan_note(pl, "[%s] %s: skipped, this host has no %s", kn->section, kn->key,
			  fsroot_display(root, path, disp, sizeof(disp)));
		return 0;
	}
	return r;
}

/* A file per NUMA node: asked-for hugepages the kernel cannot give are an
 * error, never a silent skip. */
static int host_per_node(struct plan *pl, enum knob_id k, const char *to, const struct topo *t,
			 const struct fsroot *root, struct nt_err *err)
{
	const struct knob *kn = &knob_table[k];
	char path[256], disp[512];

	for (unsigned n = 0; n < t->n_numa; n++) {
		int r = host_add(pl, k, knob_host_path(kn, t->numa[n].os_index, path, sizeof(path)), to, root, err);

		if (r == -ENOENT)
			return err_set(err, -EINVAL, "[%s] %s = %s: this kernel has no %s (pool size not supported?)",
				       kn->section, kn->key, to, fsroot_display(root, path, disp, sizeof(disp)));
		if (r < 0)
			return r;
	}
	return 0;
}

/* A file per CPU: CPUs without one (no cpufreq) are skipped with a note. */
static int host_per_cpu(struct plan *pl, enum knob_id k, const char *to, const struct topo *t,
			const struct fsroot *root, struct nt_err *err)
{
	const struct knob *kn = &knob_table[k];
	char path[256], disp[512];
	int pu, missing = 0;

	hwloc_bitmap_foreach_begin(pu, hwloc_topology_get_topology_cpuset(t->hw)) {
		int r = host_add(pl, k, knob_host_path(kn, (unsigned)pu, path, sizeof(path)), to, root, err);

		if (r == -ENOENT)
			missing++;
		else if (r < 0)
			return r;
	} hwloc_bitmap_foreach_end();
	if (missing)
		plan_note(pl, "[%s] %s: skipped on %d CPU(s) without cpufreq (%s missing)",
			  kn->section, kn->key, missing,
			  fsroot_display(root, knob_host_path(kn, 0, path, sizeof(path)), disp, sizeof(disp)));
	return 0;
}

static int plan_host_settings(struct plan *pl, const struct policy *p, const struct topo *t,
			      const struct fsroot *root, struct nt_err *err)
{
	for (enum knob_id k = 0; k < KNOB_COUNT; k++) {
		const char *to = policy_value(p, k);
		int r = 0;

		if (!to)
			continue;
		switch (knob_table[k].scope) {
		case KS_HOST:
		case KS_SYSCTL:
			r = host_one(pl, k, to, root, err);
			break;
		case KS_HOST_NODE:
			r = host_per_node(pl, k, to, t, root, err);
			break;
		case KS_HOST_CPU:
			r = host_per_cpu(pl, k, to, t, root, err);
			break;
		default:        /* ranks, the job cgroup, IRQs: planned elsewhere */
			break;
		}
		if (r < 0)
			return r;
	}
	return 0;
}

static int irq_add(struct plan *pl, unsigned irq, const char *dev, const char *to,
		   const struct fsroot *root, struct nt_err *err)
{
	struct plan_irq *q, *tmp;

	for (unsigned i = 0; i < pl->n_irqs; i++)
		if (pl->irqs[i].irq == irq)
			return 0;
	tmp = realloc(pl->irqs, (pl->n_irqs + 1) * sizeof(*tmp));
	if (!tmp)
		return err_set(err, -ENOMEM, "out of memory");
	pl->irqs = tmp;
	q = &pl->irqs[pl->n_irqs];
	memset(q, 0, sizeof(*q));
	q->irq = irq;
	snprintf(q->device, sizeof(q->device), "%s", dev);
	knob_host_path(&knob_table[KNOB_IRQ_DEVICES], irq, q->path, sizeof(q->path));
	snprintf(q->to, sizeof(q->to), "%s", to);
	if (fsroot_read(root, q->path, q->from, sizeof(q->from)) < 0)
		return 0; /* no such IRQ directory: not movable, leave it out */
	pl->n_irqs++;
	return 0;
}

static int plan_irqs(struct plan *pl, const struct policy *p, const struct topo *t,
		     const struct fsroot *root, struct nt_err *err)
{
	const char *mode = policy_value(p, KNOB_IRQ_DEVICES);
	char to[PLAN_VALUE_MAX];

	if (!mode || !strcmp(mode, "leave"))
		return 0;
	if (hwloc_bitmap_iszero(pl->housekeeping)) {
		plan_note(pl, "[irq] devices = housekeeping: no housekeeping CPUs, device IRQs are left alone");
		return 0;
	}
	if (!root) {
		plan_note(pl, "[irq] devices = housekeeping: IRQ numbers come from the host's sysfs, not listed for this topology");
		return 0;
	}
	cpulist_format(pl->housekeeping, to, sizeof(to));
	for (unsigned d = 0; d < t->n_gpus + t->n_nics; d++) {
		const struct topo_dev *dev = d < t->n_gpus ? &t->gpus[d] : &t->nics[d - t->n_gpus];
		char dir[128], **names = NULL, buf[32];
		uint64_t irq;
		int n;

		snprintf(dir, sizeof(dir), "sys/bus/pci/devices/%s/msi_irqs", dev->pci_bus_id);
		n = fsroot_list(root, dir, &names);
		for (int i = 0; i < n; i++)
			if (parse_u64(names[i], 1u << 24, &irq) == 0 &&
			    irq_add(pl, (unsigned)irq, dev->pci_bus_id, to, root, err) < 0) {
				fsroot_names_free(names);
				return -ENOMEM;
			}
		fsroot_names_free(names);
		if (n > 0)
			continue;
		/* legacy INTx */
		snprintf(dir, sizeof(dir), "sys/bus/pci/devices/%s/irq", dev->pci_bus_id);
		if (fsroot_read(root, dir, buf, sizeof(buf)) >= 0 && parse_u64(buf, 1u << 24, &irq) == 0 &&
		    irq > 0 && irq_add(pl, (unsigned)irq, dev->pci_bus_id, to, root, err) < 0)
			return -ENOMEM;
	}
	return 0;
}

/* The job cgroup holds every CPU a rank may get (all but housekeeping) and
 * the nodes of those CPUs, so that any rank's binding fits inside it. */
static int plan_cgroup(struct plan *pl, const struct policy *p, const struct topo *t,
		       struct nt_err *err)
{
	const char *name = policy_value(p, KNOB_CGROUP_NAME);

	if (!name)
		return 0;
	snprintf(pl->cgroup, sizeof(pl->cgroup), "%s", name);
	pl->cpu_weight = (unsigned)policy_int(p, KNOB_CGROUP_CPU_WEIGHT, 0);
	pl->cgroup_cpus = hwloc_bitmap_alloc();
	pl->cgroup_mems = hwloc_bitmap_alloc();
	if (!pl->cgroup_cpus || !pl->cgroup_mems)
		return err_set(err, -ENOMEM, "out of memory");
	hwloc_bitmap_andnot(pl->cgroup_cpus, hwloc_topology_get_topology_cpuset(t->hw), pl->housekeeping);
	for (unsigned n = 0; n < t->n_numa; n++)
		if (hwloc_bitmap_intersects(t->numa[n].cpus, pl->cgroup_cpus))
			hwloc_bitmap_set(pl->cgroup_mems, t->numa[n].os_index);
	return 0;
}

/* ---- 5. build, free ------------------------------------------------------ */

struct plan *plan_build(const struct policy *p, const struct topo *t, unsigned nranks,
			const struct fsroot *root, struct nt_err *err)
{
	return plan_build_gpus(p, t, nranks, NULL, 0, root, err);
}

struct plan *plan_build_gpus(const struct policy *p, const struct topo *t, unsigned nranks, const unsigned *gpus,
			     unsigned n_gpus, const struct fsroot *root, struct nt_err *err)
{
	struct plan *pl;
	const char *s;
	int r;

	for (unsigned i = 0; i < n_gpus; i++)
		if (gpus[i] >= t->n_gpus) {
			err_set(err, -EINVAL, "GPU %u: %s has %u GPU(s)", gpus[i], t->source, t->n_gpus);
			return NULL;
		}

	if (nranks == 0)
		nranks = t->n_gpus ? t->n_gpus : 1;   /* the default: plan.h */
	if (nranks > PLAN_MAX_RANKS) {
		err_set(err, -EINVAL, "--ranks %u: must be from 1 to %d", nranks, PLAN_MAX_RANKS);
		return NULL;
	}
	if (t->n_numa == 0) {
		err_set(err, -EINVAL, "%s: the topology has no NUMA node", t->source);
		return NULL;
	}
	pl = calloc(1, sizeof(*pl));
	if (!pl || !(pl->ranks = calloc(nranks, sizeof(*pl->ranks))) ||
	    !(pl->housekeeping = hwloc_bitmap_alloc())) {
		plan_free(pl);
		err_set(err, -ENOMEM, "out of memory");
		return NULL;
	}
	pl->n_ranks = nranks;
	for (unsigned i = 0; i < nranks; i++) {
		pl->ranks[i].local_rank = i;
		pl->ranks[i].gpu = -1;
	}
	snprintf(pl->policy_path, sizeof(pl->policy_path), "%s", p->path);
	s = policy_value(p, KNOB_MAIN_SUMMARY);
	snprintf(pl->summary, sizeof(pl->summary), "%s", s ? s : "");
	pl->sched_policy = enum_value(p, KNOB_SCHED_POLICY);
	pl->sched_priority = (int)policy_int(p, KNOB_SCHED_PRIORITY, 0);
	pl->has_nice = policy_value(p, KNOB_SCHED_NICE) != NULL;
	pl->nice = (int)policy_int(p, KNOB_SCHED_NICE, 0);
	s = policy_value(p, KNOB_AFFINITY_EXPORT_GPU);
	pl->export_gpu = s && !strcmp(s, "yes");

	r = plan_housekeeping(pl, p, t, err);
	if (!r)
		r = plan_ranks(pl, p, t, gpus, n_gpus, err);
	if (!r)
		r = plan_mems_nics(pl, p, t, err);
	if (!r)
		r = plan_host_settings(pl, p, t, root, err);
	if (!r)
		r = plan_irqs(pl, p, t, root, err);
	if (!r)
		r = plan_cgroup(pl, p, t, err);
	if (r < 0) {
		if (r == -ENOMEM)
			err_set(err, -ENOMEM, "out of memory");
		plan_free(pl);
		return NULL;
	}
	return pl;
}

void plan_free(struct plan *pl)
{
	if (!pl)
		return;
	for (unsigned i = 0; pl->ranks && i < pl->n_ranks; i++) {
		hwloc_bitmap_free(pl->ranks[i].cpus);
		hwloc_bitmap_free(pl->ranks[i].mems);
	}
	free(pl->ranks);
	free(pl->host);
	free(pl->irqs);
	hwloc_bitmap_free(pl->cgroup_cpus);
	hwloc_bitmap_free(pl->cgroup_mems);
	hwloc_bitmap_free(pl->housekeeping);
	for (unsigned i = 0; i < pl->n_notes; i++)
		free(pl->notes[i]);
	free(pl);
}

/* The CPU number in path, a file of the per-CPU pattern whose "%u" is at
 * at.  0, or -EINVAL when path is not one. */
static int cpu_of(const char *pattern, const char *at, const char *path, unsigned *ret)
{
	size_t pre = (size_t)(at - pattern), suf = strlen(at + 2), len = strlen(path);
	char num[16];
	uint64_t v;

	if (len <= pre + suf || len - pre - suf >= sizeof(num) || strncmp(path, pattern, pre) ||
	    strcmp(path + len - suf, at + 2))
		return -EINVAL;
	memcpy(num, path + pre, len - pre - suf);
	num[len - pre - suf] = '\0';
	if (parse_u64(num, UINT32_MAX, &v))
		return -EINVAL;
	*ret = (unsigned)v;
	return 0;
}

/* Print host row i, folding it with the rows after it that set the same
 * per-CPU knob from the same value to the same value into one line over a
 * CPU list (a governor on 192 CPUs is one line).  Returns the rows
 * printed. */
static unsigned print_host_rows(FILE *out, const struct plan *pl, unsigned i)
{
	const struct plan_host *h = &pl->host[i];
	const struct knob *kn = &knob_table[h->knob];
	const char *at = kn->scope == KS_HOST_CPU ? strstr(kn->path, "%u") : NULL;
	hwloc_bitmap_t cpus = at ? hwloc_bitmap_alloc() : NULL;
	char list[256];
	unsigned n = 0, cpu;

	for (unsigned j = i; cpus && j < pl->n_host; j++, n++) {
		const struct plan_host *o = &pl->host[j];

		if (o->knob != h->knob || strcmp(o->from, h->from) || strcmp(o->to, h->to) ||
		    cpu_of(kn->path, at, o->path, &cpu) < 0)
			break;
		hwloc_bitmap_set(cpus, cpu);
	}
	if (n < 2) {
		fprintf(out, "  /%s: %s -> %s%s\n", h->path, h->from[0] ? h->from : "?", h->to,
			!strcmp(h->from, h->to) ? " (already)" : "");
		hwloc_bitmap_free(cpus);
		return 1;
	}
	cpulist_format(cpus, list, sizeof(list));
	hwloc_bitmap_free(cpus);
	fprintf(out, "  /%.*s{%s}%s (%u CPUs): %s -> %s%s\n", (int)(at - kn->path), kn->path, list, at + 2, n,
		h->from[0] ? h->from : "?", h->to, !strcmp(h->from, h->to) ? " (already)" : "");
	return n;
}

/* ---- 6. output --------------------------------------------------------- */

static json_t *jset_or_null(hwloc_const_bitmap_t set)
{
	char *s;
	json_t *j;

	if (!set)
		return json_null();
	s = cpulist_format_alloc(set);
	j = s ? json_string(s) : NULL;
	free(s);
	return j;
}

json_t *plan_setting_json(enum knob_id knob, const char *path, const char *current, const char *wanted)
{
	char id[128], host_path[260];

	if (path)
		snprintf(host_path, sizeof(host_path), "/%s", path);
	return json_pack("{s:s, s:s?, s:s?, s:s}", "knob", knob_name(knob, id, sizeof(id)), "path",
			 path ? host_path : NULL, "current", current, "wanted", wanted);
}

json_t *plan_json(const struct plan *pl)
{
	json_t *doc = json_object(), *ranks = json_array(), *host = json_array(),
	       *irqs = json_array(), *notes = json_array(), *cg;
	bool ok = doc && ranks && host && irqs && notes;

	if (!ok)
		goto out_oom;
	ok &= !json_object_set_new(doc, "policy", json_string(pl->policy_path));
	ok &= !json_object_set_new(doc, "summary", json_string(pl->summary));
	for (unsigned i = 0; i < pl->n_ranks; i++) {
		const struct plan_rank *rk = &pl->ranks[i];

		/* no GPU: null, as every field that binds nothing */
		ok &= !json_array_append_new(ranks, json_pack("{s:i, s:o, s:o, s:o, s:s?, s:s, s:s?, s:o}",
			"local_rank", rk->local_rank, "gpu", rk->gpu >= 0 ? json_integer(rk->gpu) : json_null(),
			"cpus", jset_or_null(rk->cpus), "mems", jset_or_null(rk->mems),
			"nic", rk->nic[0] ? rk->nic : NULL,
			"memory_policy", pl->memory_policy,
			"sched_policy", pl->sched_policy,
			"nice", pl->has_nice ? json_integer(pl->nice) : json_null()));
	}
	ok &= !json_object_set_new(doc, "ranks", ranks);
	ranks = NULL;
	for (unsigned i = 0; i < pl->n_host; i++) {
		const struct plan_host *h = &pl->host[i];

		ok &= !json_array_append_new(host, plan_setting_json(h->knob, h->path, h->from[0] ? h->from : NULL, h->to));
	}
	ok &= !json_object_set_new(doc, "host", host);
	host = NULL;
	if (pl->cgroup[0])
		cg = json_pack("{s:s, s:o, s:o, s:o}", "name", pl->cgroup,
			       "cpus", jset_or_null(pl->cgroup_cpus), "mems", jset_or_null(pl->cgroup_mems),
			       "cpu_weight", pl->cpu_weight ? json_integer(pl->cpu_weight) : json_null());
	else
		cg = json_null();
	ok &= !json_object_set_new(doc, "cgroup", cg);
	for (unsigned i = 0; i < pl->n_irqs; i++) {
		json_t *q = plan_setting_json(KNOB_IRQ_DEVICES, pl->irqs[i].path,
					      pl->irqs[i].from[0] ? pl->irqs[i].from : NULL, pl->irqs[i].to);

		ok &= q && !json_object_set_new(q, "irq", json_integer(pl->irqs[i].irq)) &&
		      !json_object_set_new(q, "device", json_string(pl->irqs[i].device));
		ok &= !json_array_append_new(irqs, q);
	}
	ok &= !json_object_set_new(doc, "irqs", irqs);
	irqs = NULL;
	ok &= !json_object_set_new(doc, "housekeeping", jset_or_null(pl->housekeeping));
	for (unsigned i = 0; i < pl->n_notes; i++)
		ok &= !json_array_append_new(notes, json_string(pl->notes[i]));
	ok &= !json_object_set_new(doc, "notes", notes);
	notes = NULL;
	if (ok)
		return doc;
out_oom:
	json_decref(doc);
	json_decref(ranks);
	json_decref(host);
	json_decref(irqs);
	json_decref(notes);
	return NULL;
}

int plan_print(FILE *out, const struct plan *pl, const struct topo *t)
{
	char hk[256];

	fprintf(out, "policy %s: %s\n", pl->policy_path, pl->summary);
	fprintf(out, "machine: %s\n\n", t->source);
	fprintf(out, "%-5s %-4s %-14s %-24s %-8s %s\n", "RANK", "GPU", "GPU BUS ID", "CPUS", "MEMS", "NIC");
	for (unsigned i = 0; i < pl->n_ranks; i++) {
		const struct plan_rank *rk = &pl->ranks[i];
		char cpus[128] = "(unbound)", mems[64] = "(any)", gpu[12] = "-";

		if (rk->cpus)
			cpulist_format(rk->cpus, cpus, sizeof(cpus));
		if (rk->mems) {
			char l[48];

			cpulist_format(rk->mems, l, sizeof(l));
			snprintf(mems, sizeof(mems), "%s", l);
		}
		if (rk->gpu >= 0)
			snprintf(gpu, sizeof(gpu), "%d", rk->gpu);
		fprintf(out, "%-5u %-4s %-14s %-24s %-8s %s\n", rk->local_rank, gpu,
			rk->gpu >= 0 ? t->gpus[rk->gpu].pci_bus_id : "-", cpus, mems,
			rk->nic[0] ? rk->nic : "-");
	}
	fprintf(out, "memory policy: %s", pl->memory_policy);
	if (pl->sched_policy)
		fprintf(out, ", scheduling: %s", pl->sched_policy);
	if (pl->sched_priority)
		fprintf(out, " priority %d", pl->sched_priority);
	if (pl->has_nice)
		fprintf(out, ", nice %d", pl->nice);
	cpulist_format(pl->housekeeping, hk, sizeof(hk));
	fprintf(out, ", housekeeping CPUs: %s%s\n", hk[0] ? hk : "none",
		pl->export_gpu ? ", CUDA_VISIBLE_DEVICES exported" : "");

	fprintf(out, "\nhost settings:%s\n", pl->n_host ? "" : " none");
	for (unsigned i = 0; i < pl->n_host; i += print_host_rows(out, pl, i))
		;
	if (pl->cgroup[0]) {
		char c[256], m[64];

		cpulist_format(pl->cgroup_cpus, c, sizeof(c));
		cpulist_format(pl->cgroup_mems, m, sizeof(m));
		fprintf(out, "job cgroup: %s (cpus %s, mems %s", pl->cgroup, c, m);
		if (pl->cpu_weight)
			fprintf(out, ", cpu weight %u", pl->cpu_weight);
		fprintf(out, ")\n");
	} else {
		fprintf(out, "job cgroup: none\n");
	}
	fprintf(out, "device IRQs:%s\n", pl->n_irqs ? "" : " none moved");
	for (unsigned i = 0; i < pl->n_irqs; i++)
		fprintf(out, "  IRQ %u (%s): CPUs %s -> %s\n", pl->irqs[i].irq, pl->irqs[i].device,
			pl->irqs[i].from, pl->irqs[i].to);
	if (pl->n_notes)
		fprintf(out, "\nnotes:\n");
	for (unsigned i = 0; i < pl->n_notes; i++)
		fprintf(out, "  - %s\n", pl->notes[i]);
	return ferror(out) ? -EIO : 0;
}
