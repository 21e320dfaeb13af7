/* fuzz_sign.c — libFuzzer target: the signed envelope of a fleet document
 * (sign.h) over arbitrary bytes, what a host reads from its desired and
 * shadow keys and the policies.  A parse that succeeds must hold a valid
 * header (its canonical bytes can be formed), a 16-digit key id and the
 * document's bytes NUL-terminated; a refusal is -EPERM with a reason in
 * range and a one-line message, or -ENOMEM.  Verification against an empty
 * keyring must never succeed. */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fleet/sign.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int has_ctrl(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return 1;
	return 0;
}

static void check_refusal(int rc, enum sign_reject why, const struct nt_err *err)
{
	if (rc == -ENOMEM)
		return;
	if (rc != -EPERM || err->code != rc || (unsigned)why >= SIGN_REJ__COUNT || has_ctrl(err->msg))
		__builtin_trap();
}

/* A keyring of no key, from an empty directory made once. */
static struct sign_keyring *empty_ring(void)
{
	static struct sign_keyring *kr;
	static char dir[] = "/tmp/fuzz-sign-XXXXXX";

	if (!kr && mkdtemp(dir)) {
		kr = sign_keyring_load(dir, 0, NULL);
		rmdir(dir);
	}
	return kr;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *buf = (const char *)data;
	struct sign_expect want = { .kind = SIGN_KIND_DESIRED, .host = "h1", .last_seq = 3 };
	struct sign_envelope e = { 0 };
	enum sign_reject why = SIGN_REJ__COUNT;
	struct nt_err err = { 0 };
	struct sign_keyring *kr = empty_ring();
	char *canon = NULL;
	size_t clen = 0;
	int rc;

	rc = sign_envelope_parse(buf, size, &e, &why, &err);
	if (rc == 0) {
		if (strlen(e.key_id) != SIGN_ID_LEN || e.doc[e.doc_len] != '\0' || e.doc_len > SIGN_DOC_MAX)
			__builtin_trap();
		if (sign_canonical(&e.h, e.doc, e.doc_len, &canon, &clen) == -EINVAL)
			__builtin_trap();
		free(canon);
	} else {
		check_refusal(rc, why, &err);
	}
	sign_envelope_release(&e);
	if (kr) {
		why = SIGN_REJ__COUNT;
		rc = sign_verify(kr, buf, size, &want, &e, &why, &err);
		if (rc == 0)
			__builtin_trap();
		check_refusal(rc, why, &err);
	}
	return 0;
}
