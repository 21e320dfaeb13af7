/* SPDX-License-Identifier: MIT */
/* cmd_bisect.c — `nodetune bisect`: the smallest set of knobs that turns a
 * good policy into a bad one (bisect.h runs the tests; this loads the two
 * policies, says the progress and prints the set). */
#include <stdio.h>
#include <string.h>

#include "ab/bisect.h"
#include "cli.h"
#include "machine/knob.h"
#include "base/log.h"

static const struct opt_row bisect_opts[] = {
	{ OPT_GOOD, OPT_REQUIRED, NULL },
	{ OPT_BAD, OPT_REQUIRED, NULL },
	{ OPT_TRIALS, OPT_OPTIONAL, NULL },
	{ OPT_STEPS, OPT_OPTIONAL, NULL },
	{ OPT_THRESHOLD, OPT_OPTIONAL, NULL },
	{ OPT_ALPHA, OPT_OPTIONAL, NULL },
	{ OPT_TRIM, OPT_OPTIONAL, NULL },
	{ OPT_BUDGET, OPT_OPTIONAL, NULL },
	{ OPT_SEED, OPT_OPTIONAL, NULL },
	{ OPT_METRIC, OPT_OPTIONAL, NULL },
	{ OPT_METRIC_KIND, OPT_OPTIONAL, NULL },
	{ OPT_SKIP_STEPS, OPT_OPTIONAL, NULL },
	{ OPT_JSON, OPT_OPTIONAL, NULL },
	{ OPT_REPORT, OPT_REFUSED, "bisect runs many A/B tests: --json gives each one's verdict, --trial-dir DIR keeps "
				  "their trials' outputs, and `nodetune ab --report` reports on the set it found" },
	{ OPT_SYSROOT, OPT_OPTIONAL, NULL },
	{ OPT_TOPOLOGY, OPT_OPTIONAL, NULL },
	{ OPT_AS_USER, OPT_OPTIONAL, NULL },
	{ OPT_TRIAL_DIR, OPT_OPTIONAL, NULL },
	{ OPT_LIMITS, OPT_OPTIONAL, NULL },
	OPT_TABLE_END,
};

const struct verb_spec bisect_spec = {
	bisect_opts, VERB_COMMAND_OPTIONAL,
	"nodetune bisect --good POLICY --bad POLICY [AB OPTIONS] [--limits FILE]\n"
	"                       [-- CMD...]",
	"the fewest knobs that turn a good policy into a bad one",
	"The knobs that differ between the two policies are the delta.  Each test is an\n"
	"A/B (as `nodetune ab`, its options but --report; --budget per test) of the good\n"
	"policy against it with a subset of the delta; delta debugging narrows the delta\n"
	"to a set where every knob is needed.  Exit 0 with the set; 1 when the bad policy\n"
	"does not regress here; 3 when a trial fails.  See nodetune(8).",
};

static void say_progress(const char *line, void *arg)
{
	(void)arg;
	log_msg(LOG_NOTICE, "%s", line);
}

static int print_culprits_json(const struct opts *o, const struct bisect_run *b, uint64_t culprits,
			       bool reproduced)
{
	json_t *cs = json_array();

	for (int i = 0; i < b->n; i++)
		if (culprits >> i & 1)
			json_array_append_new(cs, json_pack("{s:s, s:s, s:s?, s:s?}", "section",
							    knob_table[b->idx[i]].section, "key",
							    knob_table[b->idx[i]].key, "good", b->good->v[b->idx[i]].value,
							    "bad", b->bad->v[b->idx[i]].value));
	return print_json("bisect", json_pack("{s:s, s:s, s:b, s:i, s:o, s:o}", "good", o->good, "bad", o->bad, "reproduced",
				    reproduced, "knobs_differing", b->n, "culprits", cs, "tests", json_incref(b->log)));
}

static void print_culprits_text(const struct opts *o, const struct bisect_run *b, uint64_t culprits,
				bool reproduced)
{
	if (!reproduced) {
		printf("%s does not regress against %s here (%d knobs differ): nothing to bisect\n", o->bad, o->good,
		       b->n);
		return;
	}
	printf("smallest set of knobs that reproduces the regression (%d of %d, %d A/B tests):\n",
	       __builtin_popcountll(culprits), b->n, b->tests);
	for (int i = 0; i < b->n; i++) {
		const char *good = b->good->v[b->idx[i]].value, *bad = b->bad->v[b->idx[i]].value;

		if (culprits >> i & 1)
			printf("  [%s] %s = %s   (good: %s)\n", knob_table[b->idx[i]].section, knob_table[b->idx[i]].key,
			       bad ? bad : "(unset)", good ? good : "(unset)");
	}
}

/* Load --good and --bad.  0, or an exit code (said). */
static int load_policies(const struct opts *o, struct policy **good, struct policy **bad)
{
	struct nt_err err = { 0 };

	*good = policy_load(o->good, policy_trust_flags(), &err);
	if (*good)
		*bad = policy_load(o->bad, policy_trust_flags(), &err);
	if (!*good || !*bad) {
		log_msg(LOG_ERR, "%s", err.msg);
		return exit_code_for(err.code);
	}
	return 0;
}

/* Run the bisection in b (set up) and print what it found. */
static int bisect_and_print(const struct opts *o, struct bisect_run *b)
{
	struct nt_err err = { 0 };
	uint64_t culprits = 0;
	bool reproduced = false;
	char knobs[2048];
	int rc = 0;

	bisect_knob_list(knobs, sizeof(knobs), b->idx, b->n, ~0ull);
	log_msg(LOG_NOTICE, "%d knobs differ: %s", b->n, knobs);
	if (bisect_search(b, &culprits, &reproduced, &err) < 0) {
		log_msg(LOG_ERR, "%s (nothing is left applied)", err.msg);
		return EXIT_RUNTIME;
	}
	if (o->json)
		rc = print_culprits_json(o, b, culprits, reproduced);
	else
		print_culprits_text(o, b, culprits, reproduced);
	return !rc && !reproduced ? EXIT_PROBLEM : rc;
}

int cmd_bisect(struct opts *o)
{
	struct ab_config cfg = { 0 };
	struct bisect_run b = { .progress = say_progress };
	struct nt_err err = { 0 };
	struct policy *good = NULL, *bad = NULL;
	struct ab_files files;
	int rc;

	cli_ab_config(o, &cfg);
	if ((rc = cli_ab_machine(o, &cfg)) || (rc = load_policies(o, &good, &bad)))
		goto out;
	snprintf(cfg.arm[0].name, 2, "A");
	snprintf(cfg.arm[1].name, 2, "B");
	if (ab_default_command(&cfg, o->command) < 0) {
		log_msg(LOG_ERR, "out of memory");
		rc = EXIT_RUNTIME;
		goto out;
	}
	/* the arms' policies are bisect's own files from here on: the two
	 * given are held to the site limits now, each test's again by its trials */
	if ((rc = cli_check_policy(&cfg, "--good", o->good)) || (rc = cli_check_policy(&cfg, "--bad", o->bad)) ||
	    (rc = cli_check_arm(&cfg, &cfg.arm[0])))
		goto out;
	if (bisect_run_init(&b, &cfg, o->good, good, bad, &err) < 0) {
		log_msg(LOG_ERR, "out of memory");
		rc = EXIT_RUNTIME;
		goto out;
	}
	if (!b.n) {
		log_msg(LOG_ERR, "%s and %s set every knob alike: nothing to bisect", o->good, o->bad);
		rc = EXIT_USAGE;
		goto out;
	}
	if ((rc = cli_ab_files(o, "nodetune-bisect", &files, &cfg)))
		goto out;
	rc = bisect_and_print(o, &b);
	if (!o->trial_dir)
		ab_files_remove(files.work);
out:
	bisect_run_release(&b);
	policy_free(good);
	policy_free(bad);
	ab_arm_release(&cfg.arm[0]);
	ab_arm_release(&cfg.arm[1]);
	return finish_stdout(rc);
}
