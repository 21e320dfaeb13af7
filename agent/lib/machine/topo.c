/* SPDX-License-Identifier: MIT */
/* topo.c — see topo.h.
 *
 * Divisions:
 *   1. loading (host, XML, synthetic) and common hwloc settings
 *   2. classification of PCI functions (GPU, NIC)
 *   3. extraction of NUMA nodes and their distances, devices, nearest NIC
 *      per GPU and the PCIe relation between them
 */
#include "machine/topo.h"
#include "machine/topo_test.h"

#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/cpulist.h"
#include "base/userfile.h"

#define TOPO_XML_MAX (256u << 20)

static int topo_extract(struct topo *t, struct nt_err *err);

/* ---- 1. loading -------------------------------------------------------- */

static struct topo *topo_new(const char *kind, const char *what)
{
	struct topo *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	snprintf(t->source, sizeof(t->source), "%s%s%s", kind,
		 what ? " " : "", what ? what : "");
	if (hwloc_topology_init(&t->hw) < 0) {
		free(t);
		return NULL;
	}
	/* Keep every PCI device, bridge and OS device: devices are what we
	 * are after, and bridges give the PCIe-switch structure. */
	hwloc_topology_set_io_types_filter(t->hw, HWLOC_TYPE_FILTER_KEEP_ALL);
	return t;
}

/* Load and extract; frees t on failure. */
static struct topo *topo_finish(struct topo *t, const char *what,
				struct nt_err *err)
{
	if (hwloc_topology_load(t->hw) < 0) {
		err_set(err, -EINVAL, "%s: hwloc could not load the topology: %s",
			what, nt_strerror(errno));
		topo_free(t);
		return NULL;
	}
	if (topo_extract(t, err) < 0) {
		topo_free(t);
		return NULL;
	}
	return t;
}

struct topo *topo_load_host(const char *fsroot, struct nt_err *err)
{
	struct topo *t;

	/* Without a sysfs CPU tree hwloc quietly falls back to describing the
	 * machine it runs on, which would pass this host off as the capture. */
	if (fsroot && strcmp(fsroot, "/")) {
		char pattern[4096];
		glob_t g;
		int found;

		snprintf(pattern, sizeof(pattern), "%s/sys/devices/system/cpu/cpu[0-9]*/topology",
			 fsroot);
		found = glob(pattern, GLOB_NOSORT, NULL, &g) == 0;
		globfree(&g);
		if (!found) {
			err_set(err, -EINVAL, "%s: no sys/devices/system/cpu/cpu*/topology, so no topology to read there (make a full capture with scripts/capture-sysroot.sh, or give --topology FILE.xml)",
				fsroot);
			return NULL;
		}
	}
	t = topo_new("host", fsroot && strcmp(fsroot, "/") ? fsroot : NULL);
	if (!t) {
		err_set(err, -ENOMEM, "out of memory");
		return NULL;
	}
	/* hwloc reads /sys and /proc below HWLOC_FSROOT (hwloc 2 has no
	 * API for it).  Setting it also marks the topology as not this
	 * system, so hwloc never binds from it. */
	if (fsroot && strcmp(fsroot, "/"))
		setenv("HWLOC_FSROOT", fsroot, 1);
	t = topo_finish(t, fsroot ? fsroot : "host", err);
	if (fsroot && strcmp(fsroot, "/"))
		unsetenv("HWLOC_FSROOT");
	return t;
}

/* Say why an XML file that hwloc refused is wrong, as precisely as is cheap. */
static int topo_xml_diagnose(const char *path, const char *buf, size_t len,
			     struct nt_err *err)
{
	const char *p = buf;

	while (p < buf + len && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
		p++;
	if (p == buf + len)
		return err_set(err, -EINVAL, "%s: empty file, expected an hwloc XML topology", path);
	if (*p != '<' || memchr(buf, '\0', len))
		return err_set(err, -EINVAL, "%s: not XML (expected an hwloc XML topology)", path);
	if (!strstr(buf, "<topology"))
		return err_set(err, -EINVAL, "%s: XML without a <topology> element: not an hwloc topology export", path);
	if (!strstr(buf, "</topology>"))
		return err_set(err, -EINVAL, "%s: truncated hwloc XML (no closing </topology>)", path);
	return err_set(err, -EINVAL, "%s: malformed hwloc XML: hwloc refused to import it", path);
}

struct topo *topo_load_xml(const char *path, struct nt_err *err)
{
	struct topo *t;
	size_t len = 0;
	char *buf = NULL;

	char why[256];
	int r = userfile_read(path, TOPO_XML_MAX, "an hwloc XML file", NULL, &buf, &len, why, sizeof(why));

	if (r < 0) {
		err_set(err, r, "%s: %s", path, why);
		return NULL;
	}
	t = topo_new("xml", path);
	if (!t) {
		free(buf);
		err_set(err, -ENOMEM, "out of memory");
		return NULL;
	}
	/* hwloc wants the length including the terminating NUL. */
	if (len == 0 || hwloc_topology_set_xmlbuffer(t->hw, buf, (int)len + 1) < 0 ||
	    hwloc_topology_load(t->hw) < 0) {
		topo_xml_diagnose(path, buf, len, err);
		free(buf);
		topo_free(t);
		return NULL;
	}
	free(buf);
	if (topo_extract(t, err) < 0) {
		topo_free(t);
		return NULL;
	}
	return t;
}

struct topo *topo_load_synthetic(const char *desc, struct nt_err *err)
{
	struct topo *t = topo_new("synthetic", desc);

	if (!t) {
		err_set(err, -ENOMEM, "out of memory");
		return NULL;
	}
	if (hwloc_topology_set_synthetic(t->hw, desc) < 0) {
		err_set(err, -EINVAL, "invalid synthetic topology '%s' (hwloc syntax, e.g. \"pack:2 numa:1 core:8 pu:2\")",
			desc);
		topo_free(t);
		return NULL;
	}
	return topo_finish(t, desc, err);
}

static void topo_dev_release(struct topo_dev *d, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		hwloc_bitmap_free(d[i].cpus);
	free(d);
}

void topo_free(struct topo *t)
{
	if (!t)
		return;
	for (unsigned i = 0; i < t->n_numa; i++)
		hwloc_bitmap_free(t->numa[i].cpus);
	free(t->numa);
	free(t->numa_dist);
	topo_dev_release(t->gpus, t->n_gpus);
	topo_dev_release(t->nics, t->n_nics);
	if (t->hw)
		hwloc_topology_destroy(t->hw);
	free(t);
}

const struct topo_numa *topo_numa_by_os(const struct topo *t, unsigned os_index)
{
	for (unsigned i = 0; i < t->n_numa; i++)
		if (t->numa[i].os_index == os_index)
			return &t->numa[i];
	return NULL;
}

/* ---- 2. classification ------------------------------------------------- */

#define PCI_VENDOR_NVIDIA 0x10de
#define PCI_VENDOR_AMD    0x1002
#define PCI_CLASS_DISPLAY_BASE 0x03
#define PCI_CLASS_PROCESSING_ACCEL 0x0380 /* AMD Instinct reports this */
#define PCI_CLASS_NETWORK_BASE 0x02

bool topo_pci_is_gpu(unsigned vendor_id, unsigned class_id, bool compute_osdev)
{
	if (compute_osdev)
		return true;
	if (vendor_id == PCI_VENDOR_NVIDIA && (class_id >> 8) == PCI_CLASS_DISPLAY_BASE)
		return true;
	return vendor_id == PCI_VENDOR_AMD && class_id == PCI_CLASS_PROCESSING_ACCEL;
}

static bool name_has_prefix_digit(const char *name, const char *prefix)
{
	size_t n = strlen(prefix);

	return name && !strncmp(name, prefix, n) && name[n] >= '0' && name[n] <= '9';
}

/* CUDA, NVML or RSMI OS device: by subtype when hwloc set one, else by the
 * name its backends give ("cuda0", "nvml3", "rsmi1"). */
static const char *osdev_compute_backend(hwloc_obj_t os)
{
	static const char *const backends[][2] = {
		{ "CUDA", "cuda" }, { "NVML", "nvml" }, { "RSMI", "rsmi" },
	};

	for (size_t i = 0; i < sizeof(backends) / sizeof(backends[0]); i++) {
		if (os->subtype && !strcmp(os->subtype, backends[i][0]))
			return backends[i][0];
		if (name_has_prefix_digit(os->name, backends[i][1]))
			return backends[i][0];
	}
	return NULL;
}

/* ---- 3. extraction ----------------------------------------------------- */

static int numa_cmp(const void *a, const void *b)
{
	const struct topo_numa *x = a, *y = b;

	return (x->os_index > y->os_index) - (x->os_index < y->os_index);
}

static int dev_cmp(const void *a, const void *b)
{
	const struct topo_dev *x = a, *y = b;
	const struct hwloc_pcidev_attr_s *p = &x->obj->attr->pcidev;
	const struct hwloc_pcidev_attr_s *q = &y->obj->attr->pcidev;

	if (p->domain != q->domain)
		return p->domain < q->domain ? -1 : 1;
	if (p->bus != q->bus)
		return p->bus < q->bus ? -1 : 1;
	if (p->dev != q->dev)
		return p->dev < q->dev ? -1 : 1;
	if (p->func != q->func)
		return p->func < q->func ? -1 : 1;
	/* Equal ids happen in hand-edited exports; keep the tree order. */
	return (x->obj->gp_index > y->obj->gp_index) - (x->obj->gp_index < y->obj->gp_index);
}

static int topo_dev_fill(struct topo *t, struct topo_dev *d, hwloc_obj_t pci)
{
	const struct hwloc_pcidev_attr_s *a = &pci->attr->pcidev;
	hwloc_obj_t anc = hwloc_get_non_io_ancestor_obj(t->hw, pci);

	memset(d, 0, sizeof(*d));
	d->obj = pci;
	d->vendor_id = a->vendor_id;
	d->device_id = a->device_id;
	d->class_id = a->class_id;
	d->nearest_nic = -1;
	snprintf(d->pci_bus_id, sizeof(d->pci_bus_id), "%04x:%02x:%02x.%01x",
		 (unsigned)a->domain, a->bus, a->dev, a->func);
	d->cpus = hwloc_bitmap_dup(anc && anc->cpuset ? anc->cpuset
				   : hwloc_topology_get_topology_cpuset(t->hw));
	if (!d->cpus)
		return -ENOMEM;
	d->numa_node = -1;
	if (anc && anc->nodeset && hwloc_bitmap_weight(anc->nodeset) == 1)
		d->numa_node = hwloc_bitmap_first(anc->nodeset);
	return 0;
}

static void gpu_describe(struct topo_dev *d)
{
	const char *model = NULL, *backend = NULL, *pcimodel;

	for (hwloc_obj_t os = d->obj->io_first_child; os; os = os->next_sibling) {
		const char *b;

		if (os->type != HWLOC_OBJ_OS_DEVICE || !(b = osdev_compute_backend(os)))
			continue;
		if (!backend)
			backend = b;
		if (!model)
			model = hwloc_obj_get_info_by_name(os, "GPUModel");
	}
	if (d->vendor_id == PCI_VENDOR_NVIDIA)
		snprintf(d->vendor, sizeof(d->vendor), "nvidia");
	else if (d->vendor_id == PCI_VENDOR_AMD)
		snprintf(d->vendor, sizeof(d->vendor), "amd");
	else if (backend && strcmp(backend, "RSMI"))
		snprintf(d->vendor, sizeof(d->vendor), "nvidia");
	else if (backend)
		snprintf(d->vendor, sizeof(d->vendor), "amd");
	else
		snprintf(d->vendor, sizeof(d->vendor), "unknown");

	pcimodel = hwloc_obj_get_info_by_name(d->obj, "PCIDevice");
	if (model)
		snprintf(d->name, sizeof(d->name), "%s", model);
	else if (pcimodel)
		snprintf(d->name, sizeof(d->name), "%s", pcimodel);
	else
		snprintf(d->name, sizeof(d->name), "[%04x:%04x]", d->vendor_id, d->device_id);
}

static void nic_describe(struct topo_dev *d)
{
	const char *net = NULL, *ofed = NULL, *model;

	for (hwloc_obj_t os = d->obj->io_first_child; os; os = os->next_sibling) {
		if (os->type != HWLOC_OBJ_OS_DEVICE || !os->name)
			continue;
		if (os->attr->osdev.type == HWLOC_OBJ_OSDEV_NETWORK && !net)
			net = os->name;
		else if (os->attr->osdev.type == HWLOC_OBJ_OSDEV_OPENFABRICS && !ofed)
			ofed = os->name;
	}
	if (ofed)
		snprintf(d->rdma, sizeof(d->rdma), "%s", ofed);
	model = hwloc_obj_get_info_by_name(d->obj, "PCIDevice");
	if (net)
		snprintf(d->name, sizeof(d->name), "%s", net);
	else if (ofed)
		snprintf(d->name, sizeof(d->name), "%s", ofed);
	else if (model)
		snprintf(d->name, sizeof(d->name), "%s", model);
	else
		snprintf(d->name, sizeof(d->name), "pci-%s", d->pci_bus_id);
}

static void pci_osdev_kinds(hwloc_obj_t pci, bool *ret_compute, bool *ret_net)
{
	*ret_compute = *ret_net = false;
	for (hwloc_obj_t os = pci->io_first_child; os; os = os->next_sibling) {
		if (os->type != HWLOC_OBJ_OS_DEVICE)
			continue;
		if (osdev_compute_backend(os))
			*ret_compute = true;
		if (os->attr->osdev.type == HWLOC_OBJ_OSDEV_NETWORK ||
		    os->attr->osdev.type == HWLOC_OBJ_OSDEV_OPENFABRICS)
			*ret_net = true;
	}
}

/* hwloc_get_common_ancestor_obj() compares depths, which are negative for
 * I/O objects; walk parent pointers instead. */
static hwloc_obj_t common_ancestor(hwloc_obj_t a, hwloc_obj_t b)
{
	for (hwloc_obj_t x = a; x; x = x->parent)
		for (hwloc_obj_t y = b; y; y = y->parent)
			if (x == y)
				return x;
	return NULL;
}

static unsigned obj_height(hwloc_obj_t o)
{
	unsigned h = 0;

	for (; o; o = o->parent)
		h++;
	return h;
}

/* Bridges strictly between o and its ancestor top. */
static unsigned bridges_below(hwloc_obj_t o, hwloc_obj_t top)
{
	unsigned n = 0;

	for (hwloc_obj_t x = o->parent; x && x != top; x = x->parent)
		n += x->type == HWLOC_OBJ_BRIDGE;
	return n;
}

enum topo_link topo_dev_link(const struct topo_dev *a, const struct topo_dev *b)
{
	hwloc_obj_t c = common_ancestor(a->obj, b->obj), na, nb;

	if (c && c->type == HWLOC_OBJ_BRIDGE) {
		if (c->attr->bridge.upstream_type == HWLOC_OBJ_BRIDGE_HOST)
			return TOPO_LINK_PHB;
		if (bridges_below(a->obj, c) <= 1 && bridges_below(b->obj, c) <= 1)
			return TOPO_LINK_PIX;
		return TOPO_LINK_PXB;
	}
	for (na = a->obj; na && !na->nodeset; na = na->parent)
		;
	for (nb = b->obj; nb && !nb->nodeset; nb = nb->parent)
		;
	if (na && nb && hwloc_bitmap_isequal(na->nodeset, nb->nodeset))
		return TOPO_LINK_NODE;
	return TOPO_LINK_SYS;
}

const char *topo_link_name(int link)
{
	static const char *const names[] = {
		[TOPO_LINK_PIX] = "PIX", [TOPO_LINK_PXB] = "PXB", [TOPO_LINK_PHB] = "PHB",
		[TOPO_LINK_NODE] = "NODE", [TOPO_LINK_SYS] = "SYS",
	};

	if (link < 0 || link >= (int)(sizeof(names) / sizeof(names[0])))
		return "-";
	return names[link];
}

/* Nearest NIC: the deepest common ancestor in the tree (same PCIe switch
 * beats same package beats the machine); then an RDMA-capable NIC; then
 * the lowest PCI bus id.  Then the PCIe relation to it. */
static void topo_link_nics(struct topo *t)
{
	for (unsigned g = 0; g < t->n_gpus; g++) {
		unsigned best_h = 0;
		bool best_rdma = false;

		t->gpus[g].nic_link = -1;
		for (unsigned n = 0; n < t->n_nics; n++) {
			hwloc_obj_t c = common_ancestor(t->gpus[g].obj, t->nics[n].obj);
			unsigned h = obj_height(c);
			bool rdma = t->nics[n].rdma[0] != '\0';

			if (t->gpus[g].nearest_nic < 0 || h > best_h ||
			    (h == best_h && rdma && !best_rdma)) {
				t->gpus[g].nearest_nic = (int)n;
				best_h = h;
				best_rdma = rdma;
			}
		}
		if (t->gpus[g].nearest_nic >= 0)
			t->gpus[g].nic_link = (int)topo_dev_link(&t->gpus[g],
								 &t->nics[t->gpus[g].nearest_nic]);
	}
}

/* The index in numa[] of the node with this OS index, or -1. */
static int numa_index(const struct topo *t, unsigned os_index)
{
	const struct topo_numa *n = topo_numa_by_os(t, os_index);

	return n ? (int)(n - t->numa) : -1;
}

/* hwloc's NUMA latency matrix (the kernel's node distances) in numa[]
 * order; left NULL when hwloc has none or it does not cover every node. */
static int topo_extract_distances(struct topo *t)
{
	struct hwloc_distances_s *d = NULL;
	unsigned nr = 1, n = t->n_numa;
	int r = 0;

	if (n == 0 || hwloc_distances_get_by_name(t->hw, "NUMALatency", &nr, &d, 0) < 0 ||
	    nr == 0)
		return 0;
	if (d->nbobjs != n)
		goto out_release;
	t->numa_dist = calloc((size_t)n * n, sizeof(*t->numa_dist));
	if (!t->numa_dist) {
		r = -ENOMEM;
		goto out_release;
	}
	for (unsigned i = 0; i < n; i++) {
		int x = numa_index(t, d->objs[i]->os_index);

		for (unsigned j = 0; j < n && x >= 0; j++) {
			int y = numa_index(t, d->objs[j]->os_index);

			if (y < 0) {
				x = -1;
				break;
			}
			t->numa_dist[(size_t)x * n + (size_t)y] = d->values[(size_t)i * n + j];
		}
		if (x < 0) {
			free(t->numa_dist);
			t->numa_dist = NULL;
			break;
		}
	}
out_release:
	hwloc_distances_release(t->hw, d);
	return r;
}

static int topo_extract_numa(struct topo *t)
{
	int n = hwloc_get_nbobjs_by_type(t->hw, HWLOC_OBJ_NUMANODE);

	if (n <= 0)
		return 0;
	t->numa = calloc((size_t)n, sizeof(*t->numa));
	if (!t->numa)
		return -ENOMEM;
	for (int i = 0; i < n; i++) {
		hwloc_obj_t o = hwloc_get_obj_by_type(t->hw, HWLOC_OBJ_NUMANODE, (unsigned)i);

		t->numa[i].os_index = o->os_index;
		t->numa[i].memory_bytes = o->attr->numanode.local_memory;
		t->numa[i].cpus = hwloc_bitmap_dup(o->cpuset);
		if (!t->numa[i].cpus)
			return -ENOMEM;
		t->n_numa++;
	}
	qsort(t->numa, t->n_numa, sizeof(*t->numa), numa_cmp);
	return topo_extract_distances(t);
}

static int topo_extract(struct topo *t, struct nt_err *err)
{
	unsigned n_pci = 0;
	hwloc_obj_t pci = NULL;
	int e;

	t->packages = (unsigned)hwloc_get_nbobjs_by_type(t->hw, HWLOC_OBJ_PACKAGE);
	t->cores = (unsigned)hwloc_get_nbobjs_by_type(t->hw, HWLOC_OBJ_CORE);
	t->pus = (unsigned)hwloc_get_nbobjs_by_type(t->hw, HWLOC_OBJ_PU);
	if (t->pus == 0)
		return err_set(err, -EINVAL, "%s: topology has no processing units", t->source);
	if (t->cores == 0) /* some exports omit cores: each PU is its own core */
		t->cores = t->pus;
	e = topo_extract_numa(t);
	if (e < 0)
		return err_set(err, e, "out of memory");

	while ((pci = hwloc_get_next_pcidev(t->hw, pci)))
		n_pci++;
	t->gpus = calloc(n_pci + 1, sizeof(*t->gpus));
	t->nics = calloc(n_pci + 1, sizeof(*t->nics));
	if (!t->gpus || !t->nics)
		return err_set(err, -ENOMEM, "out of memory");

	while ((pci = hwloc_get_next_pcidev(t->hw, pci))) {
		const struct hwloc_pcidev_attr_s *a = &pci->attr->pcidev;
		bool compute, net;

		pci_osdev_kinds(pci, &compute, &net);
		if (topo_pci_is_gpu(a->vendor_id, a->class_id, compute)) {
			struct topo_dev *d = &t->gpus[t->n_gpus];

			if (topo_dev_fill(t, d, pci) < 0)
				return err_set(err, -ENOMEM, "out of memory");
			t->n_gpus++;
			gpu_describe(d);
		} else if (net || (a->class_id >> 8) == PCI_CLASS_NETWORK_BASE) {
			struct topo_dev *d = &t->nics[t->n_nics];

			if (topo_dev_fill(t, d, pci) < 0)
				return err_set(err, -ENOMEM, "out of memory");
			t->n_nics++;
			nic_describe(d);
		}
	}
	qsort(t->gpus, t->n_gpus, sizeof(*t->gpus), dev_cmp);
	qsort(t->nics, t->n_nics, sizeof(*t->nics), dev_cmp);
	topo_link_nics(t);
	return 0;
}
