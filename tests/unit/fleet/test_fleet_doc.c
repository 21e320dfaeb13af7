/* SPDX-License-Identifier: MIT */
/* test_fleet_doc.c — the fleet's documents (fleet_doc.h): keys, hardware
 * classes of real topologies (../shared/topologies, skipped when absent), the
 * --waves parser and the wave planner, the store documents and their strict
 * parsers. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "fleet/fleet_doc.h"
#include "fleet_fixture.h"
#include "test_util.h"

/* ---- keys and classes ----------------------------------------------------- */

static void test_keys(void **state)
{
	char host[FLEET_NAME_MAX], buf[128];

	(void)state;
	assert_int_equal(fleet_key_parse("/nodetune/hosts/h1", host), FLEET_KEY_HOST);
	assert_string_equal(host, "h1");
	assert_int_equal(fleet_key_parse("/nodetune/hosts/h1/desired", host), FLEET_KEY_DESIRED);
	assert_int_equal(fleet_key_parse("/nodetune/hosts/h-1.a/status", host), FLEET_KEY_STATUS);
	assert_string_equal(host, "h-1.a");
	assert_int_equal(fleet_key_parse("/nodetune/hosts/h1/other", host), FLEET_KEY_OTHER);
	assert_int_equal(fleet_key_parse("/nodetune/hosts/../x", host), FLEET_KEY_OTHER);
	assert_int_equal(fleet_key_parse("/nodetune/rollouts/r", host), FLEET_KEY_OTHER);
	assert_string_equal(fleet_doc_host_key(buf, sizeof(buf), "h2", "shadow"), "/nodetune/hosts/h2/shadow");
	assert_string_equal(fleet_rollout_key(buf, sizeof(buf), "r", true), "/nodetune/rollouts/r/leader");
	assert_false(fleet_name_valid(""));
	assert_false(fleet_name_valid("a/b"));
	assert_false(fleet_name_valid(".hidden"));
	assert_true(fleet_name_valid("gpu-host_07.dc1"));
}

/* The class of a topology file in ../shared/topologies (or the fixtures). */
static bool class_of(const char *rel, struct fleet_class *c)
{
	char path[4096];
	struct nt_err err = { 0 };
	struct topo *t;

	if (access(test_path(path, sizeof(path), rel), R_OK) < 0)
		return false;
	t = topo_load_xml(path, &err);
	assert_non_null(t);
	assert_int_equal(fleet_class_of(t, c), 0);
	topo_free(t);
	return true;
}

static void test_classes(void **state)
{
	static const struct { const char *file, *label; } want[] = {
		{ "../shared/topologies/g4dnmetal.xml", "2s-2n-48c-8gpu-T4" },
		{ "../shared/topologies/nvidiaDGX2.xml", "2s-2n-4c-16gpu-V100" },
		{ "../shared/topologies/96em64t-4n4d3ca2co-pci.xml", "16s-4n-96c-0gpu" },
		{ "tests/fixtures/topologies/hgx-2s8g8n-synthetic.xml", "2s-2n-48c-8gpu-H100" },
		{ "tests/fixtures/topologies/epyc-2s-numa0-8-mi300-synthetic.xml", "2s-2n-32c-4gpu-MI300X" },
	};
	struct fleet_class c[5], again;
	unsigned found = 0;

	(void)state;
	for (unsigned i = 0; i < 5; i++) {
		if (!class_of(want[i].file, &c[i])) {
			memset(&c[i], 0, sizeof(c[i]));
			continue;
		}
		found++;
		assert_string_equal(c[i].label, want[i].label);
		assert_int_equal(strlen(c[i].id), FLEET_CLASS_LEN);
		assert_true(class_of(want[i].file, &again));          /* the same shape, the same id */
		assert_string_equal(again.id, c[i].id);
		for (unsigned k = 0; k < i; k++)
			if (c[k].id[0])
				assert_string_not_equal(c[k].id, c[i].id);
	}
	if (found < 3)
		test_need("../shared", "../shared/topologies is absent (%u of 5 topologies found)", found);
}

/* ---- waves ------------------------------------------------------------------ */

static void test_waves_parse(void **state)
{
	struct fleet_wave_spec w[FLEET_WAVES_MAX];
	struct nt_err err = { 0 };
	unsigned n;

	(void)state;
	assert_int_equal(fleet_waves_parse("1/class,1%,10%,50%,100%", w, &n, &err), 0);
	assert_int_equal(n, 5);
	assert_true(w[0].per_class);
	assert_true(w[2].fraction > 0.099 && w[2].fraction < 0.101);
	assert_int_equal(fleet_waves_parse("100%", w, &n, &err), 0);
	assert_int_equal(fleet_waves_parse("1/class,50%", w, &n, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "must be 100%"));
	assert_int_equal(fleet_waves_parse("10%,1/class,100%", w, &n, &err), -EINVAL);
	assert_int_equal(fleet_waves_parse("50%,10%,100%", w, &n, &err), -EINVAL);
	assert_int_equal(fleet_waves_parse("1/class,,100%", w, &n, &err), -EINVAL);
	assert_int_equal(fleet_waves_parse("0%,100%", w, &n, &err), -EINVAL);
	assert_int_equal(fleet_waves_parse("abc", w, &n, &err), -EINVAL);
}


static void test_plan_waves(void **state)
{
	struct fleet_rollout r;
	unsigned seen[200] = { 0 }, total = 0;

	(void)state;
	plan(&r, 8, 2, "1/class,50%,100%");
	assert_int_equal(r.n_waves, 3);
	assert_int_equal(r.waves[0].n, 2);
	assert_string_not_equal(r.waves[0].hosts[0].class_id, r.waves[0].hosts[1].class_id);
	assert_int_equal(r.waves[1].n, 2);
	assert_int_equal(r.waves[2].n, 4);
	fleet_rollout_release(&r);

	/* 200 hosts, 3 classes: 3, then 1% (2 done already: at least one more), 10% (to 20), 50%, 100% */
	plan(&r, 200, 3, "1/class,1%,10%,50%,100%");
	assert_int_equal(r.n_waves, 5);
	assert_int_equal(r.waves[0].n, 3);
	assert_int_equal(r.waves[1].n, 1);
	assert_int_equal(r.waves[2].n, 16);
	assert_int_equal(r.waves[3].n, 80);
	assert_int_equal(r.waves[4].n, 100);
	for (unsigned w = 0; w < r.n_waves; w++)
		for (unsigned i = 0; i < r.waves[w].n; i++) {
			unsigned k = (unsigned)atoi(r.waves[w].hosts[i].host + 1);

			seen[k]++;
			total++;
		}
	assert_int_equal(total, 200);
	for (unsigned k = 0; k < 200; k++)
		assert_int_equal(seen[k], 1);                       /* every host in exactly one wave */
	/* a percentage wave mixes the classes */
	assert_string_not_equal(r.waves[2].hosts[0].class_id, r.waves[2].hosts[1].class_id);
	fleet_rollout_release(&r);

	/* one host: everything in the first wave, the rest dropped */
	plan(&r, 1, 1, "1/class,10%,100%");
	assert_int_equal(r.n_waves, 1);
	fleet_rollout_release(&r);
}

/* ---- documents -------------------------------------------------------------- */

static void test_documents(void **state)
{
	struct fleet_desired d = { .mode = FLEET_MODE_GATE, .gate_budget = 30 }, back;
	struct fleet_policy_doc p = { 0 };
	struct nt_err err = { 0 };
	char sha[FLEET_SHA_LEN + 1], *s;

	(void)state;
	snprintf(d.rollout, sizeof(d.rollout), "r1");
	snprintf(d.sha256, sizeof(d.sha256), SHA_A);
	snprintf(d.gate, sizeof(d.gate), "steps20");
	s = fleet_desired_json(&d, false);
	/* the gate travels as its name and budget: no command */
	assert_non_null(strstr(s, "\"gate\":{\"allow_inconclusive\":false,\"budget\":30.0,\"name\":\"steps20\"}"));
	assert_null(strstr(s, "cmd"));
	assert_int_equal(fleet_doc_parse_desired("k", s, strlen(s), &back, &err), 0);
	assert_int_equal(back.mode, FLEET_MODE_GATE);
	assert_string_equal(back.gate, "steps20");
	assert_true(back.gate_budget == 30);
	free(s);
	assert_int_equal(fleet_doc_parse_desired("k", "not json", 8, &back, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "k: not valid JSON"));
	/* the parser quotes the input near its error: a raw newline or escape
	 * there is shown as '?', the message stays one line (fuzz_fleet) */
	assert_int_equal(fleet_doc_parse_desired("k", "{\"a\\\n\033\":1}", 10, &back, &err), -EINVAL);
	assert_null(strchr(err.msg, '\n'));
	assert_null(strchr(err.msg, '\033'));
	assert_non_null(strstr(err.msg, "invalid escape near '\"a\\?' (byte 5)"));
	{
		/* a host's text reaches `fleet status` tables and logs: its
		 * control characters are shown as '?', UTF-8 stays */
		static const char st[] = "{\"host\":\"h1\",\"state\":\"failed\",\"label\":\"caf\u00e9\","
					 "\"error\":\"a\\nb\\u001b[2J\\t\\u007f\"}";
		struct fleet_status fs;

		assert_int_equal(fleet_doc_parse_status("k", st, sizeof(st) - 1, &fs, &err), 0);
		assert_string_equal(fs.error, "a?b?[2J?" "?");
		assert_string_equal(fs.label, "caf\xc3\xa9");
	}
	assert_int_equal(fleet_doc_parse_desired("k", "{\"rollout\":\"a/b\",\"sha256\":\"x\"}", 31, &back, &err), -EINVAL);
	assert_int_equal(fleet_doc_parse_desired("k", "{\"rollout\":\"r\",\"mode\":\"gate\",\"sha256\":\"" SHA_A "\"}", 107,
					     &back, &err), -EINVAL);
	/* a gate is a name the host maps: the old command string is no gate,
	 * and a name is checked as the host's gates_lookup would */
	{
		static const char *const bad_gates[] = {
			"{\"cmd\":\"sh -c reboot\",\"budget\":30}",      /* the command of old: no name */
			"{\"name\":\"../../bin/sh\"}",
			"{\"name\":\"Steps\"}",
			"{\"name\":\"\"}",
			"{\"name\":7}",
		};
		char doc[512];

		for (size_t i = 0; i < sizeof(bad_gates) / sizeof(bad_gates[0]); i++) {
			int n = snprintf(doc, sizeof(doc), "{\"rollout\":\"r\",\"mode\":\"gate\",\"sha256\":\"" SHA_A
					 "\",\"gate\":%s}", bad_gates[i]);

			assert_int_equal(fleet_doc_parse_desired("k", doc, (size_t)n, &back, &err), -EINVAL);
			assert_non_null(strstr(err.msg, "\"name\""));
		}
	}

	s = fleet_policy_doc_json("thp.conf", "[thp]\nenabled = madvise\n", 24, sha);
	assert_int_equal(fleet_doc_parse_policy_doc("k", s, strlen(s), &p, &err), 0);
	assert_int_equal(p.content_len, 24);
	assert_string_equal(p.sha256, sha);
	fleet_policy_doc_release(&p);
	free(s);
	s = "{\"name\":\"x\",\"sha256\":\"" SHA_A "\",\"content\":\"W3RocF0K\"}";    /* "[thp]\n": another sha */
	assert_int_equal(fleet_doc_parse_policy_doc("k", s, strlen(s), &p, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "its sha256 is not"));
	s = "{\"name\":\"x\",\"sha256\":\"" SHA_A "\",\"content\":\"@@\"}";
	assert_int_equal(fleet_doc_parse_policy_doc("k", s, strlen(s), &p, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "not valid base64"));
}

/* The store layout of a rollout: a head without hosts and pages of
 * page_hosts hosts each, which give back the whole rollout; a page at
 * another key, of another rollout or short of a host is refused. */
static void test_pages(void **state)
{
	struct fleet_rollout r, back = { 0 };
	struct fleet_layout l, lb = { 0 };
	struct nt_err err = { 0 };
	unsigned w, p;
	char *head, *page, *full, *again, key[160];

	(void)state;
	plan(&r, 7, 1, "50%,100%");                          /* waves of 4 and 3 hosts */
	assert_int_equal(r.n_waves, 2);
	r.waves[1].hosts[2].state = FLEET_R_VERIFIED;
	r.waves[1].hosts[2].note = strdup("a note");
	assert_int_equal(fleet_layout_init(&l, &r, 3), 0);
	assert_int_equal(l.n_pages, 3);                      /* 3+1, 3 */
	assert_int_equal(fleet_page_of(&r, &l, 1, 2), 2);
	assert_int_equal(fleet_page_of(&r, &l, 0, 3), 1);
	assert_true(fleet_page_locate(&r, &l, 2, &w, &p));
	assert_true(w == 1 && p == 0);
	assert_true(fleet_page_locate(&r, &l, 1, &w, &p));
	assert_true(w == 0 && p == 1);
	assert_false(fleet_page_locate(&r, &l, 3, &w, &p));
	assert_string_equal(fleet_page_key(key, sizeof(key), "r", 1, 0), "/nodetune/rollouts/r/pages/1.0");
	for (unsigned g = 0; g < l.n_pages; g++)
		l.seq[g] = 10 + g;
	head = fleet_rollout_head_json(&r, &l);
	assert_null(strstr(head, "\"host\""));
	assert_non_null(strstr(head, "\"pages\":[12]"));
	assert_non_null(strstr(head, "\"counts\":{\"pending\":2,\"verified\":1}"));
	assert_int_equal(fleet_doc_parse_rollout_head("k", head, strlen(head), &back, &lb, &err), 0);
	assert_int_equal(lb.page_hosts, 3);
	assert_int_equal(lb.n_pages, 3);
	assert_true(lb.seq[1] == 11 && lb.seq[2] == 12);
	for (unsigned g = 0; g < l.n_pages; g++) {
		page = fleet_page_json(&r, &l, g);
		assert_int_equal(fleet_doc_parse_page("k", page, strlen(page), &back, &lb, g, &err), 0);
		if (g < 2)      /* another page's key */
			assert_int_equal(fleet_doc_parse_page("k", page, strlen(page), &back, &lb, g + 1, &err), -EINVAL);
		free(page);
	}
	full = fleet_rollout_json(&r);
	again = fleet_rollout_json(&back);
	assert_string_equal(full, again);                    /* head + pages = the rollout */
	page = fleet_page_json(&r, &l, 2);
	snprintf(back.name, sizeof(back.name), "other");
	assert_int_equal(fleet_doc_parse_page("k", page, strlen(page), &back, &lb, 2, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "not this rollout's page"));
	free(page);
	free(full);
	free(again);
	free(head);
	fleet_layout_release(&l);
	fleet_layout_release(&lb);
	fleet_rollout_release(&back);
	fleet_rollout_release(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_keys),
		cmocka_unit_test(test_classes),
		cmocka_unit_test(test_waves_parse),
		cmocka_unit_test(test_plan_waves),
		cmocka_unit_test(test_documents),
		cmocka_unit_test(test_pages),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
