/* SPDX-License-Identifier: MIT */
/* discover.c — see discover.h.
 *
 * Divisions: warnings; JSON document; human text.
 */
#include "machine/discover.h"
#include "machine/discover_test.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "base/cpulist.h"


/* ---- warnings ---------------------------------------------------------- */

static void warn_add(struct discover_warning *out, unsigned max, unsigned *n,
		     const char *code, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));

static void warn_add(struct discover_warning *out, unsigned max, unsigned *n,
		     const char *code, const char *fmt, ...)
{
	va_list ap;

	if (*n < max) {
		snprintf(out[*n].code, sizeof(out[*n].code), "%s", code);
		va_start(ap, fmt);
		vsnprintf(out[*n].msg, sizeof(out[*n].msg), fmt, ap);
		va_end(ap);
	}
	(*n)++;
}

unsigned discover_warnings(const struct topo *t, const struct kstate *ks,
			   struct discover_warning *out, unsigned max)
{
	unsigned n = 0;

	for (unsigned g = 0; g < t->n_gpus; g++) {
		const struct topo_dev *gpu = &t->gpus[g], *nic;

		if (gpu->nearest_nic < 0 || gpu->numa_node < 0)
			continue;
		nic = &t->nics[gpu->nearest_nic];
		if (nic->numa_node < 0 || nic->numa_node == gpu->numa_node)
			continue;
		warn_add(out, max, &n, "gpu-nic-remote",
			 "GPU %u (%s) is on NUMA node %d but its nearest NIC %s (%s) is on node %d: inter-node traffic crosses the CPU interconnect",
			 g, gpu->pci_bus_id, gpu->numa_node, nic->name,
			 nic->pci_bus_id, nic->numa_node);
	}
	if (!ks)
		return n;
	if (!strcmp(ks->thp_defrag, "always"))
		warn_add(out, max, &n, "thp-defrag-always",
			 "THP defrag=always: page faults stall in direct compaction; use defer+madvise or madvise");
	if (ks->numa_balancing > 0 && t->n_numa > 1 && t->n_gpus > 0)
		warn_add(out, max, &n, "numa-balancing-on",
			 "automatic NUMA balancing is on (kernel.numa_balancing=%d) on a %u-node GPU host: hinting faults and page migrations hit pinned, rank-bound memory",
			 ks->numa_balancing, t->n_numa);
	if (ks->swap_total_bytes > 0)
		warn_add(out, max, &n, "swap-on",
			 "swap is on (%.1f GiB): pinned loader buffers and page cache compete with swapped-out training memory",
			 (double)ks->swap_total_bytes / (1ull << 30));
	if (ks->governor[0] && strcmp(ks->governor, "performance"))
		warn_add(out, max, &n, "governor",
			 "CPU frequency governor '%s': cores ramp up late after communication and data waits; use performance",
			 ks->governor);
	return n;
}

/* All warnings in a new array (free() it); *ret_n their count. */
static struct discover_warning *warnings_all(const struct topo *t,
					     const struct kstate *ks, unsigned *ret_n)
{
	unsigned n = discover_warnings(t, ks, NULL, 0);
	struct discover_warning *w = calloc(n + 1, sizeof(*w));

	if (w)
		discover_warnings(t, ks, w, n);
	*ret_n = n;
	return w;
}

/* ---- JSON -------------------------------------------------------------- */

/* json_object_set_new that tolerates a NULL value (out of memory) by
 * remembering the failure. */
static void jset(json_t *obj, const char *key, json_t *val, bool *oom)
{
	if (!val || json_object_set_new(obj, key, val) < 0)
		*oom = true;
}

static json_t *jcpulist(hwloc_const_bitmap_t set)
{
	char *s = cpulist_format_alloc(set);
	json_t *j = s ? json_string(s) : NULL;

	free(s);
	return j;
}

static json_t *jstr_or_null(const char *s)
{
	return s && s[0] ? json_string(s) : json_null();
}

static json_t *json_dev(const struct topo *t, const struct topo_dev *d,
			int gpu_index, bool *oom)
{
	json_t *o = json_object();

	if (!o) {
		*oom = true;
		return NULL;
	}
	if (gpu_index >= 0)
		jset(o, "index", json_integer(gpu_index), oom);
	else
		jset(o, "name", json_string(d->name), oom);
	jset(o, "pci_bus_id", json_string(d->pci_bus_id), oom);
	if (gpu_index >= 0)
		jset(o, "vendor", json_string(d->vendor), oom);
	jset(o, "numa_node", d->numa_node >= 0 ? json_integer(d->numa_node) : json_null(), oom);
	jset(o, "cpus", jcpulist(d->cpus), oom);
	if (gpu_index >= 0) {
		jset(o, "name", json_string(d->name), oom);
		jset(o, "nearest_nic", d->nearest_nic >= 0
		     ? json_string(t->nics[d->nearest_nic].name) : json_null(), oom);
	} else {
		jset(o, "rdma_device", jstr_or_null(d->rdma), oom);
	}
	return o;
}

static json_t *json_kernel(const struct kstate *ks, bool *oom)
{
	json_t *k = json_object(), *hp = json_array();

	if (!k || !hp) {
		json_decref(k);
		json_decref(hp);
		*oom = true;
		return NULL;
	}
	jset(k, "thp_enabled", jstr_or_null(ks->thp_enabled), oom);
	jset(k, "thp_defrag", jstr_or_null(ks->thp_defrag), oom);
	jset(k, "numa_balancing", ks->numa_balancing >= 0
	     ? json_integer(ks->numa_balancing) : json_null(), oom);
	for (unsigned i = 0; i < ks->n_hugepages; i++) {
		const struct kstate_hugepages *h = &ks->hugepages[i];
		json_t *o = json_object();

		if (!o || json_array_append_new(hp, o) < 0) {
			*oom = true;
			break;
		}
		jset(o, "node", h->node >= 0 ? json_integer(h->node) : json_null(), oom);
		jset(o, "size_kb", json_integer((json_int_t)h->size_kb), oom);
		jset(o, "total", json_integer((json_int_t)h->total), oom);
		jset(o, "free", json_integer((json_int_t)h->free), oom);
	}
	jset(k, "hugepages", hp, oom);
	jset(k, "governor", jstr_or_null(ks->governor), oom);
	jset(k, "isolated_cpus", ks->isolated_cpus ? json_string(ks->isolated_cpus) : json_null(), oom);
	jset(k, "nohz_full", ks->nohz_full ? json_string(ks->nohz_full) : json_null(), oom);
	jset(k, "swap_total_bytes", ks->swap_total_bytes >= 0
	     ? json_integer(ks->swap_total_bytes) : json_null(), oom);
	jset(k, "cgroup_version", ks->cgroup_version ? json_integer(ks->cgroup_version)
	     : json_null(), oom);
	jset(k, "cgroup_mode", jstr_or_null(ks->cgroup_mode), oom);
	return k;
}

json_t *discover_json(const struct topo *t, const struct kstate *ks)
{
	struct discover_warning *w = NULL;
	json_t *doc = json_object(), *numa = json_array(), *gpus = json_array(),
	       *nics = json_array(), *warns = json_array(), *unknown = json_array();
	unsigned nw;
	bool oom = !doc || !numa || !gpus || !nics || !warns || !unknown;

	if (oom)
		goto out_oom;
	jset(doc, "source", json_string(t->source), &oom);
	jset(doc, "packages", json_integer(t->packages), &oom);
	for (unsigned i = 0; i < t->n_numa; i++) {
		json_t *o = json_object();

		if (!o || json_array_append_new(numa, o) < 0) {
			oom = true;
			break;
		}
		jset(o, "os_index", json_integer(t->numa[i].os_index), &oom);
		jset(o, "cpus", jcpulist(t->numa[i].cpus), &oom);
		jset(o, "memory_bytes", json_integer((json_int_t)t->numa[i].memory_bytes), &oom);
	}
	jset(doc, "numa_nodes", numa, &oom);
	numa = NULL;
	jset(doc, "cores", json_integer(t->cores), &oom);
	jset(doc, "pus", json_integer(t->pus), &oom);
	for (unsigned i = 0; i < t->n_gpus; i++)
		if (json_array_append_new(gpus, json_dev(t, &t->gpus[i], (int)i, &oom)) < 0)
			oom = true;
	jset(doc, "gpus", gpus, &oom);
	gpus = NULL;
	for (unsigned i = 0; i < t->n_nics; i++)
		if (json_array_append_new(nics, json_dev(t, &t->nics[i], -1, &oom)) < 0)
			oom = true;
	jset(doc, "nics", nics, &oom);
	nics = NULL;
	jset(doc, "kernel", ks ? json_kernel(ks, &oom) : json_null(), &oom);

	w = warnings_all(t, ks, &nw);
	if (!w)
		oom = true;
	for (unsigned i = 0; w && i < nw; i++) {
		json_t *o = json_object();

		if (!o || json_array_append_new(warns, o) < 0) {
			oom = true;
			break;
		}
		jset(o, "code", json_string(w[i].code), &oom);
		jset(o, "message", json_string(w[i].msg), &oom);
	}
	jset(doc, "warnings", warns, &oom);
	warns = NULL;
	for (unsigned i = 0; ks && i < ks->n_notes; i++)
		if (json_array_append_new(unknown, json_string(ks->notes[i])) < 0)
			oom = true;
	jset(doc, "unknown", unknown, &oom);
	unknown = NULL;
	free(w);
	if (!oom)
		return doc;
out_oom:
	json_decref(doc);
	json_decref(numa);
	json_decref(gpus);
	json_decref(nics);
	json_decref(warns);
	json_decref(unknown);
	return NULL;
}

/* ---- human text -------------------------------------------------------- */

static void fmt_bytes(uint64_t b, char *buf, size_t size)
{
	if (b >= (1ull << 30))
		snprintf(buf, size, "%.1f GiB", (double)b / (1ull << 30));
	else if (b >= (1ull << 20))
		snprintf(buf, size, "%.1f MiB", (double)b / (1ull << 20));
	else if (b == 0)
		snprintf(buf, size, "-");
	else
		snprintf(buf, size, "%" PRIu64 " B", b);
}

/* Devices of node (os index, or -1 for "no single node"), i-th one. */
static const struct topo_dev *nth_on_node(const struct topo_dev *devs, unsigned n,
					  int node, unsigned i, unsigned *ret_index)
{
	for (unsigned k = 0; k < n; k++) {
		if (devs[k].numa_node != node)
			continue;
		if (i-- == 0) {
			*ret_index = k;
			return &devs[k];
		}
	}
	return NULL;
}

static unsigned count_on_node(const struct topo_dev *devs, unsigned n, int node)
{
	unsigned c = 0;

	for (unsigned k = 0; k < n; k++)
		c += devs[k].numa_node == node;
	return c;
}

static void print_node_rows(FILE *out, const struct topo *t, const char *label,
			    const char *mem, const char *cpus, int node, int cpus_w)
{
	unsigned ng = count_on_node(t->gpus, t->n_gpus, node);
	unsigned nn = count_on_node(t->nics, t->n_nics, node);
	unsigned rows = ng > nn ? ng : nn;

	if (rows == 0)
		rows = 1;
	for (unsigned r = 0; r < rows; r++) {
		char gcol[160] = "-", ncol[160] = "-";
		const struct topo_dev *d;
		unsigned idx;

		if ((d = nth_on_node(t->gpus, t->n_gpus, node, r, &idx)))
			snprintf(gcol, sizeof(gcol), "%u %s %.40s", idx, d->pci_bus_id, d->name);
		else if (r > 0)
			gcol[0] = '\0';
		if ((d = nth_on_node(t->nics, t->n_nics, node, r, &idx)))
			snprintf(ncol, sizeof(ncol), "%s %s", d->name, d->pci_bus_id);
		else if (r > 0)
			ncol[0] = '\0';
		fprintf(out, "%-5s %-10s %-*s  %-56s %s\n", r ? "" : label, r ? "" : mem,
			cpus_w, r ? "" : cpus, gcol, ncol);
	}
}

static void print_kernel(FILE *out, const struct kstate *ks)
{
	char swap[32];
	bool any_hp = false;

	fprintf(out, "kernel: THP enabled=%s defrag=%s, NUMA balancing=",
		ks->thp_enabled[0] ? ks->thp_enabled : "?",
		ks->thp_defrag[0] ? ks->thp_defrag : "?");
	if (ks->numa_balancing < 0)
		fprintf(out, "?");
	else
		fprintf(out, "%s (%d)", ks->numa_balancing ? "on" : "off", ks->numa_balancing);
	if (ks->swap_total_bytes < 0)
		snprintf(swap, sizeof(swap), "?");
	else if (ks->swap_total_bytes == 0)
		snprintf(swap, sizeof(swap), "off");
	else
		fmt_bytes((uint64_t)ks->swap_total_bytes, swap, sizeof(swap));
	fprintf(out, ", governor=%s, swap=%s, cgroup=",
		ks->governor[0] ? ks->governor : "?", swap);
	if (ks->cgroup_version)
		fprintf(out, "v%d (%s)\n", ks->cgroup_version, ks->cgroup_mode);
	else
		fprintf(out, "?\n");
	fprintf(out, "        isolated CPUs: %s, nohz_full: %s\n",
		!ks->isolated_cpus ? "?" : ks->isolated_cpus[0] ? ks->isolated_cpus : "none",
		!ks->nohz_full ? "?" : ks->nohz_full[0] ? ks->nohz_full : "none");
	fprintf(out, "        hugepages:");
	for (unsigned i = 0; i < ks->n_hugepages; i++) {
		const struct kstate_hugepages *h = &ks->hugepages[i];
		bool first_of_node = i == 0 || ks->hugepages[i - 1].node != h->node;
		char size[24];

		if (!h->total)
			continue;
		if (h->size_kb % (1024 * 1024) == 0)
			snprintf(size, sizeof(size), "%" PRIu64 "G", h->size_kb >> 20);
		else if (h->size_kb % 1024 == 0)
			snprintf(size, sizeof(size), "%" PRIu64 "M", h->size_kb >> 10);
		else
			snprintf(size, sizeof(size), "%" PRIu64 "k", h->size_kb);
		if (h->node >= 0 && (first_of_node || !any_hp))
			fprintf(out, "%s node%d:", any_hp ? ";" : "", h->node);
		else if (any_hp)
			fputc(',', out);
		fprintf(out, " %" PRIu64 " x %s (%" PRIu64 " free)", h->total, size, h->free);
		any_hp = true;
	}
	fprintf(out, "%s\n", any_hp ? "" : ks->n_hugepages ? " none reserved" : " ?");
}

int discover_print(FILE *out, const struct topo *t, const struct kstate *ks)
{
	struct discover_warning *w;
	unsigned nw;
	int cpus_w = 4;

	fprintf(out, "%s: %u package%s, %u NUMA node%s, %u cores, %u PUs, %u GPU%s, %u NIC%s\n\n",
		t->source, t->packages, t->packages == 1 ? "" : "s",
		t->n_numa, t->n_numa == 1 ? "" : "s", t->cores, t->pus,
		t->n_gpus, t->n_gpus == 1 ? "" : "s", t->n_nics, t->n_nics == 1 ? "" : "s");

	char **lists = calloc(t->n_numa + 1, sizeof(*lists));

	if (!lists)
		return -ENOMEM;
	for (unsigned i = 0; i < t->n_numa; i++) {
		lists[i] = cpulist_format_alloc(t->numa[i].cpus);
		if (lists[i] && (int)strlen(lists[i]) > cpus_w)
			cpus_w = (int)strlen(lists[i]);
	}
	fprintf(out, "%-5s %-10s %-*s  %-56s %s\n", "NODE", "MEMORY", cpus_w, "CPUS",
		"GPUS (index, PCI bus id, model)", "NICS");
	for (unsigned i = 0; i < t->n_numa; i++) {
		char label[16], mem[32];

		snprintf(label, sizeof(label), "%u", t->numa[i].os_index);
		fmt_bytes(t->numa[i].memory_bytes, mem, sizeof(mem));
		print_node_rows(out, t, label, mem, lists[i] ? lists[i] : "?",
				(int)t->numa[i].os_index, cpus_w);
		free(lists[i]);
	}
	free(lists);
	if (count_on_node(t->gpus, t->n_gpus, -1) + count_on_node(t->nics, t->n_nics, -1))
		print_node_rows(out, t, "?", "", "(no single NUMA node)", -1, cpus_w);
	fputc('\n', out);

	if (ks)
		print_kernel(out, ks);
	else
		fprintf(out, "kernel: not read (the topology is not this host's; add --sysroot DIR to read a captured tree)\n");

	w = warnings_all(t, ks, &nw);
	if (!w)
		return -ENOMEM;
	if (nw)
		fprintf(out, "\nwarnings:\n");
	for (unsigned i = 0; i < nw; i++)
		fprintf(out, "  ! %s\n", w[i].msg);
	free(w);
	return ferror(out) ? -EIO : 0;
}
