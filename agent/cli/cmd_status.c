/* SPDX-License-Identifier: MIT */
/* cmd_status.c — `nodetune status`: what the daemon on this host is doing,
 * asked over its status socket (ctlsock.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "daemon/ctlsock.h"
#include "base/log.h"

static const struct opt_row status_opts[] = {
	{ OPT_SOCKET, OPT_OPTIONAL, NULL },
	{ OPT_JSON, OPT_OPTIONAL, NULL },
	OPT_TABLE_END,
};

const struct verb_spec status_spec = {
	status_opts, VERB_NO_COMMAND,
	"nodetune status [--socket PATH] [--json]",
	"what the daemon keeps applied, its drift and findings",
	"Asks the daemon over its status socket (default /run/nodetune/nodetune.sock,\n"
	"root or the daemon's user only): the policy and its sha256, the last verify\n"
	"(when, how long, settings checked and drifted), drift counts per setting, the\n"
	"contested settings, the doctor's findings and the latest drifts with the other\n"
	"writers found; in a fleet, the fleet documents refused for their signature (how\n"
	"many, and the last one's time, reason and line).  Exit 3 when no daemon answers\n"
	"(with --json, still an object: \"running\": false and the error).",
};

static void print_text(json_t *doc)
{
	json_t *lv = json_object_get(doc, "last_verify"), *v;
	const char *key;
	size_t i;
	time_t t = (time_t)json_number_value(json_object_get(lv, "time"));
	char when[64];

	strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", localtime(&t));
	printf("policy:       %s (sha256 %.12s)\n", json_string_value(json_object_get(doc, "policy")),
	       json_string_value(json_object_get(doc, "sha256")));
	printf("last verify:  %s, %.1f ms, %lld settings, %lld drifted\n", when,
	       json_number_value(json_object_get(lv, "duration_s")) * 1e3,
	       json_integer_value(json_object_get(lv, "checked")), json_integer_value(json_object_get(lv, "drifted")));
	printf("corrections:  %lld; reloads %lld, refused %lld\n", json_integer_value(json_object_get(doc, "corrections")),
	       json_integer_value(json_object_get(doc, "reloads")),
	       json_integer_value(json_object_get(doc, "reload_failures")));
	json_object_foreach(json_object_get(doc, "drift"), key, v)
		printf("drift:        %s: %lld times\n", key, json_integer_value(v));
	json_array_foreach(json_object_get(doc, "contested"), i, v)
		printf("contested:    %s (no longer corrected)\n", json_string_value(v));
	json_array_foreach(json_object_get(doc, "doctor"), i, v)
		printf("doctor:       %s: %s\n", json_string_value(json_object_get(v, "check")),
		       json_string_value(json_object_get(v, "summary")));
	if ((v = json_object_get(doc, "fleet_refused"))) {
		t = (time_t)json_number_value(json_object_get(v, "time"));
		strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", localtime(&t));
		printf("fleet refused: %lld document(s); the last %s, %s (%lld of that reason): %s\n",
		       json_integer_value(json_object_get(v, "total")), when,
		       json_string_value(json_object_get(v, "reason")), json_integer_value(json_object_get(v, "count")),
		       json_string_value(json_object_get(v, "what")));
	}
	if ((v = json_object_get(doc, "fleet_fresh")))
		printf("fleet:        %s%s %.0f s old (limit %.0f s, --fleet-max-age)\n",
		       json_is_true(json_object_get(v, "frozen")) ? "FROZEN: " : "",
		       json_is_null(json_object_get(v, "timestamp")) ? "no timestamp verified since the start,"
								      : "the last verified timestamp is",
		       json_number_value(json_object_get(v, "age_s")), json_number_value(json_object_get(v, "max_age_s")));
	json_array_foreach(json_object_get(doc, "recent"), i, v) {
		const char *w = json_string_value(json_object_get(v, "writers"));

		printf("recent drift: %s: want %s, found %s%s%s\n", json_string_value(json_object_get(v, "path")),
		       json_string_value(json_object_get(v, "wanted")), json_string_value(json_object_get(v, "current")),
		       w && w[0] ? "; " : "", w ? w : "");
	}
}

int cmd_status(struct opts *o)
{
	const char *path = o->socket ? o->socket : CTLSOCK_DEFAULT_PATH;
	struct nt_err err = { 0 };
	char *reply = NULL;
	json_t *doc;
	int rc = 0;

	if (ctlsock_query(path, "status", 5000, &reply, &err) < 0) {
		log_msg(LOG_ERR, "%s", err.msg);
		/* a script reads that no daemon answers, and why, as data */
		if (o->json)
			print_json("status", json_pack("{s:b, s:s, s:s}", "running", 0, "socket", path, "error", err.msg));
		return finish_stdout(EXIT_RUNTIME);
	}
	doc = json_loads(reply, 0, NULL);
	free(reply);
	if (!doc) {
		log_msg(LOG_ERR, "%s: the daemon's answer is not JSON", path);
		return EXIT_RUNTIME;
	}
	if (o->json)
		rc = json_object_set_new(doc, "running", json_true()) < 0 ? EXIT_RUNTIME
		     : print_json("status", json_incref(doc));
	else
		print_text(doc);
	json_decref(doc);
	return finish_stdout(rc);
}
