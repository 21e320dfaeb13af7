/* SPDX-License-Identifier: MIT */
/* signbench.c — sign and verify time per fleet document (issue 24,
 * "Measure"): a desired document (128 bytes) and a policy document
 * (64 KiB), each signed into its envelope and verified against a keyring of
 * two trusted keys, N times; prints microseconds per operation (the best
 * of 5 rounds, the machine being shared).  Every envelope is verified once
 * outside the timed loops, and a tampered one must be refused.
 *
 * Usage: signbench [N]   (default 2000) */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fleet/sign.h"

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int die(const char *what, const struct nt_err *err)
{
	fprintf(stderr, "signbench: %s: %s\n", what, err->msg);
	return 1;
}

/* Time n signs and n verifies of doc[0..len); 0 or 1 (said). */
static int bench(const char *label, const struct sign_key *k, const struct sign_keyring *kr, const char *doc,
		 size_t len, enum sign_kind kind, int n)
{
	struct sign_header h = { .kind = kind, .seq = 7 };
	struct sign_expect want = { .kind = kind, .host = "h1", .last_seq = 7 };
	struct sign_envelope e = { 0 };
	enum sign_reject why;
	struct nt_err err = { 0 };
	double best_sign = 1e9, best_verify = 1e9;
	char *env = NULL;

	snprintf(h.host, sizeof(h.host), "%s", kind == SIGN_KIND_POLICY ? "*" : "h1");
	snprintf(h.rollout, sizeof(h.rollout), "r1");
	memset(h.policy_sha256, 'a', SIGN_SHA_LEN);
	if (sign_envelope_make(k, &h, doc, len, &env, &err) < 0)
		return die("sign", &err);
	if (sign_verify(kr, env, strlen(env), &want, &e, &why, &err) < 0 || e.doc_len != len ||
	    memcmp(e.doc, doc, len))
		return die("verify of a good envelope", &err);
	sign_envelope_release(&e);
	env[strlen(env) - 3] ^= 1;   /* a bit of the document's base64 */
	if (sign_verify(kr, env, strlen(env), &want, &e, &why, &err) == 0) {
		fprintf(stderr, "signbench: a tampered envelope verified\n");
		return 1;
	}
	free(env);
	for (int round = 0; round < 5; round++) {
		double t0 = now(), t1, t2;

		for (int i = 0; i < n; i++) {
			if (sign_envelope_make(k, &h, doc, len, &env, &err) < 0)
				return die("sign", &err);
			if (i < n - 1)
				free(env);
		}
		t1 = now();
		for (int i = 0; i < n; i++) {
			if (sign_verify(kr, env, strlen(env), &want, &e, &why, &err) < 0)
				return die("verify", &err);
			sign_envelope_release(&e);
		}
		t2 = now();
		free(env);
		if ((t1 - t0) / n < best_sign)
			best_sign = (t1 - t0) / n;
		if ((t2 - t1) / n < best_verify)
			best_verify = (t2 - t1) / n;
	}
	printf("%-8s %8zu %12.1f %12.1f\n", label, len, best_sign * 1e6, best_verify * 1e6);
	return 0;
}

int main(int argc, char **argv)
{
	char dir[] = "/tmp/signbench-XXXXXX", path[64], cmd[128];
	int n = argc > 1 ? atoi(argv[1]) : 2000, rc;
	struct nt_err err = { 0 };
	struct sign_keyring *kr;
	struct sign_key k;
	char *policy;

	if (n < 1 || !mkdtemp(dir))
		return 2;
	if (sign_keygen(dir, "a", NULL, &err) < 0 || sign_keygen(dir, "b", NULL, &err) < 0)
		return die("keygen", &err);
	snprintf(path, sizeof(path), "%s/b.key", dir);
	if (sign_key_load(path, 0, &k, &err) < 0)
		return die("key", &err);
	kr = sign_keyring_load(dir, 0, &err);
	if (!kr)
		return die("keyring", &err);
	policy = malloc(65536);
	if (!policy)
		return 3;
	for (size_t i = 0; i < 65536; i++)
		policy[i] = (char)('a' + i % 26);
	printf("# %d signs and verifies per round, best of 5; keyring of %u keys\n", n, sign_keyring_count(kr));
	printf("%-8s %8s %12s %12s\n", "doc", "bytes", "sign_us", "verify_us");
	rc = bench("desired", &k, kr, "{\"rollout\":\"r1\",\"mode\":\"apply\",\"policy\":\"gpu-train\",\"sha256\":"
			  "\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\"}",
		   128, SIGN_KIND_DESIRED, n);
	if (!rc)
		rc = bench("policy", &k, kr, policy, 65536, SIGN_KIND_POLICY, n / 10 ? n / 10 : 1);
	free(policy);
	sign_keyring_free(kr);
	sign_key_wipe(&k);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "signbench: could not remove %s\n", dir);
	return rc;
}
