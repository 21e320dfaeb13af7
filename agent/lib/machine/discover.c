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
		jset(o, "nic_link", d->nic_link >= 0
		     ? json_string(topo_link_name(d->nic_link)) : json_null(), oom);
	} else {
		jset(o, "rdma_device", jstr_or_null(d->rdma), oom);
	}
	return o;
}

/* Distances from numa[i] to each node of numa_nodes, or null. */
static json_t *json_distances(const struct topo *t, unsigned i, bool *oom)
{
	json_t *a;

	if (!t->numa_dist)
		return json_null();
	a = json_array();
	for (unsigned j = 0; a && j < t->n_numa; j++)
		if (json_array_append_new(a, json_integer((json_int_t)t->numa_dist[(size_t)i * t->n_numa + j])) < 0)
			*oom = true;
	return a;
}

static const struct kstate_node_mem *node_mem(const struct kstate *ks, unsigned os_index)
{
	for (unsigned i = 0; ks && i < ks->n_node_mem; i++)
		if (ks->node_mem[i].node == (int)os_index)
			return &ks->node_mem[i];
	return NULL;
}

static json_t *json_numa(const struct topo *t, const struct kstate *ks, unsigned i, bool *oom)
{
	const struct kstate_node_mem *m = node_mem(ks, t->numa[i].os_index);
	json_t *o = json_object();

	if (!o) {
		*oom = true;
		return NULL;
	}
	jset(o, "os_index", json_integer(t->numa[i].os_index), oom);
	jset(o, "cpus", jcpulist(t->numa[i].cpus), oom);
	jset(o, "memory_bytes", json_integer((json_int_t)t->numa[i].memory_bytes), oom);
	jset(o, "memory_free_bytes", m ? json_integer((json_int_t)m->free_bytes) : json_null(), oom);
	jset(o, "distances", json_distances(t, i, oom), oom);
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
	for (unsigned i = 0; i < t->n_numa; i++)
		if (json_array_append_new(numa, json_numa(t, ks, i, &oom)) < 0)
			oom = true;
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

/* NODE MEMORY [FREE] CPUS: one row per NUMA node; FREE where the kernel
 * state has the nodes' meminfo. */
static int print_nodes(FILE *out, const struct topo *t, const struct kstate *ks)
{
	bool free_col = ks && ks->n_node_mem > 0;

	fprintf(out, "%-5s %-11s%s %s\n", "NODE", "MEMORY", free_col ? " FREE       " : "", "CPUS");
	for (unsigned i = 0; i < t->n_numa; i++) {
		const struct kstate_node_mem *m = node_mem(ks, t->numa[i].os_index);
		char *cpus = cpulist_format_alloc(t->numa[i].cpus);
		char mem[32], fr[32] = "?";

		if (!cpus)
			return -ENOMEM;
		fmt_bytes(t->numa[i].memory_bytes, mem, sizeof(mem));
		if (m)
			fmt_bytes(m->free_bytes, fr, sizeof(fr));
		fprintf(out, "%-5u %-11s", t->numa[i].os_index, mem);
		if (free_col)
			fprintf(out, " %-11s", fr);
		fprintf(out, " %s\n", cpus);
		free(cpus);
	}
	return 0;
}

/* The NUMA distance matrix, as numactl -H prints it. */
static void print_distances(FILE *out, const struct topo *t)
{
	if (!t->numa_dist) {
		fprintf(out, "node distances: %s\n", t->n_numa > 1 ? "not in the topology" : "one node");
		return;
	}
	fprintf(out, "node distances:\nnode");
	for (unsigned j = 0; j < t->n_numa; j++)
		fprintf(out, " %3u", t->numa[j].os_index);
	for (unsigned i = 0; i < t->n_numa; i++) {
		fprintf(out, "\n%3u:", t->numa[i].os_index);
		for (unsigned j = 0; j < t->n_numa; j++)
			fprintf(out, " %3" PRIu64, t->numa_dist[(size_t)i * t->n_numa + j]);
	}
	fputc('\n', out);
}

static void fmt_node(int node, char *buf, size_t size)
{
	if (node >= 0)
		snprintf(buf, size, "%d", node);
	else
		snprintf(buf, size, "-");
}

static int nic_name_width(const struct topo *t)
{
	int w = 4;

	for (unsigned i = 0; i < t->n_nics; i++)
		if ((int)strlen(t->nics[i].name) > w)
			w = (int)strlen(t->nics[i].name);
	return w;
}

/* GPU rows: each with its nearest NIC (plan's choice) and the PCIe path. */
static void print_gpus(FILE *out, const struct topo *t, int nic_w)
{
	fprintf(out, "GPU  PCI BUS ID    NODE  %-*s  LINK  MODEL\n", nic_w, "NIC");
	for (unsigned i = 0; i < t->n_gpus; i++) {
		const struct topo_dev *d = &t->gpus[i];
		char node[16];

		fmt_node(d->numa_node, node, sizeof(node));
		fprintf(out, "%-4u %-13s %-5s %-*s  %-4s  %s\n", i, d->pci_bus_id, node, nic_w,
			d->nearest_nic >= 0 ? t->nics[d->nearest_nic].name : "-",
			topo_link_name(d->nic_link), d->name);
	}
	if (t->n_gpus && t->n_nics)
		fprintf(out, "LINK, as nvidia-smi topo -m: PIX one PCIe switch, PXB several bridges, PHB one host bridge, NODE one NUMA node, SYS across nodes\n");
}

static void print_nics(FILE *out, const struct topo *t, int nic_w)
{
	fprintf(out, "%-*s  PCI BUS ID    NODE  RDMA\n", nic_w, "NIC");
	for (unsigned i = 0; i < t->n_nics; i++) {
		const struct topo_dev *d = &t->nics[i];
		char node[16];

		fmt_node(d->numa_node, node, sizeof(node));
		fprintf(out, "%-*s  %-13s %-5s %s\n", nic_w, d->name, d->pci_bus_id, node,
			d->rdma[0] ? d->rdma : "-");
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
	int nic_w = nic_name_width(t);

	fprintf(out, "%s: %u package%s, %u NUMA node%s, %u cores, %u PUs, %u GPU%s, %u NIC%s\n\n",
		t->source, t->packages, t->packages == 1 ? "" : "s",
		t->n_numa, t->n_numa == 1 ? "" : "s", t->cores, t->pus,
		t->n_gpus, t->n_gpus == 1 ? "" : "s", t->n_nics, t->n_nics == 1 ? "" : "s");
	if (print_nodes(out, t, ks) < 0)
		return -ENOMEM;
	fputc('\n', out);
	print_distances(out, t);
	if (t->n_gpus) {
		fputc('\n', out);
		print_gpus(out, t, nic_w);
	}
	if (t->n_nics) {
		fputc('\n', out);
		print_nics(out, t, nic_w);
	}
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
