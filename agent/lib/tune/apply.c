/* SPDX-License-Identifier: MIT */
/* apply.c — see apply.h.
 *
 * Divisions: values and the report; restoring from a journal (shared by
 * rollback and revert); apply_plan and the steps it shares with converge;
 * apply_revert; apply_converge (the daemon).
 */
#include "tune/apply.h"

#include <errno.h>
#include <sys/stat.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/cpulist.h"
#include "tune/jobcg.h"
#include "tune/journal.h"

/* ---- values and the report --------------------------------------------- */

void apply_normalize(const char *raw, char *out, size_t size)
{
	const char *open = strchr(raw, '['), *close = open ? strchr(open, ']') : NULL;
	const char *b = raw, *e;
	hwloc_bitmap_t set;
	size_t n;

	if (open && close) {
		b = open + 1;
		e = close;
	} else {
		while (*b == ' ' || *b == '\t')
			b++;
		e = b + strcspn(b, "\n");
		while (e > b && (e[-1] == ' ' || e[-1] == '\t'))
			e--;
	}
	n = (size_t)(e - b) < size - 1 ? (size_t)(e - b) : size - 1;
	memcpy(out, b, n);
	out[n] = '\0';
	set = hwloc_bitmap_alloc();
	if (set && n && strspn(out, "0123456789,-") == n && cpulist_parse(out, set) == 0)
		cpulist_format(set, out, size);
	hwloc_bitmap_free(set);
}

static int report_add(struct apply_changes *rep, const char *path, const char *from, const char *to)
{
	struct apply_change *tmp = realloc(rep->changes, (rep->n + 1) * sizeof(*tmp));

	if (!tmp)
		return -ENOMEM;
	rep->changes = tmp;
	snprintf(tmp[rep->n].path, sizeof(tmp[rep->n].path), "%s", path);
	snprintf(tmp[rep->n].from, sizeof(tmp[rep->n].from), "%s", from);
	snprintf(tmp[rep->n].to, sizeof(tmp[rep->n].to), "%s", to);
	rep->n++;
	return 0;
}

#define report_note(rep, ...) log_note_add((rep)->notes, &(rep)->n_notes, APPLY_MAX_NOTES, __VA_ARGS__)

void apply_changes_release(struct apply_changes *rep)
{
	if (!rep)
		return;
	free(rep->changes);
	for (unsigned i = 0; i < rep->n_notes; i++)
		free(rep->notes[i]);
	memset(rep, 0, sizeof(*rep));
}

#define RAW_MAX (PLAN_VALUE_MAX * 4)

/* what is journaled must fit what the journal reader takes back */
_Static_assert(RAW_MAX <= JOURNAL_RAW_MAX && PLAN_VALUE_MAX <= JOURNAL_VALUE_MAX &&
	       sizeof(((struct plan_host *)0)->path) <= JOURNAL_PATH_MAX, "journal bounds");

/* strerror, with the answer of a path leading out of the root spelled out */
static const char *write_strerror(int r)
{
	return r == -EXDEV ? "the path leads out of the root (a symlink); not written" : nt_strerror(-r);
}

/* Effective value of path now; its exact bytes too when raw is not NULL
 * (RAW_MAX bytes). */
static int current_value(const struct fsroot *root, const char *path, char *out, size_t size,
			 char *raw)
{
	char buf[RAW_MAX];
	ssize_t n = fsroot_read_exact(root, path, raw ? raw : buf, RAW_MAX);

	if (n < 0)
		return (int)n;
	apply_normalize(raw ? raw : buf, out, size);
	return 0;
}

/* Write value to path and read it back: what the kernel holds must be what
 * was asked. */
static int set_file(const struct fsroot *root, const char *path, const char *value,
		    struct nt_err *err)
{
	char now[PLAN_VALUE_MAX], want[PLAN_VALUE_MAX], disp[512];
	int r;

	apply_normalize(value, want, sizeof(want));
	fsroot_display(root, path, disp, sizeof(disp));
	r = fsroot_write(root, path, value);
	if (r < 0)
		return err_set(err, r, "%s: writing '%s' failed: %s", disp, value, write_strerror(r));
	r = current_value(root, path, now, sizeof(now), NULL);
	if (r < 0)
		return err_set(err, r, "%s: reading back failed: %s", disp, nt_strerror(-r));
	if (strcmp(now, want))
		return err_set(err, -ERANGE, "%s: wrote '%s' but the kernel holds '%s' (refused or clamped)",
			       disp, value, now);
	return 0;
}

/* Put back one journaled file: the live kernel gets the effective value
 * (it would refuse "always [madvise] never"); a captured tree gets its
 * exact bytes back, so a round trip leaves it byte for byte as it was. */
static int restore_file(const struct fsroot *root, const struct journal_entry *e,
			struct nt_err *err)
{
	char back[RAW_MAX], disp[512];
	int r;

	if (fsroot_is_host(root))
		return set_file(root, e->a, e->b, err);
	fsroot_display(root, e->a, disp, sizeof(disp));
	r = fsroot_write_exact(root, e->a, e->raw);
	if (r < 0)
		return err_set(err, r, "%s: restoring failed: %s", disp, write_strerror(r));
	if (fsroot_read_exact(root, e->a, back, sizeof(back)) < 0 || strcmp(back, e->raw))
		return err_set(err, -EIO, "%s: restored content does not read back", disp);
	return 0;
}

/* ---- restoring from a journal ------------------------------------------ */

/* Can every entry of st be restored under root, as apply could have
 * written it?  journal_read took only paths below sys/, proc/sys/ and
 * proc/irq/ without "." or ".."; here each must also resolve beneath the
 * root (no symlink out of it), and a job cgroup, created on the live host
 * only, cannot be in a captured tree's journal.  The whole journal is
 * checked before anything is restored: 0, or -EINVAL naming its file and
 * line. */
static int check_entries(const struct fsroot *root, const struct journal_state *st, const char *jpath,
			 struct nt_err *err)
{
	for (unsigned i = 0; i < st->n; i++) {
		const struct journal_entry *e = &st->entries[i];
		int r;

		if (e->kind == JE_CGROUP) {
			if (!fsroot_is_host(root))
				return err_set(err, -EINVAL,
					       "%s:%u: a job cgroup (%s) in the journal of %s, not the live host, "
					       "where apply never creates one; nothing was restored",
					       jpath, e->line, e->a, fsroot_path(root));
			continue;
		}
		r = fsroot_check_beneath(root, e->a);
		if (r == -EXDEV || r == -ELOOP)
			return err_set(err, -EINVAL,
				       "%s:%u: %s leads out of %s (a symlink); nothing was restored",
				       jpath, e->line, e->a, fsroot_path(root));
		/* missing (noted when restoring) or unreadable (a restore
		 * failure): not a path steered out of the root */
	}
	return 0;
}

/* Does e's file hold its original bytes?  On the live kernel the
 * effective value is what counts (a sysfs file shows "always [madvise]
 * never" whatever was written); a captured tree must hold them exactly,
 * since a value written there is kept as written. */
static bool same_bytes(const struct fsroot *root, const struct journal_entry *e)
{
	char raw[RAW_MAX];

	return fsroot_is_host(root) || (fsroot_read_exact(root, e->a, raw, sizeof(raw)) >= 0 && !strcmp(raw, e->raw));
}

/* Restore every entry of st, last first.  Failures do not stop the others;
 * the first is returned. */
static int restore_entries(const struct fsroot *root, const struct journal_state *st,
			   struct apply_changes *rep, struct nt_err *err)
{
	int first = 0;

	for (unsigned i = st->n; i-- > 0;) {
		const struct journal_entry *e = &st->entries[i];
		struct nt_err e2 = { 0 };
		char now[PLAN_VALUE_MAX] = "";
		int r;

		if (e->kind == JE_CGROUP) {
			char label[128];

			if (!jobcg_exists(e->a))
				continue;
			if (!e->b) {   /* journalled by a nodetune before identities */
				report_note(rep, "cgroup %s: its journal entry records no identity (written by an older "
					    "nodetune), so it is not known to be ours: left in place", e->a);
				continue;
			}
			r = jobcg_delete(e->a, e->b, &e2);
			if (r == -ESTALE) {   /* someone else's now: never removed */
				report_note(rep, "%s", e2.msg);
				continue;
			}
			snprintf(label, sizeof(label), "cgroup:%s", e->a);
			if (r == 0)
				report_add(rep, label, "created", "removed");
		} else {
			r = current_value(root, e->a, now, sizeof(now), NULL);
			if (r == -ENOENT) {
				char disp[512];

				report_note(rep, "%s: gone, cannot restore '%s'",
					    fsroot_display(root, e->a, disp, sizeof(disp)), e->b);
				continue;
			}
			if (r == 0 && !strcmp(now, e->b) && same_bytes(root, e))
				continue; /* never changed, or already restored */
			if (r == 0)
				r = restore_file(root, e, &e2);
			else
				err_set(&e2, r, "%s: %s", e->a, nt_strerror(-r));
			if (r == 0)
				report_add(rep, e->a, now, e->b);
		}
		if (r < 0 && !first) {
			first = r;
			if (err)
				*err = e2;
		}
	}
	return first;
}

/* ---- apply ------------------------------------------------------------- */

struct item {
	const char *path;
	const char *from;   /* planned "from" (display only) */
	const char *to;
};

/* The files pl writes, host knobs then IRQs, in a new array (the caller
 * frees it; the strings stay pl's).  NULL when out of memory. */
static struct item *plan_items(const struct plan *pl, unsigned *ret_n)
{
	unsigned n = pl->n_host + pl->n_irqs;
	struct item *items = calloc(n + 1, sizeof(*items));

	if (!items)
		return NULL;
	for (unsigned i = 0; i < pl->n_host; i++)
		items[i] = (struct item){ pl->host[i].path, pl->host[i].from, pl->host[i].to };
	for (unsigned i = 0; i < pl->n_irqs; i++)
		items[pl->n_host + i] = (struct item){ pl->irqs[i].path, pl->irqs[i].from, pl->irqs[i].to };
	*ret_n = n;
	return items;
}

/* root's path with symlinks resolved (as the journal records it) into buf,
 * or as given when it cannot be resolved. */
static void root_realpath(const struct fsroot *root, char buf[PATH_MAX])
{
	if (!realpath(fsroot_path(root), buf))
		snprintf(buf, PATH_MAX, "%s", fsroot_path(root));
}

/* The value of a file before it is written (now, normalized, and its raw
 * bytes), to be journaled.  A path that leads out of the root is neither
 * read nor journaled (its write would be refused: fsroot_write).  0; or
 * -EXDEV/-ELOOP (err: -EXDEV) for such a path, or the read's -errno with
 * err. */
static int read_original(const struct fsroot *root, const char *path, char now[PLAN_VALUE_MAX], char raw[RAW_MAX],
			 struct nt_err *err)
{
	char disp[512];
	int r = fsroot_check_beneath(root, path);

	if (r == -EXDEV || r == -ELOOP) {
		err_set(err, -EXDEV, "%s: leads out of %s (a symlink); not written",
			fsroot_display(root, path, disp, sizeof(disp)), fsroot_path(root));
		return r;
	}
	r = current_value(root, path, now, PLAN_VALUE_MAX, raw);
	if (r < 0)
		err_set(err, r, "%s: %s", fsroot_display(root, path, disp, sizeof(disp)), nt_strerror(-r));
	return r;
}

/* Write item's value over now, and report it as now -> want.  0 or -errno
 * with err. */
static int write_item(const struct fsroot *root, const struct item *it, const char *now, const char *want,
		      struct apply_changes *rep, struct nt_err *err)
{
	int r = set_file(root, it->path, it->to, err);

	if (r == 0 && report_add(rep, it->path, now, want) < 0)
		r = err_set(err, -ENOMEM, "out of memory");
	return r;
}

/* Create pl's job cgroup (its identity into id) and report it.  0 or
 * -errno with err (-EEXIST: a group of the name is someone else's). */
static int job_cgroup_create(const struct plan *pl, char id[JOBCG_ID_MAX], struct apply_changes *rep,
			     struct nt_err *err)
{
	char cpus[PLAN_VALUE_MAX], mems[64], label[128];
	int r;

	cpulist_format(pl->cgroup_cpus, cpus, sizeof(cpus));
	cpulist_format(pl->cgroup_mems, mems, sizeof(mems));
	r = jobcg_create(pl->cgroup, cpus, mems, pl->cpu_weight, id, err);
	snprintf(label, sizeof(label), "cgroup:%s", pl->cgroup);
	if (r == 0)
		report_add(rep, label, "", "created");
	return r;
}

/* Can pl's job cgroup be made under root (the live host, with a cgroup
 * tree libcgroup can use)?  When not, a note says why: the same for the
 * dry run and the apply. */
static bool job_cgroup_possible(const struct plan *pl, const struct fsroot *root, struct apply_changes *rep)
{
	char why[256];

	if (!fsroot_is_host(root)) {
		report_note(rep, "job cgroup %s: not created, %s is not the live host", pl->cgroup,
			    fsroot_path(root));
		return false;
	}
	if (!jobcg_available(why, sizeof(why))) {
		report_note(rep, "job cgroup %s: not created, %s", pl->cgroup, why);
		return false;
	}
	return true;
}

/* --dry-run: report what would change, touching nothing. */
static void apply_dry_run(const struct plan *pl, const struct item *items, unsigned n_items,
			  const struct fsroot *root, struct apply_changes *rep)
{
	for (unsigned i = 0; i < n_items; i++) {
		char now[PLAN_VALUE_MAX], want[PLAN_VALUE_MAX];

		apply_normalize(items[i].to, want, sizeof(want));
		if (current_value(root, items[i].path, now, sizeof(now), NULL) == 0 && !strcmp(now, want))
			continue;
		report_add(rep, items[i].path, items[i].from, items[i].to);
	}
	/* the promise the real apply keeps: a cgroup only where it makes one */
	if (pl->cgroup[0] && job_cgroup_possible(pl, root, rep))
		report_add(rep, "cgroup", "", pl->cgroup);
}

/* Journal and write each item whose value differs.  0 or the first
 * failure (-errno with err); what was written stays journaled. */
static int apply_items(struct journal *j, const struct item *items, unsigned n_items, const struct fsroot *root,
		       struct apply_changes *rep, struct nt_err *err)
{
	int r = 0;

	for (unsigned i = 0; i < n_items && r == 0; i++) {
		char now[PLAN_VALUE_MAX], want[PLAN_VALUE_MAX], raw[RAW_MAX];

		apply_normalize(items[i].to, want, sizeof(want));
		r = read_original(root, items[i].path, now, raw, err);
		if (r < 0)
			break;
		if (!strcmp(now, want))
			continue;
		r = journal_record(j, JE_FILE, items[i].path, now, raw, err);
		if (r == 0)
			r = write_item(root, &items[i], now, want, rep, err);
	}
	return r;
}

/* Create pl's job cgroup, where one can be made (else a note says why
 * not), and journal it with its identity once it is this run's: a group
 * that exists already is someone else's and gets its own error (-EEXIST,
 * never journalled, so never removed by a revert); one this run made but
 * could not journal is removed at once.  0 or -errno with err. */
static int apply_job_cgroup(const struct plan *pl, struct journal *j, const struct fsroot *root,
			    struct apply_changes *rep, struct nt_err *err)
{
	char id[JOBCG_ID_MAX];
	int r;

	if (!job_cgroup_possible(pl, root, rep))
		return 0;
	r = job_cgroup_create(pl, id, rep, err);
	if (r < 0)
		return r;
	r = journal_record(j, JE_CGROUP, pl->cgroup, id, NULL, err);
	if (r < 0) {
		struct nt_err e2 = { 0 };

		if (jobcg_delete(pl->cgroup, id, &e2) < 0)
			report_note(rep, "%s", e2.msg);
	}
	return r;
}

/* All or nothing: undo what this apply did, from the journal it just
 * wrote, and report nothing changed (rolled_back) with a note when the
 * undo itself failed (the journal is then kept). */
static void apply_roll_back(struct journal *j, const struct fsroot *root, struct apply_changes *rep)
{
	struct journal_state st;
	struct apply_changes undo = { 0 };
	struct nt_err e2 = { 0 };

	/* the journal this process just wrote, from the plan: no
	 * check_entries (its writes go beneath the root anyway) */
	if (journal_read(j, &st, &e2) == 0) {
		if (restore_entries(root, &st, &undo, &e2) == 0)
			journal_remove(j, NULL);
		else
			report_note(rep, "rollback incomplete: %s; journal kept at %s (run `nodetune revert`)",
				    e2.msg, journal_path(j));
		journal_state_release(&st);
	} else {
		report_note(rep, "rollback impossible: %s; journal kept at %s", e2.msg, journal_path(j));
	}
	apply_changes_release(&undo);
	free(rep->changes);
	rep->changes = NULL;
	rep->n = 0;
	rep->rolled_back = true;
}

int apply_plan(const struct plan *pl, const struct fsroot *root, const char *state_dir,
	       bool dry_run, struct apply_changes *rep, struct nt_err *err)
{
	unsigned n_items = 0;
	struct item *items = plan_items(pl, &n_items);
	struct journal *j = NULL;
	char root_real[PATH_MAX];
	int r = 0;

	if (!items)
		return err_set(err, -ENOMEM, "out of memory");
	if (dry_run) {
		apply_dry_run(pl, items, n_items, root, rep);
		free(items);
		return 0;
	}

	j = journal_open(state_dir, err);
	if (!j) {
		free(items);
		return err->code;
	}
	root_realpath(root, root_real);
	r = journal_begin(j, root_real, pl->policy_path, err);
	if (r < 0)
		goto out;
	r = apply_items(j, items, n_items, root, rep, err);
	if (r == 0 && pl->cgroup[0])
		r = apply_job_cgroup(pl, j, root, rep, err);
	if (r == 0)
		r = journal_commit(j, err);
	if (r < 0)
		apply_roll_back(j, root, rep);
out:
	journal_close(j);
	free(items);
	return r;
}

/* ---- revert ------------------------------------------------------------ */

int apply_revert(const char *state_dir, const char *sysroot, struct apply_changes *rep,
		 struct nt_err *err)
{
	struct journal_state st = { 0 };
	struct fsroot *root = NULL;
	struct journal *j;
	char real[PATH_MAX];
	struct stat sb;
	int r;

	/* nothing was ever applied there: say so, and create nothing */
	if (lstat(state_dir, &sb) < 0 && errno == ENOENT) {
		report_note(rep, "nothing to revert (no state directory %s)", state_dir);
		return 0;
	}
	j = journal_open(state_dir, err);
	if (!j)
		return err->code;
	r = journal_read(j, &st, err);
	if (r == -ENOENT) {
		report_note(rep, "nothing to revert (no journal in %s)", state_dir);
		journal_close(j);
		return 0;
	}
	if (r < 0)
		goto out;
	if (sysroot && (!realpath(sysroot, real) || strcmp(real, st.root))) {
		r = err_set(err, -EINVAL, "--sysroot %s: the journal %s was written for %s",
			    sysroot, journal_path(j), st.root);
		goto out;
	}
	root = fsroot_open(st.root);
	if (!root) {
		r = err_set(err, -errno, "%s (from the journal): %s", st.root, nt_strerror(errno));
		goto out;
	}
	r = check_entries(root, &st, journal_path(j), err);
	if (r < 0)
		goto out;
	if (!st.committed)
		report_note(rep, "the apply that wrote %s did not complete (killed?); restoring what it changed",
			    journal_path(j));
	r = restore_entries(root, &st, rep, err);
	if (r == 0)
		r = journal_remove(j, err);
	else
		report_note(rep, "journal kept at %s; fix the cause and run `nodetune revert` again",
			    journal_path(j));
out:
	fsroot_free(root);
	journal_state_release(&st);
	journal_close(j);
	return r;
}

/* ---- converge (the daemon) --------------------------------------------- */

static const struct journal_entry *entry_of(const struct journal_state *st, enum journal_kind kind,
					    const char *a)
{
	for (unsigned i = 0; st && i < st->n; i++)
		if (st->entries[i].kind == kind && !strcmp(st->entries[i].a, a))
			return &st->entries[i];
	return NULL;
}

/* Append a copy of an entry to st (strings duplicated).  0 or -ENOMEM. */
static int entry_push(struct journal_state *st, enum journal_kind kind, const char *a, const char *b,
		      const char *raw)
{
	struct journal_entry *tmp = realloc(st->entries, (st->n + 1) * sizeof(*tmp));
	struct journal_entry *e;

	if (!tmp)
		return -ENOMEM;
	st->entries = tmp;
	e = &tmp[st->n];
	*e = (struct journal_entry){ .kind = kind, .a = strdup(a), .b = b ? strdup(b) : NULL,
				     .raw = raw ? strdup(raw) : NULL };
	st->n++;
	if (!e->a || (b && !e->b) || (raw && !e->raw))
		return -ENOMEM;
	return 0;
}

/* The journal converge keeps while it works: the originals of every file pl
 * governs (kept from old, else read now), the job cgroup an earlier
 * converge created (cgroup_entry; one made now is added by
 * converge_cgroup, once made), then
 * old's entries pl no longer governs (restored at the end).  *ret_n_keep
 * counts the entries before those.  0, or -errno with err. */
static int converge_state(const struct plan *pl, const struct item *items, unsigned n_items,
			  const struct fsroot *root, const struct journal_state *old, const char *root_real,
			  bool cgroup_entry, struct journal_state *ret, unsigned *ret_n_keep, struct nt_err *err)
{
	int r = 0;

	ret->root = strdup(root_real);
	ret->policy = strdup(pl->policy_path);
	if (!ret->root || !ret->policy)
		return err_set(err, -ENOMEM, "out of memory");
	for (unsigned i = 0; i < n_items && r == 0; i++) {
		const struct journal_entry *e = entry_of(old, JE_FILE, items[i].path);
		char now[PLAN_VALUE_MAX], raw[RAW_MAX];

		if (e) {
			r = entry_push(ret, JE_FILE, e->a, e->b, e->raw);
			continue;
		}
		if (read_original(root, items[i].path, now, raw, err) < 0)
			return err->code;
		r = entry_push(ret, JE_FILE, items[i].path, now, raw);
	}
	if (r == 0 && cgroup_entry)   /* with its identity (NULL in an old journal's) */
		r = entry_push(ret, JE_CGROUP, pl->cgroup, entry_of(old, JE_CGROUP, pl->cgroup)->b, NULL);
	*ret_n_keep = ret->n;
	for (unsigned i = 0; old && i < old->n && r == 0; i++) {
		const struct journal_entry *e = &old->entries[i];

		if (!entry_of(ret, e->kind, e->a))
			r = entry_push(ret, e->kind, e->a, e->b, e->raw);
	}
	return r < 0 ? err_set(err, r, "out of memory") : 0;
}

/* Restore and drop the entries of st from n_keep on (what pl no longer
 * governs).  0, or the first failure (-errno with err; st unchanged). */
static int converge_drop_stale(const struct fsroot *root, struct journal_state *st, unsigned n_keep,
			       struct apply_changes *rep, struct nt_err *err)
{
	struct journal_state stale = { .entries = st->entries + n_keep, .n = st->n - n_keep };
	int r = restore_entries(root, &stale, rep, err);

	if (r < 0)
		return r;
	for (unsigned i = n_keep; i < st->n; i++) {
		free(st->entries[i].a);
		free(st->entries[i].b);
		free(st->entries[i].raw);
	}
	st->n = n_keep;
	return 0;
}

/* Write the values of items that differ (skipping what skip() says).  0 or
 * the first failure. */
static int converge_write(const struct item *items, unsigned n_items, const struct fsroot *root,
			  bool (*skip)(const char *path, void *arg), void *arg, struct apply_changes *rep,
			  struct nt_err *err)
{
	char disp[512];
	int r = 0;

	for (unsigned i = 0; i < n_items && r == 0; i++) {
		char now[PLAN_VALUE_MAX], want[PLAN_VALUE_MAX];

		if (skip && skip(items[i].path, arg))
			continue;
		apply_normalize(items[i].to, want, sizeof(want));
		r = current_value(root, items[i].path, now, sizeof(now), NULL);
		if (r < 0)
			return err_set(err, r, "%s: %s", fsroot_display(root, items[i].path, disp, sizeof(disp)),
				       nt_strerror(-r));
		if (strcmp(now, want))
			r = write_item(root, &items[i], now, want, rep, err);
	}
	return r;
}

/* A group of pl's name that exists: ours when the journal names it and it
 * is the group the journal's identity describes (an entry of an older
 * nodetune, with no identity, is taken at its name as then, and never
 * removed: restore_entries).  0, or -EEXIST with err. */
static int converge_cgroup_exists(const struct plan *pl, const struct journal_entry *mine, struct nt_err *err)
{
	if (!mine)
		return err_set(err, -EEXIST, "cgroup %s exists already and is not ours; choose another [cgroup] name",
			       pl->cgroup);
	if (mine->b && !jobcg_is(pl->cgroup, mine->b))
		return err_set(err, -EEXIST, "cgroup %s is not the group this journal recorded (removed and made again "
			       "by someone else?); choose another [cgroup] name", pl->cgroup);
	return 0;
}

/* Journal the group pl's converge made, with its identity id: the entry
 * the journal names already takes it, else a new one is inserted into st
 * at *n_keep (among the entries pl governs, *n_keep counting it); then the
 * journal is rewritten.  0, or -errno with err. */
static int converge_cgroup_record(const struct plan *pl, struct journal *j, struct journal_state *st,
				  unsigned *n_keep, const char *id, struct nt_err *err)
{
	struct journal_entry *mine = (struct journal_entry *)entry_of(st, JE_CGROUP, pl->cgroup);
	struct journal_entry e;
	char *copy = strdup(id);

	if (!copy)
		return err_set(err, -ENOMEM, "out of memory");
	if (mine) {
		free(mine->b);
		mine->b = copy;
	} else if (entry_push(st, JE_CGROUP, pl->cgroup, NULL, NULL) < 0) {
		free(copy);
		return err_set(err, -ENOMEM, "out of memory");
	} else {
		e = st->entries[st->n - 1];
		e.b = copy;
		memmove(&st->entries[*n_keep + 1], &st->entries[*n_keep],
			(st->n - 1 - *n_keep) * sizeof(st->entries[0]));
		st->entries[(*n_keep)++] = e;
	}
	return journal_rewrite(j, st, err);
}

/* pl's job cgroup.  One the journal already names (an earlier converge
 * made it) is kept while it is that group, made again when gone.  A
 * missing one is created, and only then journalled with its identity
 * (converge_cgroup_record); one this run made but could not journal is
 * removed at once.  A group that exists and no journal names, or not the
 * one it names, is someone else's: -EEXIST, never journalled, so never
 * removed.  0 or -errno with err. */
static int converge_cgroup(const struct plan *pl, struct journal *j, struct journal_state *st,
			   unsigned *n_keep, struct apply_changes *rep, struct nt_err *err)
{
	char id[JOBCG_ID_MAX];
	int r;

	if (jobcg_exists(pl->cgroup))
		return converge_cgroup_exists(pl, entry_of(st, JE_CGROUP, pl->cgroup), err);
	r = job_cgroup_create(pl, id, rep, err);
	if (r < 0)
		return r;
	r = converge_cgroup_record(pl, j, st, n_keep, id, err);
	if (r < 0) {
		struct nt_err e2 = { 0 };

		if (jobcg_delete(pl->cgroup, id, &e2) < 0)
			report_note(rep, "%s", e2.msg);
	}
	return r;
}

/* The journal in j, when it is one for root: into *old (0), none (-ENOENT),
 * or a refusal (-errno with err). */
static int converge_read_old(struct journal *j, const struct fsroot *root, const char *root_real,
			     struct journal_state *old, struct apply_changes *rep, struct nt_err *err)
{
	int r = journal_read(j, old, err);

	if (r < 0)
		return r;
	if (strcmp(old->root, root_real))
		return err_set(err, -EINVAL, "%s was written for %s, not %s; run `nodetune revert` first",
			       journal_path(j), old->root, root_real);
	r = check_entries(root, old, journal_path(j), err);
	if (r == 0 && !old->committed)
		report_note(rep, "the apply that wrote %s (pid %ld) did not complete: its originals are kept and "
			    "the policy applied", journal_path(j), old->pid);
	return r;
}

int apply_converge(const struct plan *pl, const struct fsroot *root, struct journal *j,
		   bool (*skip)(const char *path, void *arg), void *arg, struct apply_changes *rep,
		   struct nt_err *err)
{
	unsigned n_items = 0, n_keep = 0;
	struct item *items = plan_items(pl, &n_items);
	struct journal_state old = { 0 }, st = { 0 };
	char root_real[PATH_MAX], why[256];
	bool have_old, cgroup;
	int r;

	if (!items)
		return err_set(err, -ENOMEM, "out of memory");
	root_realpath(root, root_real);
	r = converge_read_old(j, root, root_real, &old, rep, err);
	have_old = r == 0;
	if (r == -ENOENT)
		r = 0;
	/* a job cgroup on the live host, where cgroups can be made (or one an
	 * earlier apply made, still governed) */
	cgroup = pl->cgroup[0] && fsroot_is_host(root) &&
		 (jobcg_available(why, sizeof(why)) || entry_of(have_old ? &old : NULL, JE_CGROUP, pl->cgroup));
	if (r == 0)
		r = converge_state(pl, items, n_items, root, have_old ? &old : NULL, root_real,
				   cgroup && entry_of(have_old ? &old : NULL, JE_CGROUP, pl->cgroup), &st, &n_keep,
				   err);
	if (r == 0)
		r = journal_rewrite(j, &st, err);    /* every original, before any write */
	if (r == 0)
		r = converge_write(items, n_items, root, skip, arg, rep, err);
	if (r == 0 && cgroup && !(skip && skip("cgroup", arg)))
		r = converge_cgroup(pl, j, &st, &n_keep, rep, err);
	if (r == 0 && n_keep < st.n)
		r = converge_drop_stale(root, &st, n_keep, rep, err);
	if (r == 0) {
		st.committed = true;
		r = journal_rewrite(j, &st, err);
	}
	journal_state_release(&old);
	journal_state_release(&st);
	free(items);
	return r;
}
