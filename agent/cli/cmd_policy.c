/* SPDX-License-Identifier: MIT */
/* cmd_policy.c — `nodetune policy list | show NAME | active`: policies by
 * name on the policy path (tune/policy.h finds them), what one sets, and
 * what this host has applied now (the journals, the daemon).
 *
 * Divisions: list; show; active.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "base/log.h"
#include "base/userfile.h"
#include "daemon/ctlsock.h"
#include "tune/journal.h"

/* ---- list --------------------------------------------------------------- */

static const struct opt_row list_opts[] = {
	{ OPT_STATE_DIR, OPT_OPTIONAL, "the state dir whose journal says which policy is active (as `policy active`)" },
	{ OPT_SOCKET, OPT_OPTIONAL, NULL },
	{ OPT_JSON, OPT_OPTIONAL, NULL },
	OPT_TABLE_END,
};

const struct verb_spec policy_list_spec = {
	list_opts, VERB_NO_COMMAND,
	"nodetune policy list [--state-dir DIR] [--socket PATH] [--json]",
	"the policies on the policy path, the active one marked",
	"Every NAME.conf in the directories of the policy path (NODETUNE_POLICY_PATH, or\n"
	"/etc/nodetune/policies, the install's share/nodetune/policies, then\n"
	"/usr/share/nodetune/policies, then, for a binary in a checkout's build/,\n"
	"the checkout's policies/), in path order: each directory looked in, then\n"
	"each policy's name, file and summary; the active one (what `policy active`\n"
	"reports) marked '*'.  --policy NAME and include = NAME take the first file of\n"
	"a NAME; a later one is marked shadowed.  None found is not an error (exit 0;\n"
	"stderr says where it looked).  As root, a directory or file owned by another\n"
	"user, or writable by group or others, is refused (exit 2).",
};

/* The summary of the policy in file, or why it does not load: into buf. */
static bool summary_of(const char *file, char *buf, size_t size)
{
	struct nt_err err = { 0 };
	struct policy *p = policy_load(file, policy_trust_flags(), &err);
	const char *s;

	if (!p) {
		snprintf(buf, size, "%s", err.msg);
		return false;
	}
	s = policy_value(p, KNOB_MAIN_SUMMARY);
	snprintf(buf, size, "%s", s ? s : "");
	policy_free(p);
	return true;
}

/* Is entry e the policy named active (a NAME or a file), as `policy
 * active` reports it?  A shadowed NAME is never the one a NAME means. */
static bool is_active(const struct policy_entry *e, const char *active)
{
	return active && (!strcmp(e->path, active) || (!e->shadowed && !strcmp(e->name, active)));
}

/* The directories of the policy path, each with whether it exists. */
static json_t *searched_json(void)
{
	const char *path = policy_search_path();
	json_t *arr = json_array();

	for (const char *p = path; arr && *p;) {
		size_t n = strcspn(p, ":");
		char dir[4096];
		struct stat st;

		if (n && n < sizeof(dir)) {
			memcpy(dir, p, n);
			dir[n] = '\0';
			json_array_append_new(arr, json_pack("{s:s, s:b}", "dir", dir, "exists",
							     stat(dir, &st) == 0 && S_ISDIR(st.st_mode)));
		}
		p += n + (p[n] == ':');
	}
	return arr;
}

static json_t *list_json(const struct policy_entry *e, int n, const char *active)
{
	json_t *arr = json_array();

	for (int i = 0; arr && i < n; i++) {
		char sum[1100];
		bool ok = summary_of(e[i].path, sum, sizeof(sum));

		json_array_append_new(arr, json_pack("{s:s, s:s, s:b, s:b, s:s}", "name", e[i].name, "file", e[i].path,
						     "shadowed", e[i].shadowed, "active", is_active(&e[i], active),
						     ok ? "summary" : "error", sum));
	}
	return json_pack("{s:s, s:o*, s:s?, s:o*}", "path", policy_search_path(), "searched", searched_json(), "active",
			 active, "policies", arr);
}

static void list_print(const struct policy_entry *e, int n, const char *active)
{
	json_t *dirs = searched_json(), *d;
	bool marked = false;
	size_t k;

	printf("policy path: %s\n", policy_search_path());
	json_array_foreach(dirs, k, d) {
		const char *dir = json_string_value(json_object_get(d, "dir"));
		int found = 0;

		for (int i = 0; i < n; i++)
			found += !strncmp(e[i].path, dir, strlen(dir)) && e[i].path[strlen(dir)] == '/';
		if (!json_is_true(json_object_get(d, "exists")))
			printf("  looked in %s: not there\n", dir);
		else
			printf("  looked in %s: %d polic%s\n", dir, found, found == 1 ? "y" : "ies");
	}
	json_decref(dirs);
	if (!n)
		printf("no policies there\n");
	for (int i = 0; i < n; i++) {
		char sum[1100];
		bool ok = summary_of(e[i].path, sum, sizeof(sum)), act = is_active(&e[i], active);

		marked |= act;
		printf("%c %-16s %s%s%s\n    %s%s\n", act ? '*' : ' ', e[i].name, e[i].path,
		       e[i].shadowed ? " (shadowed)" : "", act ? " (active)" : "", ok ? "" : "invalid: ", sum);
	}
	if (active && !marked)
		printf("active: %s (not one of these)\n", active);
}

static json_t *active_doc(const struct opts *o);

int cmd_policy_list(struct opts *o)
{
	struct policy_entry *e = NULL;
	struct nt_err err = { 0 };
	int n = policy_list(policy_search_path(), policy_trust_flags(), &e, &err), rc = 0;
	json_t *act;
	const char *active;

	if (n < 0) {
		log_msg(LOG_ERR, "%s", err.msg);
		return exit_code_for(n);
	}
	if (!n) {      /* not an error (exit 0, as tuned-adm list): where it looked, on stderr */
		policy_err_not_found(policy_search_path(), "", &err);
		log_msg(LOG_WARNING, "%s", err.msg);
	}
	act = active_doc(o);
	active = json_string_value(json_object_get(act, "active"));
	if (o->json)
		rc = print_json("policy.list", list_json(e, n, active));
	else
		list_print(e, n, active);
	json_decref(act);
	free(e);
	return finish_stdout(rc);
}

/* ---- show --------------------------------------------------------------- */

static const struct opt_row show_opts[] = {
	{ OPT_JSON, OPT_OPTIONAL, NULL },
	OPT_TABLE_END,
};

const struct verb_spec policy_show_spec = {
	show_opts, VERB_ONE_WORD,
	"nodetune policy show NAME|FILE [--json]",
	"what a policy sets, and which file sets each key",
	"Loads the policy as --policy would (a NAME on the policy path, or a file; its\n"
	"includes resolved, everything validated) and prints the file it found, its\n"
	"summary, and every key it sets with its value and the file:line that set it.",
};

/* Show order: the files a policy includes before the file itself (the
 * order they merge in), each file's keys by line: file order. */
static int by_file_line(const void *a, const void *b, void *arg)
{
	const struct policy *p = arg;
	const struct policy_value *x = &p->v[*(const unsigned *)a], *y = &p->v[*(const unsigned *)b];
	int tx = !strcmp(x->file, p->file), ty = !strcmp(y->file, p->file), c;

	if (tx != ty)
		return tx - ty;
	if ((c = strcmp(x->file, y->file)))
		return c;
	return x->line - y->line;
}

/* The keys p sets (no [main] key), in file order, into keys (KNOB_COUNT
 * entries); their number. */
static unsigned show_keys(const struct policy *p, unsigned keys[KNOB_COUNT])
{
	unsigned n = 0;

	for (unsigned k = 0; k < knob_count; k++)
		if (p->v[k].value && knob_table[k].scope != KS_META)
			keys[n++] = k;
	qsort_r(keys, n, sizeof(keys[0]), by_file_line, (void *)p);
	return n;
}

static void show_print(const struct policy *p, const unsigned *keys, unsigned n)
{
	char line[8192];
	int width = 0;

	printf("policy:  %s\nfile:    %s\nsummary: %s\n", p->path, p->file,
	       policy_value(p, KNOB_MAIN_SUMMARY) ? policy_value(p, KNOB_MAIN_SUMMARY) : "");
	if (!n)
		printf("(no keys: changes nothing)\n");
	for (int pass = 0; pass < 2; pass++)
		for (unsigned i = 0; i < n; i++) {
			const struct knob *kn = &knob_table[keys[i]];
			const struct policy_value *v = &p->v[keys[i]];
			int len = snprintf(line, sizeof(line), "[%s] %s = %s", kn->section, kn->key, v->value);

			if (pass == 0 && len > width)
				width = len;
			if (pass == 1)
				printf("%-*s   %s:%d\n", width, line, v->file, v->line);
		}
}

int cmd_policy_show(struct opts *o)
{
	struct nt_err err = { 0 };
	struct policy *p;
	unsigned keys[KNOB_COUNT], n;
	json_t *arr;
	int rc = 0;

	if (!o->word) {
		log_msg(LOG_ERR, "expected a policy NAME or FILE (see nodetune policy list)");
		return EXIT_USAGE;
	}
	p = policy_load(o->word, policy_trust_flags(), &err);
	if (!p) {
		log_msg(LOG_ERR, "%s", err.msg);
		return exit_code_for(err.code);
	}
	n = show_keys(p, keys);
	if (!o->json) {
		show_print(p, keys, n);
		policy_free(p);
		return finish_stdout(0);
	}
	arr = json_array();
	for (unsigned i = 0; i < n; i++) {
		const struct policy_value *v = &p->v[keys[i]];

		json_array_append_new(arr, json_pack("{s:s, s:s, s:s, s:s, s:i}", "section", knob_table[keys[i]].section,
						     "key", knob_table[keys[i]].key, "value", v->value, "file", v->file,
						     "line", v->line));
	}
	rc = print_json("policy.show", json_pack("{s:s, s:s, s:s?, s:o}", "policy", p->path, "file", p->file, "summary",
				  policy_value(p, KNOB_MAIN_SUMMARY), "settings", arr));
	policy_free(p);
	return finish_stdout(rc);
}

/* ---- active ------------------------------------------------------------- */

static const struct opt_row active_opts[] = {
	{ OPT_STATE_DIR, OPT_OPTIONAL, "the state dir whose journal to read (default: both /run/nodetune and /var/lib/nodetune)" },
	{ OPT_SOCKET, OPT_OPTIONAL, NULL },
	{ OPT_JSON, OPT_OPTIONAL, NULL },
	OPT_TABLE_END,
};

const struct verb_spec policy_active_spec = {
	active_opts, VERB_NO_COMMAND,
	"nodetune policy active [--state-dir DIR] [--socket PATH] [--json]",
	"the policy applied here now: the daemon's or the journal's",
	"Asks the daemon over its status socket what it keeps applied, and reads the\n"
	"journals (nodetune apply's in /run/nodetune, the daemon's in /var/lib/nodetune,\n"
	"or --state-dir's): the policy each records, whether its apply completed, and\n"
	"how many originals it holds (what `nodetune revert` would restore).  Works with\n"
	"or without a daemon; reading a journal needs root.  Exit 0, also when nothing\n"
	"is applied.",
};

/* The journal in dir as a JSON object {state_dir, policy, committed,
 * changes, pid} or {state_dir, error}; NULL when there is none. */
static json_t *journal_json(const char *dir)
{
	char path[4096], why[320], *buf = NULL;
	struct journal_state st = { 0 };
	struct nt_err err = { 0 };
	size_t len;
	json_t *j;
	int r;

	snprintf(path, sizeof(path), "%s/journal", dir);
	r = userfile_read(path, 64u << 20, "a journal", NULL, &buf, &len, why, sizeof(why));
	if (r == -ENOENT || r == -ENOTDIR)
		return NULL;
	if (r < 0)
		return json_pack("{s:s, s:s}", "state_dir", dir, "error", why);
	r = journal_parse(buf, len, path, &st, &err);
	free(buf);
	if (r < 0)
		return json_pack("{s:s, s:s}", "state_dir", dir, "error", err.msg);
	j = json_pack("{s:s, s:s, s:b, s:i, s:I}", "state_dir", dir, "policy", st.policy ? st.policy : "",
		      "committed", st.committed, "changes", (int)st.n, "pid", (json_int_t)st.pid);
	journal_state_release(&st);
	return j;
}

/* What the daemon on socket says it keeps applied: {socket, policy,
 * sha256}, or NULL when none answers. */
static json_t *daemon_json(const char *socket)
{
	struct nt_err err = { 0 };
	char *reply = NULL;
	json_t *doc, *d;

	if (ctlsock_query(socket, "status", 2000, &reply, &err) < 0) {
		log_msg(LOG_DEBUG, "%s", err.msg);
		return NULL;
	}
	doc = json_loads(reply, 0, NULL);
	free(reply);
	d = json_pack("{s:s, s:O*, s:O*, s:O*}", "socket", socket, "policy", json_object_get(doc, "policy"), "sha256",
		      json_object_get(doc, "sha256"), "include", json_object_get(doc, "include"));
	json_decref(doc);
	return d;
}

static void print_active(const json_t *doc)
{
	const json_t *d = json_object_get(doc, "daemon"), *j;
	size_t i;

	if (json_is_object(d))
		printf("daemon:  %s%s%s%s (sha256 %.12s), via %s\n", json_string_value(json_object_get(d, "policy")),
		       json_object_get(d, "include") ? " (include = " : "",
		       json_object_get(d, "include") ? json_string_value(json_object_get(d, "include")) : "",
		       json_object_get(d, "include") ? ")" : "",
		       json_string_value(json_object_get(d, "sha256")), json_string_value(json_object_get(d, "socket")));
	else
		printf("daemon:  none answers on %s\n", json_string_value(json_object_get(doc, "socket")));
	json_array_foreach(json_object_get(doc, "journals"), i, j) {
		const char *dir = json_string_value(json_object_get(j, "state_dir"));

		if (json_object_get(j, "error"))
			printf("journal: %s: %s\n", dir, json_string_value(json_object_get(j, "error")));
		else
			printf("journal: %s: %s, %s, %lld originals kept\n", dir,
			       json_string_value(json_object_get(j, "policy")),
			       json_is_true(json_object_get(j, "committed")) ? "applied"
									      : "an apply that did not complete",
			       json_integer_value(json_object_get(j, "changes")));
	}
	if (!json_array_size(json_object_get(doc, "journals")))
		printf("journal: none (nothing applied by nodetune apply or a daemon)\n");
	printf("active:  %s\n", json_is_null(json_object_get(doc, "active")) ? "none"
		: json_string_value(json_object_get(doc, "active")));
}

/* What `policy active` reports, as its JSON document {socket, daemon,
 * journals, active}; NULL when out of memory. */
static json_t *active_doc(const struct opts *o)
{
	const char *socket = o->socket ? o->socket : CTLSOCK_DEFAULT_PATH;
	json_t *journals = json_array(), *d = daemon_json(socket), *active = NULL;

	for (const char *const *dir = cli_state_dirs; *dir; dir++) {
		const char *sd = o->given[OPT_STATE_DIR] ? o->state_dir : *dir;
		json_t *j = journal_json(sd);

		if (j && !active && json_is_true(json_object_get(j, "committed")))
			active = json_object_get(j, "policy");
		if (j)
			json_array_append_new(journals, j);
		if (o->given[OPT_STATE_DIR])
			break;
	}
	/* the daemon's word first: it keeps its policy applied; a policy file
	 * that only includes one NAME (what `policy use` writes) is that NAME */
	if (d)
		active = json_object_get(d, json_is_string(json_object_get(d, "include")) ? "include" : "policy");
	return json_pack("{s:s, s:o?, s:o, s:O?}", "socket", socket, "daemon", d, "journals", journals, "active",
			 active);
}

int cmd_policy_active(struct opts *o)
{
	json_t *doc = active_doc(o);
	int rc = 0;

	if (!doc) {
		log_msg(LOG_ERR, "out of memory");
		return EXIT_RUNTIME;
	}
	if (o->json) {
		rc = print_json("policy.active", doc);
	} else {
		print_active(doc);
		json_decref(doc);
	}
	return finish_stdout(rc);
}
