/* apply.c — see apply.h.
 *
 * Divisions: values and the report; restoring from a journal (shared by
 * rollback and revert); apply_plan; apply_revert.
 */
#include "apply.h"

#include <errno.h>
#include <sys/stat.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cpulist.h"
#include "jobcg.h"
#include "journal.h"

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

static int report_add(struct apply_report *rep, const char *path, const char *from, const char *to)
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

#define report_note(rep, ...) note_add((rep)->notes, &(rep)->n_notes, APPLY_MAX_NOTES, __VA_ARGS__)

void apply_report_release(struct apply_report *rep)
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
	return r == -EXDEV ? "the path leads out of the root (a symlink); not written" : strerror(-r);
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
		return err_set(err, r, "%s: reading back failed: %s", disp, strerror(-r));
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

/* Restore every entry of st, last first.  Failures do not stop the others;
 * the first is returned. */
static int restore_entries(const struct fsroot *root, const struct journal_state *st,
			   struct apply_report *rep, struct nt_err *err)
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
			r = jobcg_delete(e->a, &e2);
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
			if (r == 0 && !strcmp(now, e->b))
				continue; /* never changed, or already restored */
			if (r == 0)
				r = restore_file(root, e, &e2);
			else
				err_set(&e2, r, "%s: %s", e->a, strerror(-r));
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

int apply_plan(const struct plan *pl, const struct fsroot *root, const char *state_dir,
	       bool dry_run, struct apply_report *rep, struct nt_err *err)
{
	unsigned n_items = pl->n_host + pl->n_irqs;
	struct item *items = calloc(n_items + 1, sizeof(*items));
	struct journal *j = NULL;
	bool live = fsroot_is_host(root);
	char root_real[PATH_MAX];
	int r = 0;

	if (!items)
		return err_set(err, -ENOMEM, "out of memory");
	for (unsigned i = 0; i < pl->n_host; i++)
		items[i] = (struct item){ pl->host[i].path, pl->host[i].from, pl->host[i].to };
	for (unsigned i = 0; i < pl->n_irqs; i++)
		items[pl->n_host + i] = (struct item){ pl->irqs[i].path, pl->irqs[i].from, pl->irqs[i].to };

	if (dry_run) {
		for (unsigned i = 0; i < n_items; i++) {
			char now[PLAN_VALUE_MAX], want[PLAN_VALUE_MAX];

			apply_normalize(items[i].to, want, sizeof(want));
			if (current_value(root, items[i].path, now, sizeof(now), NULL) == 0 && !strcmp(now, want))
				continue;
			report_add(rep, items[i].path, items[i].from, items[i].to);
		}
		if (pl->cgroup[0])
			report_add(rep, "cgroup", "", pl->cgroup);
		free(items);
		return 0;
	}

	j = journal_open(state_dir, err);
	if (!j) {
		free(items);
		return err->code;
	}
	if (!realpath(fsroot_path(root), root_real))
		snprintf(root_real, sizeof(root_real), "%s", fsroot_path(root));
	r = journal_begin(j, root_real, pl->policy_path, err);
	if (r < 0)
		goto out;
	for (unsigned i = 0; i < n_items && r == 0; i++) {
		char now[PLAN_VALUE_MAX], want[PLAN_VALUE_MAX], disp[512], raw[RAW_MAX];

		apply_normalize(items[i].to, want, sizeof(want));
		/* a path that leads out of the root is neither read nor
		 * journaled (its write would be refused: fsroot_write) */
		r = fsroot_check_beneath(root, items[i].path);
		if (r == -EXDEV || r == -ELOOP) {
			err_set(err, -EXDEV, "%s: leads out of %s (a symlink); not written",
				fsroot_display(root, items[i].path, disp, sizeof(disp)), fsroot_path(root));
			break;
		}
		r = current_value(root, items[i].path, now, sizeof(now), raw);
		if (r < 0) {
			err_set(err, r, "%s: %s", fsroot_display(root, items[i].path, disp, sizeof(disp)),
				strerror(-r));
			break;
		}
		if (!strcmp(now, want))
			continue;
		r = journal_record(j, JE_FILE, items[i].path, now, raw, err);
		if (r == 0)
			r = set_file(root, items[i].path, items[i].to, err);
		if (r == 0)
			r = report_add(rep, items[i].path, now, want) < 0 ? err_set(err, -ENOMEM, "out of memory") : 0;
	}
	if (r == 0 && pl->cgroup[0]) {
		char why[256], cpus[PLAN_VALUE_MAX], mems[64], label[128];

		if (!live) {
			report_note(rep, "job cgroup %s: not created, %s is not the live host", pl->cgroup,
				    fsroot_path(root));
		} else if (!jobcg_available(why, sizeof(why))) {
			report_note(rep, "job cgroup %s: not created, %s", pl->cgroup, why);
		} else {
			cpulist_format(pl->cgroup_cpus, cpus, sizeof(cpus));
			cpulist_format(pl->cgroup_mems, mems, sizeof(mems));
			r = journal_record(j, JE_CGROUP, pl->cgroup, NULL, NULL, err);
			if (r == 0)
				r = jobcg_create(pl->cgroup, cpus, mems, pl->cpu_weight, err);
			snprintf(label, sizeof(label), "cgroup:%s", pl->cgroup);
			if (r == 0)
				report_add(rep, label, "", "created");
		}
	}
	if (r == 0)
		r = journal_commit(j, err);
	if (r < 0 && r != -EEXIST) {
		/* all or nothing: undo what this apply did */
		struct journal_state st;
		struct apply_report undo = { 0 };
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
		apply_report_release(&undo);
		free(rep->changes);
		rep->changes = NULL;
		rep->n = 0;
		rep->rolled_back = true;
	}
out:
	journal_close(j);
	free(items);
	return r;
}

/* ---- revert ------------------------------------------------------------ */

int apply_revert(const char *state_dir, const char *sysroot, struct apply_report *rep,
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
		r = err_set(err, -errno, "%s (from the journal): %s", st.root, strerror(errno));
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
