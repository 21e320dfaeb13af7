/* SPDX-License-Identifier: MIT */
/* spank_check.c — the SPANK plugin's checks, without Slurm (spank_check.h).
 *
 * Divisions:
 *   1. the policy a --nodetune value names: resolved beneath the policy
 *      directories, trusted, read as the job's user
 *   2. the job and the node: the Slurm release, whether the job owns it
 *   3. the step's GPUs from its environment
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/parse.h"
#include "base/userfile.h"
#include "machine/gres.h"
#include "spank_check.h"

/* ---- 1. the policy a --nodetune value names ------------------------------- */

const char *spank_check_shown(const char *value, char buf[96])
{
	size_t i = 0;

	for (; value[i] && i < 95; i++)
		buf[i] = value[i] >= 0x20 && value[i] < 0x7f ? value[i] : '?';
	buf[i] = '\0';
	return buf;
}

bool spank_check_in_dirs(const char *dirs, const char *path)
{
	char list[PATH_MAX], real[PATH_MAX], *save = NULL;

	snprintf(list, sizeof(list), "%s", dirs);
	for (char *d = strtok_r(list, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
		size_t n;

		if (!realpath(d, real))
			continue;
		n = strlen(real);
		if (!strncmp(path, real, n) && (path[n] == '/' || (n == 1 && real[0] == '/')))
			return true;
	}
	return false;
}

int spank_check_resolve(const char *dirs, const char *value, const char *cwd, char real[PATH_MAX])
{
	char list[PATH_MAX], path[PATH_MAX * 2], *save = NULL;

	if (!strchr(value, '/')) {
		static const char *const suffixes[] = { "", ".conf" };

		snprintf(list, sizeof(list), "%s", dirs);
		for (char *d = strtok_r(list, ":", &save); d; d = strtok_r(NULL, ":", &save))
			for (int f = 0; f < 2; f++) {
				snprintf(path, sizeof(path), "%s/%s%s", d, value, suffixes[f]);
				if (realpath(path, real) && spank_check_in_dirs(dirs, real))
					return 0;
			}
		return -ENOENT;
	}
	if (value[0] != '/' && (!cwd || cwd[0] != '/'))
		return -ENOENT;
	if (value[0] != '/')
		snprintf(path, sizeof(path), "%s/%s", cwd, value);
	else
		snprintf(path, sizeof(path), "%s", value);
	if (!realpath(path, real))
		return -errno;
	return spank_check_in_dirs(dirs, real) ? 0 : -EPERM;
}

int spank_check_trusted(const struct stat *st, char *why, size_t size)
{
	if (st->st_uid == 0 && !(st->st_mode & 022))
		return 0;
	snprintf(why, size, "%s (uid %u, mode %04o): the node applies policies as root and takes only files "
		 "owned by root and not writable by group or others",
		 st->st_uid != 0 ? "not owned by root" : "writable by group or others", (unsigned)st->st_uid,
		 (unsigned)(st->st_mode & 07777));
	return -EKEYREJECTED;
}

struct policy *spank_check_policy(const char *dirs, const char *value, const char *cwd, const struct asuser *u,
				  char **ret_buf, size_t *ret_len, struct nt_err *err)
{
	char real[PATH_MAX], why[512] = "", sv[96], *buf = NULL, *inc;
	struct asuser_saved saved;
	struct policy *p;
	size_t len = 0;
	int r;

	if ((r = asuser_enter(u, &saved)) < 0) {
		err_set(err, r, "--nodetune=%s: cannot take uid %u's identity to read it: %s",
			spank_check_shown(value, sv), (unsigned)u->uid, strerror(-r));
		return NULL;
	}
	r = spank_check_resolve(dirs, value, cwd, real);
	if (r == 0)
		r = userfile_read(real, POLICY_MAX_SIZE, "a policy file", spank_check_trusted, &buf, &len, why,
				  sizeof(why));
	asuser_leave(&saved);
	if (r == -EKEYREJECTED || r == -EFBIG) {
		err_set(err, -EPERM, "--nodetune=%s: %s: %s", spank_check_shown(value, sv), real, why);
		return NULL;
	}
	if (r < 0) {
		err_set(err, -EPERM, "--nodetune=%s: not an allowed policy (a NAME or a file you can read in %s)",
			spank_check_shown(value, sv), dirs);
		return NULL;
	}
	p = policy_parse_buffer(buf, len, real, err);
	/* the node applies the checked bytes alone, with no directory to
	 * resolve an include against: say so in the user's terms */
	if (!p && (inc = strstr(err->msg, ": include in a policy given as a buffer")))
		snprintf(inc, sizeof(err->msg) - (size_t)(inc - err->msg), ": include= is not taken in a --nodetune "
			 "policy (the node applies this file alone); ask for a self-contained one");
	if (p && ret_buf) {
		*ret_buf = buf;
		*ret_len = len;
	} else {
		free(buf);
	}
	return p;
}

/* ---- 2. the job and the node ---------------------------------------------- */

bool spank_check_release(const char *major, const char *minor, unsigned built_major, unsigned built_minor,
			 char *why, size_t size)
{
	uint64_t ma, mi;
	char built[16];

	snprintf(built, sizeof(built), "%u.%02u", built_major, built_minor);
	if (!major || !minor) {
		snprintf(why, size, "slurmd does not say its Slurm release (the plugin was built for %s)", built);
		return false;
	}
	if (parse_u64(major, 255, &ma) == 0 && parse_u64(minor, 255, &mi) == 0 && ma == built_major &&
	    mi == built_minor)
		return true;
	snprintf(why, size, "the plugin was built for Slurm %s, this node runs %.8s.%.8s: rebuild it against this "
		 "Slurm's headers", built, major, minor);
	return false;
}

const char *spank_check_shared_word(uint16_t shared)
{
	switch (shared) {
	case SPANK_SHARED_NONE: return "NO";
	case SPANK_SHARED_OK: return "YES";
	case SPANK_SHARED_USER: return "USER";
	case SPANK_SHARED_MCS: return "MCS";
	default: return "OK";
	}
}

int spank_check_owns_node(uint32_t job, const char *load_error, bool found, uint16_t shared, char *why,
			  size_t size)
{
	if (load_error) {
		snprintf(why, size, "slurmctld could not be asked whether job %u owns the node (slurm_load_job: %s)",
			 job, load_error);
		return -EIO;
	}
	if (!found) {
		snprintf(why, size, "slurmctld does not know job %u", job);
		return -ENOENT;
	}
	if (shared == SPANK_SHARED_NONE)
		return 1;
	snprintf(why, size, "job %u shares the node with other jobs (OverSubscribe=%s; submit with --exclusive)", job,
		 spank_check_shared_word(shared));
	return 0;
}

/* ---- 3. the step's GPUs --------------------------------------------------- */

int spank_check_gpus(const struct topo *t, int (*get)(void *ctx, const char *name, char *buf, size_t size),
		     void *ctx, unsigned *gpus, unsigned max, const char **ret_from, struct nt_err *err)
{
	static const char *const vars[] = { "SLURM_STEP_GPUS", "CUDA_VISIBLE_DEVICES", "GPU_DEVICE_ORDINAL" };
	char buf[1024], *save = NULL;
	struct gres *g;
	int n = 0;

	*ret_from = NULL;
	for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
		if (get(ctx, vars[i], buf, sizeof(buf)) == 0 && buf[0]) {
			*ret_from = vars[i];
			break;
		}
	if (!*ret_from || t->n_gpus == 0)
		return 0;
	if (!(g = gres_build(t, err)))
		return err->code;
	for (char *w = strtok_r(buf, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
		char *end;
		long dev = strtol(w, &end, 10);
		int gpu = *end || end == w || dev < 0 || dev > INT_MAX ? -1 : gres_gpu_by_dev_num(g, t, (int)dev);

		if (gpu < 0) {
			gres_free(g);
			return err_set(err, -EINVAL, "%s=%s: '%s' is not a GPU of %s", *ret_from, buf, w, t->source);
		}
		if ((unsigned)n < max)
			gpus[n++] = (unsigned)gpu;
	}
	gres_free(g);
	return n;
}
