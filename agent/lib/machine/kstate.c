/* SPDX-License-Identifier: MIT */
/* kstate.c — see kstate.h.
 *
 * Divisions: helpers and notes; one reader per field (THP, NUMA balancing,
 * hugepages, memory per node, governor, isolated/nohz_full, swap, cgroup mode); kstate_read.
 */
#include "machine/kstate.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/cpulist.h"
#include "machine/knob.h"
#include "base/parse.h"

#define KSTATE_SMALL 4096
#define KSTATE_LARGE (1u << 20) /* /proc/mounts on container hosts */

#define kstate_note(ks, ...) log_note_add((ks)->notes, &(ks)->n_notes, KSTATE_MAX_NOTES, __VA_ARGS__)

void kstate_release(struct kstate *ks)
{
	if (!ks)
		return;
	free(ks->hugepages);
	free(ks->node_mem);
	free(ks->isolated_cpus);
	free(ks->nohz_full);
	for (unsigned i = 0; i < ks->n_notes; i++)
		free(ks->notes[i]);
	memset(ks, 0, sizeof(*ks));
}

/* Read relpath.  Missing: note it, return 1.  Other read errors: -errno with
 * err set.  Present: 0. */
static int kstate_fetch(const struct fsroot *root, struct kstate *ks,
			const char *relpath, const char *field, char *buf,
			size_t size, struct nt_err *err)
{
	char disp[4096];
	ssize_t n = fsroot_read(root, relpath, buf, size);

	fsroot_display(root, relpath, disp, sizeof(disp));
	if (n == -ENOENT || n == -ENOTDIR) {
		kstate_note(ks, "%s: missing; %s unknown", disp, field);
		return 1;
	}
	if (n == -EFBIG)
		return err_set(err, -EINVAL, "%s: larger than %zu bytes, not a %s file",
			       disp, size - 1, field);
	if (n < 0)
		return err_set(err, (int)n, "%s: %s", disp, nt_strerror((int)-n));
	return 0;
}

static int garbage(const struct fsroot *root, const char *relpath, int line,
		   struct nt_err *err, const char *what, const char *content)
{
	char disp[4096];

	fsroot_display(root, relpath, disp, sizeof(disp));
	if (line > 0)
		return err_set(err, -EINVAL, "%s:%d: %s, got '%.60s'", disp, line, what, content);
	return err_set(err, -EINVAL, "%s: %s, got '%.60s'", disp, what, content);
}

/* ---- THP, NUMA balancing ---------------------------------------------- */

/* A one-file knob's effective value, read with its row's reader (the
 * file and the parser apply and verify use). */
static int read_knob(const struct fsroot *root, struct kstate *ks, enum knob_id id,
		     const char *field, const char *expected, char *out, size_t size,
		     struct nt_err *err)
{
	const struct knob *k = &knob_table[id];
	char buf[KSTATE_SMALL];
	int r = kstate_fetch(root, ks, k->path, field, buf, sizeof(buf), err);

	if (r)
		return r < 0 ? r : 0;
	if (k->effective(k, buf, out, size) < 0)
		return garbage(root, k->path, 0, err, expected, buf);
	return 0;
}

static int read_choice(const struct fsroot *root, struct kstate *ks, enum knob_id id,
		       const char *field, char *out, size_t size, struct nt_err *err)
{
	return read_knob(root, ks, id, field, "expected one of its choices (e.g. 'always [madvise] never')",
			 out, size, err);
}

static int read_numa_balancing(const struct fsroot *root, struct kstate *ks,
			       struct nt_err *err)
{
	const struct knob *k = &knob_table[KNOB_SCHED_NUMA_BALANCING];
	char buf[KSTATE_SMALL];
	int r = kstate_fetch(root, ks, k->path, "numa_balancing", buf, sizeof(buf), err);

	if (r)
		return r < 0 ? r : 0;
	if (parse_int(buf, (int)k->min, (int)k->max, &ks->numa_balancing) < 0)
		return garbage(root, k->path, 0, err, "expected 0, 1, 2 or 3", buf);
	return 0;
}

/* ---- hugepages --------------------------------------------------------- */

static int hugepages_add(struct kstate *ks, int node, uint64_t size_kb,
			 uint64_t total, uint64_t free_pages)
{
	struct kstate_hugepages *tmp;

	tmp = realloc(ks->hugepages, (ks->n_hugepages + 1) * sizeof(*tmp));
	if (!tmp)
		return -ENOMEM;
	ks->hugepages = tmp;
	tmp[ks->n_hugepages++] = (struct kstate_hugepages){
		.node = node, .size_kb = size_kb, .total = total, .free = free_pages,
	};
	return 0;
}

static int hugepages_cmp(const void *a, const void *b)
{
	const struct kstate_hugepages *x = a, *y = b;

	if (x->node != y->node)
		return x->node < y->node ? -1 : 1;
	return (x->size_kb > y->size_kb) - (x->size_kb < y->size_kb);
}

/* One pool directory: DIR/hugepages-<size>kB/{nr,free}_hugepages. */
static int read_pool_dir(const struct fsroot *root, struct kstate *ks,
			 const char *dir, int node, struct nt_err *err)
{
	char **names;
	int n, r = 0;

	n = fsroot_list(root, dir, &names);
	if (n < 0)
		return n;
	for (int i = 0; i < n && r == 0; i++) {
		char path[512], buf[64], kb[32];
		uint64_t size_kb, vals[2];
		static const char *const files[2] = { "nr_hugepages", "free_hugepages" };

		if (sscanf(names[i], "hugepages-%31[0-9]kB", kb) != 1 ||
		    parse_u64(kb, UINT64_MAX, &size_kb) < 0)
			continue;
		for (int f = 0; f < 2 && r == 0; f++) {
			snprintf(path, sizeof(path), "%s/%s/%s", dir, names[i], files[f]);
			r = kstate_fetch(root, ks, path, "hugepages", buf, sizeof(buf), err);
			if (r > 0) {
				r = 0;
				vals[f] = 0;
				goto next_pool;
			}
			if (r == 0 && parse_u64(buf, UINT64_MAX, &vals[f]) < 0)
				r = garbage(root, path, 0, err, "expected a page count", buf);
		}
		if (r == 0)
			r = hugepages_add(ks, node, size_kb, vals[0], vals[1]);
next_pool:;
	}
	fsroot_names_free(names);
	return r;
}

typedef int node_fn(const struct fsroot *root, struct kstate *ks, const char *name,
		    int node, void *arg, struct nt_err *err);

/* fn(root, ks, "nodeN", N, arg, err) for each node directory of
 * sys/devices/system/node (none where it cannot be listed), until one
 * fails: 0, or its error. */
static int each_node(const struct fsroot *root, struct kstate *ks, node_fn *fn,
		     void *arg, struct nt_err *err)
{
	char **names;
	int n, r = 0;

	n = fsroot_list(root, "sys/devices/system/node", &names);
	if (n < 0)
		return 0;
	for (int i = 0; i < n && r == 0; i++) {
		char idx[16];
		uint64_t node;

		if (sscanf(names[i], "node%15[0-9]", idx) != 1 ||
		    parse_u64(idx, 65535, &node) < 0)
			continue;
		r = fn(root, ks, names[i], (int)node, arg, err);
	}
	fsroot_names_free(names);
	return r == -ENOMEM ? err_set(err, r, "out of memory") : r;
}

/* One node's pools, when it has them; *(bool *)per_node set then. */
static int node_pools(const struct fsroot *root, struct kstate *ks, const char *name,
		      int node, void *per_node, struct nt_err *err)
{
	char dir[512];

	snprintf(dir, sizeof(dir), "sys/devices/system/node/%s/hugepages", name);
	if (!fsroot_exists(root, dir))
		return 0;
	*(bool *)per_node = true;
	return read_pool_dir(root, ks, dir, node, err);
}

static int read_hugepages(const struct fsroot *root, struct kstate *ks,
			  struct nt_err *err)
{
	bool per_node = false;
	int r = each_node(root, ks, node_pools, &per_node, err);

	if (r < 0)
		return r;
	if (per_node) {
		qsort(ks->hugepages, ks->n_hugepages, sizeof(*ks->hugepages), hugepages_cmp);
		return 0;
	}
	/* Kernels without NUMA only have the global pools. */
	r = read_pool_dir(root, ks, "sys/kernel/mm/hugepages", -1, err);
	if (r == 0)
		qsort(ks->hugepages, ks->n_hugepages, sizeof(*ks->hugepages), hugepages_cmp);
	if (r == -ENOENT || r == -ENOTDIR) {
		char disp[4096];

		kstate_note(ks, "%s: missing; hugepages unknown",
			    fsroot_display(root, "sys/kernel/mm/hugepages", disp, sizeof(disp)));
		return 0;
	}
	return r == -ENOMEM ? err_set(err, r, "out of memory") : r;
}

/* ---- memory per node --------------------------------------------------- */

/* "Node N KEY:  <n> kB" of a nodeN/meminfo line into *ret_bytes: 1 when
 * line is KEY's, 0 when another key's, -EINVAL when KEY's is garbage. */
static int node_meminfo_line(const char *line, const char *key, uint64_t *ret_bytes)
{
	char k[32], num[32], unit[8], extra;
	unsigned node;
	uint64_t kb;

	if (sscanf(line, "Node %u %31[^:]:", &node, k) != 2 || strcmp(k, key))
		return 0;
	if (sscanf(strchr(line, ':') + 1, " %31s %7s %c", num, unit, &extra) != 2 ||
	    strcmp(unit, "kB") || parse_u64(num, UINT64_MAX / 1024, &kb) < 0)
		return -EINVAL;
	*ret_bytes = kb * 1024;
	return 1;
}

static int node_meminfo(const struct fsroot *root, struct kstate *ks, const char *name,
			int node, void *buf, struct nt_err *err)
{
	static const char *const keys[2] = { "MemTotal", "MemFree" };
	uint64_t v[2];
	unsigned found = 0;
	char path[512], *line, *save = NULL;
	int lineno = 0;
	ssize_t n;
	struct kstate_node_mem *tmp;

	snprintf(path, sizeof(path), "sys/devices/system/node/%s/meminfo", name);
	n = fsroot_read(root, path, buf, KSTATE_SMALL * 2);
	if (n == -ENOENT || n == -ENOTDIR)
		return 0; /* a tree without it: free memory unknown */
	if (n < 0) {
		char disp[4096];

		return err_set(err, (int)n, "%s: %s", fsroot_display(root, path, disp, sizeof(disp)),
			       strerror((int)-n));
	}
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		lineno++;
		for (unsigned k = 0; k < 2; k++) {
			int r = node_meminfo_line(line, keys[k], &v[k]);

			if (r < 0)
				return garbage(root, path, lineno, err, "expected 'Node N KEY: <n> kB'", line);
			found |= (unsigned)r << k;
		}
	}
	if (found != 3)
		return garbage(root, path, 0, err, "expected MemTotal and MemFree lines", "");
	tmp = realloc(ks->node_mem, (ks->n_node_mem + 1) * sizeof(*tmp));
	if (!tmp)
		return -ENOMEM;
	ks->node_mem = tmp;
	tmp[ks->n_node_mem++] = (struct kstate_node_mem){
		.node = node, .total_bytes = v[0], .free_bytes = v[1],
	};
	return 0;
}

static int node_mem_cmp(const void *a, const void *b)
{
	const struct kstate_node_mem *x = a, *y = b;

	return (x->node > y->node) - (x->node < y->node);
}

static int read_node_mem(const struct fsroot *root, struct kstate *ks, struct nt_err *err)
{
	char *buf = malloc(KSTATE_SMALL * 2);
	int r;

	if (!buf)
		return err_set(err, -ENOMEM, "out of memory");
	r = each_node(root, ks, node_meminfo, buf, err);
	free(buf);
	if (ks->n_node_mem)
		qsort(ks->node_mem, ks->n_node_mem, sizeof(*ks->node_mem), node_mem_cmp);
	return r;
}

/* ---- CPU governor ------------------------------------------------------ */

static int read_governor(const struct fsroot *root, struct kstate *ks,
			 struct nt_err *err)
{
	char **names;
	int n, r = 0;
	unsigned seen = 0;
	char disp[4096];

	n = fsroot_list(root, "sys/devices/system/cpu", &names);
	if (n < 0) {
		kstate_note(ks, "%s: missing; governor unknown",
			    fsroot_display(root, "sys/devices/system/cpu", disp, sizeof(disp)));
		return 0;
	}
	for (int i = 0; i < n && r == 0; i++) {
		char path[512], buf[64];
		ssize_t len;
		uint64_t cpu;

		if (strncmp(names[i], "cpu", 3) || !names[i][3] ||
		    strspn(names[i] + 3, "0123456789") != strlen(names[i] + 3) ||
		    parse_u64(names[i] + 3, UINT32_MAX, &cpu) < 0)
			continue;
		knob_host_path(&knob_table[KNOB_SCHED_GOVERNOR], (unsigned)cpu, path, sizeof(path));
		len = fsroot_read(root, path, buf, sizeof(buf));
		if (len == -ENOENT || len == -ENOTDIR)
			continue; /* offline CPU, or no cpufreq driver */
		if (len < 0) {
			r = err_set(err, (int)len, "%s: %s",
				    fsroot_display(root, path, disp, sizeof(disp)),
				    nt_strerror((int)-len));
			break;
		}
		if (!buf[0] || strspn(buf, "abcdefghijklmnopqrstuvwxyz0123456789_-") != strlen(buf)) {
			r = garbage(root, path, 0, err, "expected a governor name", buf);
			break;
		}
		if (seen++ == 0)
			snprintf(ks->governor, sizeof(ks->governor), "%s", buf);
		else if (strcmp(ks->governor, buf))
			snprintf(ks->governor, sizeof(ks->governor), "mixed");
	}
	fsroot_names_free(names);
	if (r == 0 && seen == 0)
		kstate_note(ks, "%s: no CPU has cpufreq/scaling_governor (no cpufreq driver, e.g. a VM); governor unknown",
			    fsroot_display(root, "sys/devices/system/cpu", disp, sizeof(disp)));
	return r;
}

/* ---- isolated / nohz_full ---------------------------------------------- */

static int read_cpulist_file(const struct fsroot *root, struct kstate *ks,
			     const char *relpath, const char *field,
			     char **ret, struct nt_err *err)
{
	char buf[KSTATE_SMALL];
	hwloc_bitmap_t set;
	int r = kstate_fetch(root, ks, relpath, field, buf, sizeof(buf), err);

	if (r)
		return r < 0 ? r : 0;
	if (!strcmp(buf, "(null)")) /* nohz_full when not configured */
		buf[0] = '\0';
	set = hwloc_bitmap_alloc();
	if (!set)
		return err_set(err, -ENOMEM, "out of memory");
	r = cpulist_parse(buf, set);
	if (r == 0) {
		*ret = cpulist_format_alloc(set);
		if (!*ret)
			r = err_set(err, -ENOMEM, "out of memory");
	} else {
		r = garbage(root, relpath, 0, err, "expected a CPU list like '2-5,8'", buf);
	}
	hwloc_bitmap_free(set);
	return r;
}

/* ---- swap -------------------------------------------------------------- */

static int read_swap(const struct fsroot *root, struct kstate *ks,
		     struct nt_err *err)
{
	static const char path[] = "proc/meminfo";
	char *buf, *line, *save = NULL;
	int r, lineno = 0;

	buf = malloc(KSTATE_LARGE);
	if (!buf)
		return err_set(err, -ENOMEM, "out of memory");
	r = kstate_fetch(root, ks, path, "swap_total_bytes", buf, KSTATE_LARGE, err);
	if (r) {
		free(buf);
		return r < 0 ? r : 0;
	}
	r = -ENODATA;
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char num[32], unit[8], extra;
		uint64_t kb;
		int fields;

		lineno++;
		if (strncmp(line, "SwapTotal:", 10))
			continue;
		fields = sscanf(line + 10, " %31s %7s %c", num, unit, &extra);
		if (fields != 2 || strcmp(unit, "kB") || parse_u64(num, INT64_MAX / 1024, &kb) < 0) {
			r = garbage(root, path, lineno, err, "expected 'SwapTotal: <n> kB'", line);
			break;
		}
		ks->swap_total_bytes = (int64_t)(kb * 1024);
		r = 0;
		break;
	}
	free(buf);
	if (r == -ENODATA) {
		char disp[4096];

		r = err_set(err, -EINVAL, "%s: no 'SwapTotal:' line, not a meminfo file",
			    fsroot_display(root, path, disp, sizeof(disp)));
	}
	return r;
}

/* ---- cgroup mode ------------------------------------------------------- */

static int read_cgroup_mode(const struct fsroot *root, struct kstate *ks,
			    struct nt_err *err)
{
	static const char path[] = "proc/mounts";
	char *buf, *line, *save = NULL;
	bool v1 = false, v2_root = false, v2_other = false;
	int r, lineno = 0;

	buf = malloc(KSTATE_LARGE);
	if (!buf)
		return err_set(err, -ENOMEM, "out of memory");
	r = kstate_fetch(root, ks, path, "cgroup_version", buf, KSTATE_LARGE, err);
	if (r) {
		free(buf);
		return r < 0 ? r : 0;
	}
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char dev[256], mnt[1024], type[64];

		lineno++;
		if (sscanf(line, "%255s %1023s %63s", dev, mnt, type) != 3) {
			r = garbage(root, path, lineno, err, "expected 'device mountpoint type options ...'", line);
			break;
		}
		if (!strcmp(type, "cgroup"))
			v1 = true;
		else if (!strcmp(type, "cgroup2") && !strcmp(mnt, "/sys/fs/cgroup"))
			v2_root = true;
		else if (!strcmp(type, "cgroup2"))
			v2_other = true;
	}
	free(buf);
	if (r < 0)
		return r;
	if (v2_root) {
		ks->cgroup_version = 2;
		snprintf(ks->cgroup_mode, sizeof(ks->cgroup_mode), "unified");
	} else if (v1) {
		ks->cgroup_version = 1;
		snprintf(ks->cgroup_mode, sizeof(ks->cgroup_mode), v2_other ? "hybrid" : "legacy");
	} else {
		char disp[4096];

		kstate_note(ks, "%s: no cgroup file system mounted; cgroup_version unknown",
			    fsroot_display(root, path, disp, sizeof(disp)));
	}
	return 0;
}

/* ---- all --------------------------------------------------------------- */

int kstate_read(const struct fsroot *root, struct kstate *ret, struct nt_err *err)
{
	struct kstate ks = { .numa_balancing = -1, .swap_total_bytes = -1 };
	int r;

	r = read_choice(root, &ks, KNOB_THP_ENABLED, "thp_enabled", ks.thp_enabled, sizeof(ks.thp_enabled), err);
	if (!r)
		r = read_choice(root, &ks, KNOB_THP_DEFRAG, "thp_defrag", ks.thp_defrag, sizeof(ks.thp_defrag), err);
	if (!r)
		r = read_numa_balancing(root, &ks, err);
	if (!r)
		r = read_hugepages(root, &ks, err);
	if (!r)
		r = read_node_mem(root, &ks, err);
	if (!r)
		r = read_governor(root, &ks, err);
	if (!r)
		r = read_cpulist_file(root, &ks, "sys/devices/system/cpu/isolated",
				      "isolated_cpus", &ks.isolated_cpus, err);
	if (!r)
		r = read_cpulist_file(root, &ks, "sys/devices/system/cpu/nohz_full",
				      "nohz_full", &ks.nohz_full, err);
	if (!r)
		r = read_swap(root, &ks, err);
	if (!r)
		r = read_cgroup_mode(root, &ks, err);
	if (r < 0) {
		kstate_release(&ks);
		return r;
	}
	*ret = ks;
	return 0;
}
