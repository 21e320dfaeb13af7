/* SPDX-License-Identifier: MIT */
/* spank_check.h — the SPANK plugin's checks, callable without Slurm: which
 * file a --nodetune value names (beneath the allow-listed policy
 * directories alone), the trust rule of a file the node applies as root,
 * reading and parsing it with the job user's identity, whether slurmd runs
 * the Slurm release the plugin was built for, whether slurmctld's answer
 * says the job owns the node, and a step's GPUs from its environment.
 *
 * nodetune_spank.c gathers what Slurm says (spank_get_item, slurm_load_job,
 * spank_getenv) and hands it here; tests/unit/slurm/test_spank_check.c
 * calls these with no Slurm at all.  No Slurm header is included: the
 * job's shared values are mirrored (enum spank_shared), and the plugin
 * checks the mirror against slurm.h when it is compiled.  Nothing here
 * logs: every answer is a return value and, where it is a refusal, one
 * line in the caller's buffer. */
#ifndef NODETUNE_SPANK_CHECK_H
#define NODETUNE_SPANK_CHECK_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include "base/asuser.h"
#include "machine/topo.h"
#include "tune/policy.h"

/* The plugin's own functions: the .so exports its slurm_spank_* entry
 * points alone (spank_check.c is linked beside nodetune_spank.c, not from
 * an archive that --exclude-libs hides). */
#pragma GCC visibility push(hidden)

/* value as shown in a message: the user's own text, each byte outside
 * printable ASCII as '?', cut at 95 bytes.  Returns buf. */
const char *spank_check_shown(const char *value, char buf[96]);

/* Is path (already resolved) beneath one of dirs ("DIR[:DIR...]", each
 * resolved with realpath; one that does not resolve is passed over)?  "/"
 * holds every absolute path; "/a/b" holds "/a/b/x", not "/a/bc/x". */
bool spank_check_in_dirs(const char *dirs, const char *path);

/* The file value names, resolved with the thread's current identity: a
 * bare NAME is NAME or NAME.conf in the first of dirs that has it beneath
 * dirs; a path is taken relative to cwd (absolute; NULL or relative: a
 * relative value does not resolve).  Returns 0 with real set (beneath
 * dirs), or -errno (-ENOENT, -EPERM outside dirs, realpath's): whatever
 * the reason, the caller says one and the same line. */
int spank_check_resolve(const char *dirs, const char *value, const char *cwd, char real[PATH_MAX]);

/* The trust rule of root (policy.h's POLICY_TRUSTED_ONLY) for the file
 * the node applies as root: owned by root, not writable by group or
 * others.  Returns 0, or -EKEYREJECTED with why ("not owned by root" or
 * "writable by group or others", the uid and the mode). */
int spank_check_trusted(const struct stat *st, char *why, size_t size);

/* Read --nodetune=value as user u (resolved, opened and read with u's
 * file-system identity, asuser.h; the caller's own comes back before
 * anything is parsed) and parse it.  Returns the policy (p->path the
 * resolved file) and, when ret_buf is not NULL, its bytes (*ret_buf
 * malloc'd, *ret_len); or NULL with err one line (-EPERM): a value that
 * does not resolve, is outside dirs, or that u cannot open gets one and
 * the same line, naming dirs. */
struct policy *spank_check_policy(const char *dirs, const char *value, const char *cwd, const struct asuser *u,
				  char **ret_buf, size_t *ret_len, struct nt_err *err);

/* Is slurmd's release (major, minor: spank_get_item's strings, NULL when
 * it did not say) the one the plugin was built for (built_major,
 * built_minor)?  The layout of slurm_job_info_t changes between releases:
 * read through another release's, the shared field is some other field's
 * bytes.  true, or false with why. */
bool spank_check_release(const char *major, const char *minor, unsigned built_major, unsigned built_minor,
			 char *why, size_t size);

/* A job's shared field as slurmctld gives it (slurm.h's JOB_SHARED_* and
 * NO_VAL16, the same numbers): NONE for --exclusive (or a partition's
 * OverSubscribe=EXCLUSIVE), OK for --oversubscribe (OverSubscribe=YES),
 * USER for --exclusive=user, MCS for --exclusive=mcs, UNSET where the job
 * asked nothing and the partition decides (OverSubscribe=NO or FORCE). */
enum spank_shared {
	SPANK_SHARED_NONE = 0,
	SPANK_SHARED_OK = 1,
	SPANK_SHARED_USER = 2,
	SPANK_SHARED_MCS = 3,
	SPANK_SHARED_UNSET = 0xfffe,
};

/* Slurm's name for a shared value (scontrol's OverSubscribe=). */
const char *spank_check_shared_word(uint16_t shared);

/* Does job own this node, by slurmctld's answer?  load_error: NULL when
 * slurm_load_job answered, else its error's text; found: the answer holds
 * job; shared: its shared field.  Only SPANK_SHARED_NONE owns the node:
 * OK and UNSET share it with other jobs, USER with the user's other jobs,
 * MCS with its MCS label's.  Returns 1; 0 with why (the OverSubscribe=
 * word, "submit with --exclusive"); -EIO (not answered) or -ENOENT (job
 * not in the answer) with why. */
int spank_check_owns_node(uint32_t job, const char *load_error, bool found, uint16_t shared, char *why,
			  size_t size);

/* The step's GPUs as indexes into t->gpus, from its environment, read
 * through get (0 and buf set when name is there; spank_getenv's role):
 * the first set and not empty of SLURM_STEP_GPUS (Slurm's device
 * numbers, machine/gres.h), CUDA_VISIBLE_DEVICES, GPU_DEVICE_ORDINAL,
 * each a comma list of device numbers.  *ret_from is the variable's name
 * (NULL: none set).  At most max are stored.  Returns the count (0: none
 * set, or t has no GPU: all of the machine's), or -EINVAL with err (a
 * word that is not a GPU of t), or gres_build's error. */
int spank_check_gpus(const struct topo *t, int (*get)(void *ctx, const char *name, char *buf, size_t size),
		     void *ctx, unsigned *gpus, unsigned max, const char **ret_from, struct nt_err *err);

#pragma GCC visibility pop

#endif
