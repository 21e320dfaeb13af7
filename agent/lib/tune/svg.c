/* SPDX-License-Identifier: MIT */
/* svg.c — see svg.h.
 *
 * Divisions:
 *   1. text and colours
 *   2. the PCIe tree: which objects are drawn, their size, drawing them
 *   3. a NUMA node's band: its label, its CPUs, its PCIe tree
 *   4. packages, pairings, legend, the document
 */
#include "tune/svg.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "base/cpulist.h"
#include "base/textbuf.h"

#define MARGIN 16.0
#define PAD 8.0           /* inside a box */
#define HEAD 18.0         /* a box's label line */
#define GAP 10.0          /* between boxes side by side */
#define DEV_W 168.0
#define DEV_H 50.0
#define PU 10.0           /* a CPU's square */
#define PU_PITCH 12.0
#define PU_ROW 32         /* squares per row */
#define BAND_MIN_W 440.0

static const char *const rank_colour[] = {
	"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
	"#8c564b", "#e377c2", "#bcbd22", "#17becf", "#393b79",
};
#define N_COLOURS (sizeof(rank_colour) / sizeof(rank_colour[0]))

struct svg {
	FILE *f;
	const struct topo *t;
	const struct plan *pl;
	double *gpu_x, *gpu_y, *nic_x, *nic_y;   /* each device's bottom centre */
};

/* ---- 1. text and colours ------------------------------------------------ */

/* s as XML character data: at most max bytes (cut where a UTF-8 character
 * starts, "..." after it), each control character and each byte outside
 * well-formed UTF-8 (a foreign XML file's) as '?' (textbuf_unctrl), so the
 * document stays well-formed. */
static void xml_text(FILE *f, const char *s, size_t max)
{
	char buf[512];
	size_t n = s ? strlen(s) : 0;

	if (max > sizeof(buf) - 1)
		max = sizeof(buf) - 1;
	if (n > max)
		for (n = max; n > 0 && ((unsigned char)s[n] & 0xc0) == 0x80; n--)
			;
	if (n)
		memcpy(buf, s, n);
	buf[n] = '\0';
	textbuf_unctrl(buf);
	for (const char *p = buf; *p; p++) {
		if (*p == '<')
			fputs("&lt;", f);
		else if (*p == '>')
			fputs("&gt;", f);
		else if (*p == '&')
			fputs("&amp;", f);
		else
			fputc(*p, f);
	}
	if (s && s[n])
		fputs("...", f);
}

static void label(FILE *f, double x, double y, const char *cls, const char *s, size_t max)
{
	fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" class=\"%s\">", x, y, cls);
	xml_text(f, s, max);
	fputs("</text>\n", f);
}

/* The rank that holds GPU g, or -1. */
static int rank_of_gpu(const struct plan *pl, unsigned g)
{
	for (unsigned r = 0; pl && r < pl->n_ranks; r++)
		if (pl->ranks[r].gpu == (int)g)
			return (int)r;
	return -1;
}

/* The first rank bound to CPU cpu, or -1. */
static int rank_of_cpu(const struct plan *pl, unsigned cpu)
{
	for (unsigned r = 0; pl && r < pl->n_ranks; r++)
		if (pl->ranks[r].cpus && hwloc_bitmap_isset(pl->ranks[r].cpus, cpu))
			return (int)r;
	return -1;
}

/* ---- 2. the PCIe tree ----------------------------------------------------- */

/* Index of o in devs[0..n), or -1. */
static int dev_index(const struct topo_dev *devs, unsigned n, hwloc_obj_t o)
{
	for (unsigned i = 0; i < n; i++)
		if (devs[i].obj == o)
			return (int)i;
	return -1;
}

static bool is_dev(const struct topo *t, hwloc_obj_t o)
{
	return dev_index(t->gpus, t->n_gpus, o) >= 0 || dev_index(t->nics, t->n_nics, o) >= 0;
}

/* o is a GPU or a NIC, or a bridge with one below it. */
static bool relevant(const struct topo *t, hwloc_obj_t o)
{
	if (is_dev(t, o))
		return true;
	if (o->type != HWLOC_OBJ_BRIDGE)
		return false;
	for (hwloc_obj_t c = o->io_first_child; c; c = c->next_sibling)
		if (relevant(t, c))
			return true;
	return false;
}

static unsigned relevant_children(const struct topo *t, hwloc_obj_t o, hwloc_obj_t *ret_only)
{
	unsigned n = 0;

	for (hwloc_obj_t c = o->io_first_child; c; c = c->next_sibling)
		if (relevant(t, c)) {
			*ret_only = c;
			n++;
		}
	return n;
}

static bool is_host_bridge(hwloc_obj_t o)
{
	return o->type == HWLOC_OBJ_BRIDGE && o->attr->bridge.upstream_type == HWLOC_OBJ_BRIDGE_HOST;
}

/* What is drawn for o: a PCI bridge with one way down is passed through. */
static hwloc_obj_t collapse(const struct topo *t, hwloc_obj_t o)
{
	hwloc_obj_t only;

	while (o->type == HWLOC_OBJ_BRIDGE && !is_host_bridge(o) &&
	       relevant_children(t, o, &only) == 1)
		o = only;
	return o;
}

static void measure(const struct topo *t, hwloc_obj_t o, double *ret_w, double *ret_h)
{
	double w = 0, h = 0;

	if (is_dev(t, o)) {
		*ret_w = DEV_W;
		*ret_h = DEV_H;
		return;
	}
	for (hwloc_obj_t c = o->io_first_child; c; c = c->next_sibling) {
		double cw, ch;

		if (!relevant(t, c))
			continue;
		measure(t, collapse(t, c), &cw, &ch);
		w += (w > 0 ? GAP : 0) + cw;
		h = ch > h ? ch : h;
	}
	*ret_w = w + 2 * PAD;
	*ret_h = h + HEAD + PAD;
}

static void draw_dev(struct svg *s, hwloc_obj_t o, double x, double y)
{
	int g = dev_index(s->t->gpus, s->t->n_gpus, o), n = dev_index(s->t->nics, s->t->n_nics, o);
	const struct topo_dev *d = g >= 0 ? &s->t->gpus[g] : &s->t->nics[n];
	int r = g >= 0 ? rank_of_gpu(s->pl, (unsigned)g) : -1;
	char head[256];

	if (g >= 0 && r >= 0)
		snprintf(head, sizeof(head), "GPU %d · rank %u", g, s->pl->ranks[r].local_rank);
	else if (g >= 0)
		snprintf(head, sizeof(head), "GPU %d", g);
	else
		snprintf(head, sizeof(head), "%s%s%s", d->name, d->rdma[0] && strcmp(d->rdma, d->name) ? " · " : "",
			 d->rdma[0] && strcmp(d->rdma, d->name) ? d->rdma : "");
	fprintf(s->f, "<g class=\"%s\" id=\"%s%d\">\n", g >= 0 ? "gpu" : "nic", g >= 0 ? "gpu" : "nic", g >= 0 ? g : n);
	fprintf(s->f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" rx=\"4\" class=\"%s\"",
		x, y, DEV_W, DEV_H, g >= 0 ? "gpu" : "nic");
	if (r >= 0)
		fprintf(s->f, " style=\"stroke:%s;stroke-width:3\"", rank_colour[r % N_COLOURS]);
	fputs("/>\n", s->f);
	label(s->f, x + 6, y + 15, "dev-head", head, 40);
	label(s->f, x + 6, y + 29, "dev-bus", d->pci_bus_id, 16);
	label(s->f, x + 6, y + 43, "dev-model", g >= 0 ? d->name : "NIC", 26);
	fputs("</g>\n", s->f);
	if (g >= 0) {
		s->gpu_x[g] = x + DEV_W / 2;
		s->gpu_y[g] = y + DEV_H;
	} else {
		s->nic_x[n] = x + DEV_W / 2;
		s->nic_y[n] = y + DEV_H;
	}
}

/* The class of a bridge drawn: "hostbridge"; "switch" for a bridge with
 * bridges (a switch's downstream ports) below it; else "bridge" (a root
 * port with a multi-function device, say). */
static const char *bridge_class(const struct topo *t, hwloc_obj_t o)
{
	if (is_host_bridge(o))
		return "hostbridge";
	for (hwloc_obj_t c = o->io_first_child; c; c = c->next_sibling)
		if (c->type == HWLOC_OBJ_BRIDGE && relevant(t, c))
			return "switch";
	return "bridge";
}

static void bridge_label(const char *cls, hwloc_obj_t o, char *buf, size_t size)
{
	const struct hwloc_bridge_attr_s *b = &o->attr->bridge;

	if (!strcmp(cls, "hostbridge"))
		snprintf(buf, size, "host bridge %04x:[%02x-%02x]", (unsigned)b->downstream.pci.domain,
			 b->downstream.pci.secondary_bus, b->downstream.pci.subordinate_bus);
	else
		snprintf(buf, size, "PCIe %s %04x:%02x:%02x.%x", cls, (unsigned)b->upstream.pci.domain,
			 b->upstream.pci.bus, b->upstream.pci.dev, b->upstream.pci.func);
}

static void draw_io(struct svg *s, hwloc_obj_t o, double x, double y)
{
	double w, h, cx = x + PAD;
	const char *cls;
	char name[96];

	if (is_dev(s->t, o)) {
		draw_dev(s, o, x, y);
		return;
	}
	measure(s->t, o, &w, &h);
	cls = bridge_class(s->t, o);
	bridge_label(cls, o, name, sizeof(name));
	fprintf(s->f, "<g class=\"%s\">\n<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" rx=\"4\" class=\"%s\"/>\n",
		cls, x, y, w, h, cls);
	label(s->f, x + 6, y + 13, "box-head", name, 60);
	for (hwloc_obj_t c = o->io_first_child; c; c = c->next_sibling) {
		double cw, ch;

		if (!relevant(s->t, c))
			continue;
		measure(s->t, collapse(s->t, c), &cw, &ch);
		draw_io(s, collapse(s->t, c), cx, y + HEAD);
		cx += cw + GAP;
	}
	fputs("</g>\n", s->f);
}

/* ---- 3. a NUMA node's band ----------------------------------------------- */

/* The band of host bridge hb: the index in numa[] of the one node its
 * parent is on, or n_numa ("no single node"). */
static unsigned band_of(const struct topo *t, hwloc_obj_t hb)
{
	hwloc_obj_t p = hb->parent;

	if (p && p->nodeset && hwloc_bitmap_weight(p->nodeset) == 1)
		for (unsigned i = 0; i < t->n_numa; i++)
			if (t->numa[i].os_index == (unsigned)hwloc_bitmap_first(p->nodeset))
				return i;
	return t->n_numa;
}

/* Call each host bridge of band b with a GPU or NIC below it: measure
 * (s->f NULL) or draw it at x, y; the row's width and height. */
static void io_row(struct svg *s, unsigned b, double x, double y, double *ret_w, double *ret_h)
{
	hwloc_obj_t o = NULL;
	double w = 0, h = 0;

	while ((o = hwloc_get_next_bridge(s->t->hw, o))) {
		double bw, bh;

		if (!is_host_bridge(o) || band_of(s->t, o) != b || !relevant(s->t, o))
			continue;
		measure(s->t, o, &bw, &bh);
		if (s->f)
			draw_io(s, o, x + w + (w > 0 ? GAP : 0), y);
		w += (w > 0 ? GAP : 0) + bw;
		h = bh > h ? bh : h;
	}
	*ret_w = w;
	*ret_h = h;
}

static unsigned pu_rows(const struct topo *t, unsigned b)
{
	unsigned n = b < t->n_numa ? (unsigned)hwloc_bitmap_weight(t->numa[b].cpus) : 0;

	return (n + PU_ROW - 1) / PU_ROW;
}

static double band_height(struct svg *s, unsigned b)
{
	double w, h;
	FILE *f = s->f;

	s->f = NULL;
	io_row(s, b, 0, 0, &w, &h);
	s->f = f;
	return HEAD + 6 + pu_rows(s->t, b) * PU_PITCH + (h > 0 ? GAP + h : 0) + PAD;
}

static void draw_pus(struct svg *s, unsigned b, double x, double y)
{
	unsigned k = 0;
	int cpu;

	hwloc_bitmap_foreach_begin(cpu, s->t->numa[b].cpus) {
		int r = rank_of_cpu(s->pl, (unsigned)cpu);
		bool hk = s->pl && s->pl->housekeeping && hwloc_bitmap_isset(s->pl->housekeeping, (unsigned)cpu);

		fprintf(s->f, "<rect class=\"pu%s\" x=\"%.1f\" y=\"%.1f\" width=\"%.0f\" height=\"%.0f\"",
			hk ? " hk" : "", x + (k % PU_ROW) * PU_PITCH, y + (k / PU_ROW) * PU_PITCH, PU, PU);
		if (r >= 0)
			fprintf(s->f, " style=\"fill:%s\"", rank_colour[r % N_COLOURS]);
		fprintf(s->f, "><title>CPU %d%s</title></rect>\n", cpu, hk ? " (housekeeping)" : "");
		k++;
	} hwloc_bitmap_foreach_end();
}

static void draw_band(struct svg *s, unsigned b, double x, double y, double w)
{
	double h = band_height(s, b), iw, ih;
	char text[512];

	if (b < s->t->n_numa) {
		char *cpus = cpulist_format_alloc(s->t->numa[b].cpus);

		snprintf(text, sizeof(text), "NUMA node %u · %.1f GiB · CPUs %s", s->t->numa[b].os_index,
			 (double)s->t->numa[b].memory_bytes / (1ull << 30), cpus ? cpus : "?");
		free(cpus);
	} else {
		snprintf(text, sizeof(text), "devices on no single NUMA node");
	}
	fprintf(s->f, "<g class=\"numa\">\n<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" rx=\"6\" class=\"numa\"/>\n",
		x, y, w, h);
	label(s->f, x + PAD, y + 14, "box-head", text, 200);
	if (b < s->t->n_numa)
		draw_pus(s, b, x + PAD, y + HEAD + 4);
	io_row(s, b, x + PAD, y + HEAD + 6 + pu_rows(s->t, b) * PU_PITCH + GAP, &iw, &ih);
	fputs("</g>\n", s->f);
}

/* ---- 4. packages, pairings, legend, the document ------------------------ */

static double band_width(struct svg *s, unsigned b)
{
	double w, h, grid = (pu_rows(s->t, b) > 1 ? PU_ROW : 1 + (b < s->t->n_numa ?
			     hwloc_bitmap_weight(s->t->numa[b].cpus) : 0)) * PU_PITCH;
	FILE *f = s->f;

	s->f = NULL;
	io_row(s, b, 0, 0, &w, &h);
	s->f = f;
	w = w > grid ? w : grid;
	return (w > BAND_MIN_W ? w : BAND_MIN_W) + 2 * PAD;
}

/* The package of numa[b] (its nearest Package ancestor), or NULL. */
static hwloc_obj_t package_of(const struct svg *s, unsigned b)
{
	hwloc_obj_t o = b < s->t->n_numa
		? hwloc_get_numanode_obj_by_os_index(s->t->hw, s->t->numa[b].os_index) : NULL;

	return o ? hwloc_get_ancestor_obj_by_type(s->t->hw, HWLOC_OBJ_PACKAGE, o) : NULL;
}

static bool band_used(struct svg *s, unsigned b)
{
	double w, h;
	FILE *f = s->f;

	if (b < s->t->n_numa)
		return true;
	s->f = NULL;
	io_row(s, b, 0, 0, &w, &h);
	s->f = f;
	return w > 0;
}

/* Packages as boxes around runs of their bands; returns the bottom. */
static double draw_packages(struct svg *s, double w)
{
	double y = MARGIN;

	for (unsigned b = 0; b <= s->t->n_numa; ) {
		hwloc_obj_t pkg = package_of(s, b);
		unsigned e = b;
		double h = HEAD;
		char name[64];

		while (e <= s->t->n_numa && package_of(s, e) == pkg) {
			h += band_used(s, e) ? band_height(s, e) + PAD : 0;
			e++;
		}
		if (h == HEAD) {        /* no band drawn: no box */
			b = e;
			continue;
		}
		if (pkg)
			snprintf(name, sizeof(name), "Package %u", pkg->os_index);
		else
			snprintf(name, sizeof(name), "Machine");
		fprintf(s->f, "<g class=\"package\">\n<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" rx=\"8\" class=\"package\"/>\n",
			MARGIN, y, w + 2 * PAD, h);
		label(s->f, MARGIN + PAD, y + 14, "pkg-head", name, 60);
		for (double by = y + HEAD; b < e; b++) {
			if (!band_used(s, b))
				continue;
			draw_band(s, b, MARGIN + PAD, by, w);
			by += band_height(s, b) + PAD;
		}
		fputs("</g>\n", s->f);
		y += h + GAP;
	}
	return y;
}

static void pair(struct svg *s, unsigned g, int n, const char *colour)
{
	double x1 = s->gpu_x[g], y1 = s->gpu_y[g], x2, y2, dip;

	if (n < 0)
		return;
	x2 = s->nic_x[n];
	y2 = s->nic_y[n];
	dip = 18 + (x1 > x2 ? x1 - x2 : x2 - x1) / 12;
	fprintf(s->f, "<path class=\"pair\" d=\"M%.1f %.1f C%.1f %.1f %.1f %.1f %.1f %.1f\" style=\"stroke:%s\"><title>GPU %u - ",
		x1, y1, x1, (y1 > y2 ? y1 : y2) + dip, x2, (y1 > y2 ? y1 : y2) + dip, x2, y2, colour, g);
	xml_text(s->f, s->t->nics[n].name, 64);
	fprintf(s->f, " (%s)</title></path>\n", topo_link_name((int)topo_dev_link(&s->t->gpus[g], &s->t->nics[n])));
	fprintf(s->f, "<text class=\"link\" x=\"%.1f\" y=\"%.1f\">%s</text>\n", (x1 + x2) / 2,
		(y1 > y2 ? y1 : y2) + dip * 0.75 + 4,
		topo_link_name((int)topo_dev_link(&s->t->gpus[g], &s->t->nics[n])));
}

static int nic_by_name(const struct topo *t, const char *name)
{
	for (unsigned i = 0; i < t->n_nics; i++)
		if (!strcmp(t->nics[i].name, name))
			return (int)i;
	return -1;
}

/* Each rank's GPU to the rank's NIC; without a plan each GPU to its nearest. */
static void draw_pairs(struct svg *s)
{
	if (!s->pl) {
		for (unsigned g = 0; g < s->t->n_gpus; g++)
			pair(s, g, s->t->gpus[g].nearest_nic, "#555555");
		return;
	}
	for (unsigned r = 0; r < s->pl->n_ranks; r++) {
		const struct plan_rank *rk = &s->pl->ranks[r];

		if (rk->gpu >= 0 && rk->nic[0])
			pair(s, (unsigned)rk->gpu, nic_by_name(s->t, rk->nic), rank_colour[r % N_COLOURS]);
	}
}

static const char style[] =
	"<style>\n"
	"text{font-family:sans-serif;font-size:11px;fill:#222}\n"
	".box-head{font-weight:bold;fill:#444}.pkg-head{font-weight:bold;font-size:13px}\n"
	".dev-head{font-weight:bold}.dev-bus,.dev-model{fill:#555}.link{font-size:10px;font-weight:bold;text-anchor:middle}\n"
	"rect.package{fill:none;stroke:#333;stroke-width:1.5}rect.numa{fill:#fffbea;stroke:#c9a227}\n"
	"rect.hostbridge{fill:#f4f4f4;stroke:#888}rect.switch,rect.bridge{fill:#fff;stroke:#999;stroke-dasharray:4 2}\n"
	"rect.gpu{fill:#e6f4ea;stroke:#2e7d32}rect.nic{fill:#e3f0fb;stroke:#1565c0}\n"
	"rect.pu{fill:#cfd8dc}rect.pu.hk{fill:#fff;stroke:#555}\n"
	"path.pair{fill:none;stroke-width:2}\n"
	"</style>\n";

static double draw_legend(struct svg *s, double y)
{
	double x = MARGIN;

	for (unsigned r = 0; s->pl && r < s->pl->n_ranks; r++, x += 70) {
		char name[32];

		if (x > MARGIN + 400) {
			x = MARGIN;
			y += 16;
		}
		snprintf(name, sizeof(name), "rank %u", s->pl->ranks[r].local_rank);
		fprintf(s->f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"10\" height=\"10\" style=\"fill:%s\"/>\n",
			x, y + 3, rank_colour[r % N_COLOURS]);
		label(s->f, x + 14, y + 12, "legend", name, 20);
	}
	if (s->pl) {
		y += 18;
		label(s->f, MARGIN, y + 12, "legend", "squares: CPUs in their rank's colour (white: housekeeping)", 100);
		label(s->f, MARGIN, y + 26, "legend", "lines: each rank's GPU and its NIC, named as nvidia-smi topo -m", 100);
	} else {
		label(s->f, MARGIN, y + 12, "legend", "lines: each GPU and its nearest NIC (the one plan gives its rank),", 100);
		label(s->f, MARGIN, y + 26, "legend", "named as nvidia-smi topo -m: PIX, PXB, PHB, NODE or SYS", 100);
	}
	return y + 34;
}

/* Draw everything into a buffer (the height is known once drawn): *ret_body
 * (free it), *ret_len, *ret_h.  0 or -ENOMEM. */
static int draw_body(struct svg *s, double w, char **ret_body, size_t *ret_len, double *ret_h)
{
	FILE *m = open_memstream(ret_body, ret_len);

	if (!m)
		return -ENOMEM;
	s->f = m;
	*ret_h = draw_packages(s, w);
	draw_pairs(s);
	*ret_h = draw_legend(s, *ret_h);
	if (fclose(m) != 0 || !*ret_body) {
		free(*ret_body);
		return -ENOMEM;
	}
	return 0;
}

int svg_write_machine(FILE *out, const struct topo *t, const struct plan *pl)
{
	struct svg s = { .t = t, .pl = pl };
	unsigned nd = t->n_gpus + t->n_nics + 1;
	double *xy = calloc(4 * (size_t)nd, sizeof(*xy)), w = 0, h, cw;
	char *body = NULL;
	size_t len = 0;

	if (!xy)
		return -ENOMEM;
	s.gpu_x = xy;
	s.gpu_y = xy + nd;
	s.nic_x = xy + 2 * nd;
	s.nic_y = xy + 3 * nd;
	for (unsigned b = 0; b <= t->n_numa; b++)
		if (band_used(&s, b) && band_width(&s, b) > w)
			w = band_width(&s, b);
	if (draw_body(&s, w, &body, &len, &h) < 0) {
		free(xy);
		return -ENOMEM;
	}
	cw = w + 2 * PAD + 2 * MARGIN;
	fprintf(out, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		"<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\">\n<title>",
		cw, h + MARGIN, cw, h + MARGIN);
	xml_text(out, t->source, 400);
	fprintf(out, "</title>\n%s<rect width=\"100%%\" height=\"100%%\" style=\"fill:#fff\"/>\n", style);
	fwrite(body, 1, len, out);
	fputs("</svg>\n", out);
	free(body);
	free(xy);
	return ferror(out) ? -EIO : 0;
}
