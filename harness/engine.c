/* SPDX-License-Identifier: MIT */
/* engine.c — nodetune-harness: data-parallel training of dlrm-small or mlp,
 * the workload nodetune runs to prove a policy and catch regressions.
 *
 * The engine owns what every device shares; a trainer row (trainer.h)
 * fills in what differs.  Divisions: options (one table); set-up (comm,
 * BLAS threads, model, the initial broadcast, loader, the trainer row,
 * --inject); the step loop; the summary (per-rank skew, JSON, the human
 * line, weights); engine_main.
 *
 * Launch: alone (one process), `mpirun -np N nodetune-harness ...`, or in a
 * torchrun environment (TCP rendezvous).  --device cuda trains on the GPU
 * (gpu_train.h): the same model and weights, NCCL for the gradients.
 * Exit codes: 0 done; 2 bad flags or bad input data (one line saying what);
 * 3 runtime failure (no usable GPU, a peer that stopped responding, ...).
 */
#include "engine.h"

#include <errno.h>
#include <getopt.h>
#include <malloc.h>
#include <math.h>
#include <sched.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>
#include <zstd.h>

#include "comm.h"
#include "cuda_backend.h"
#include "data.h"
#include "inject.h"
#include "loader.h"
#include "nt_duration.h"
#include "model.h"
#include "stepreport.h"
#include "trainer.h"
#include "nt_clock.h"

#ifndef NODETUNE_VERSION
#error "NODETUNE_VERSION comes from the file VERSION (Makefile)"
#endif

extern void openblas_set_num_threads(int);
extern char *openblas_get_config(void);

enum { EXIT_USAGE = 2, EXIT_RUNTIME = 3 };

/* The trainer rows, found by --device. */
static const struct trainer_ops *const trainers[] = { &cpu_trainer, &cuda_trainer };

static void die_usage(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

static void die_usage(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "nodetune-harness: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, " (see --help)\n");
	exit(EXIT_USAGE);
}

void trainer_inject_compute(struct inject *inj, int s, double compute_ms, struct step_rec *r)
{
	/* an injected slowdown stretches compute: count it there */
	double ti = nt_mono_ms();

	inject_after_compute(inj, s, compute_ms);
	r->bwd += nt_mono_ms() - ti;
}

/* ---- options ----------------------------------------------------------- */

static void usage(void)
{
	printf("Usage: nodetune-harness [OPTIONS]          (one process)\n"
	       "       mpirun -np N nodetune-harness [OPTIONS]\n"
	       "\n"
	       "Data-parallel training with bucketed all-reduce overlapped with backward.\n"
	       "\n"
	       "  --model dlrm-small|mlp   model (default dlrm-small)\n"
	       "  --mlp-depth D --mlp-width W   the mlp's hidden layers (default 8 x 1024)\n"
	       "  --batch B                samples per rank per micro-batch (default 2048)\n"
	       "  --steps N --warmup W     measured and discarded steps (default 50, 5)\n"
	       "  --accum K                micro-batches per step; all-reduce on the last only (1)\n"
	       "  --lr X --seed S          SGD learning rate (0.1), seed (1)\n"
	       "  --bucket-mb M            bucket cap in MB (25); the first bucket is 1 MB\n"
	       "  --first-bucket-mb M      first bucket cap (1)\n"
	       "  --no-overlap             all-reduce after backward (the baseline)\n"
	       "  --workers N --prefetch D loader threads (CPU 2; GPU the rank's CPUs - 3,\n"
	       "                           2 to 8) and pinned buffers (4)\n"
	       "  --compress zstd|none     batch compression in the loader (none)\n"
	       "  --no-pin                 a fresh pageable buffer per batch\n"
	       "  --frozen-batch           one batch, reused: the loader roofline\n"
	       "  --data DIR               read shards written by --write-data DIR\n"
	       "  --write-data DIR --samples N   write N synthetic samples as shards, exit\n"
	       "  --rows N                 embedding rows per table (10000)\n"
	       "  --device cpu|cuda        where to train (cpu)\n"
	       "  --comm auto|mpi|tcp|none collectives (auto: MPI under mpirun, TCP under torchrun)\n"
	       "  --timeout DURATION       a peer silent this long is fatal (default 5m)\n"
	       "  --blas-threads N         OpenBLAS threads (default: this rank's CPUs)\n"
	       "  --json FILE|-            per-step records and a summary (rank 0)\n"
	       "  --dump-weights FILE      raw float32 weights after training (rank 0)\n"
	       "  --inject KIND            reproduce a cause on purpose: thp-compaction, tlb-shootdown,\n"
	       "                           noisy-neighbor, remote-numa, alloc-churn, host-sync, slow:PCT\n"
	       "  --inject-rank N          only on rank N (a straggler; default: every rank)\n"
	       "  --quiet                  no human summary on stderr\n"
	       "  --version                build features\n");
}

static void version(void)
{
	printf("nodetune-harness %s\n", NODETUNE_VERSION);
	printf("cuda: %s\n", cuda_build_info());
	printf("nccl: %s\n", cuda_nccl_info());
	printf("mpi: %s\n", comm_mpi_version());
	printf("blas: OpenBLAS (%s)\n", openblas_get_config());
	printf("zstd: %s\n", ZSTD_versionString());
}

/* Where an option's value goes: a row of options[] (what varies is data). */
enum opt_type {
	OPT_INT,                   /* a whole number in [lo, hi], into an int */
	OPT_ULL,                   /* the same, into an unsigned long long */
	OPT_REAL,                  /* a number in [rlo, rhi], into a double */
	OPT_DURATION,              /* a duration (nt_duration.h) in [rlo, rhi] seconds, into a double */
	OPT_STR,                   /* the string itself */
	OPT_CHOICE,                /* one of choices[]: the string, or set() */
	OPT_CLEAR,                 /* no value: the bool becomes false */
	OPT_SET,                   /* no value: the bool becomes true */
	OPT_ACTION,                /* no value: set() (--help, --version) */
};

struct opt {
	const char *name;          /* without the leading "--" */
	enum opt_type type;
	size_t off;                /* of the field in struct trainer_config */
	long long lo, hi;
	double rlo, rhi;
	const char *const *choices;        /* NULL-terminated */
	void (*set)(struct trainer_config *cfg, int choice, const char *v);
};

static const char *const model_names[] = { [MODEL_DLRM_SMALL] = "dlrm-small", [MODEL_MLP] = "mlp", NULL };
static const char *const compressions[] = { "zstd", "none", NULL };
static const char *const devices[] = { "cpu", "cuda", NULL };
static const char *const comms[] = { "auto", "mpi", "tcp", "none", NULL };

static void set_model(struct trainer_config *cfg, int choice, const char *v)
{
	cfg->model.kind = (enum model_kind)choice;
	cfg->model_name = v;
}

static void set_compress(struct trainer_config *cfg, int choice, const char *v)
{
	(void)v;
	if (choice == 0)
		cfg->zstd_level = cfg->zstd_level ? cfg->zstd_level : 1;
	else
		cfg->zstd_level = 0;
}

static void act_help(struct trainer_config *cfg, int choice, const char *v)
{
	(void)cfg, (void)choice, (void)v;
	usage();
	exit(0);
}

static void act_version(struct trainer_config *cfg, int choice, const char *v)
{
	(void)cfg, (void)choice, (void)v;
	version();
	exit(0);
}

#define F(field) offsetof(struct trainer_config, field)
#define O_INT(n, f, l, h) { .name = n, .type = OPT_INT, .off = F(f), .lo = (l), .hi = (h) }
#define O_ULL(n, f, l, h) { .name = n, .type = OPT_ULL, .off = F(f), .lo = (l), .hi = (h) }
#define O_REAL(n, f, l, h) { .name = n, .type = OPT_REAL, .off = F(f), .rlo = (l), .rhi = (h) }
#define O_DURATION(n, f, l, h) { .name = n, .type = OPT_DURATION, .off = F(f), .rlo = (l), .rhi = (h) }
#define O_STR(n, f) { .name = n, .type = OPT_STR, .off = F(f) }
#define O_CHOICE(n, f, c, s) { .name = n, .type = OPT_CHOICE, .off = F(f), .choices = (c), .set = (s) }
#define O_FLAG(n, t, f) { .name = n, .type = (t), .off = F(f) }
#define O_ACTION(n, s) { .name = n, .type = OPT_ACTION, .set = (s) }

static const struct opt options[] = {
	O_CHOICE("model", model, model_names, set_model),
	O_INT("mlp-depth", model.mlp_depth, 1, 1000),
	O_INT("mlp-width", model.mlp_width, 1, 65536),
	O_INT("batch", batch, 1, 1 << 20),
	O_INT("steps", steps, 1, 10000000),
	O_INT("warmup", warmup, 0, 1000000),
	O_INT("accum", accum, 1, 1024),
	O_REAL("lr", lr, 0, 1e6),
	O_ULL("seed", seed, 0, 1LL << 62),
	O_REAL("bucket-mb", bucket_mb, 0.001, 1e6),
	O_REAL("first-bucket-mb", first_bucket_mb, 0.001, 1e6),
	O_FLAG("no-overlap", OPT_CLEAR, overlap),
	O_INT("workers", workers, 1, 256),
	O_INT("prefetch", prefetch, 1, 1024),
	O_CHOICE("compress", zstd_level, compressions, set_compress),
	O_INT("zstd-level", zstd_level, 1, 19),
	O_FLAG("no-pin", OPT_CLEAR, pin),
	O_FLAG("frozen-batch", OPT_SET, frozen),
	O_STR("data", data),
	O_STR("write-data", write_data),
	O_ULL("samples", samples, 1, 1LL << 40),
	O_INT("rows", model.rows, 1, 100000000),
	O_CHOICE("device", device, devices, NULL),
	O_CHOICE("comm", comm, comms, NULL),
	O_DURATION("timeout", timeout_s, 1, 86400 * 7),
	O_INT("blas-threads", blas_threads, 1, 4096),
	O_STR("json", json),
	O_STR("dump-weights", dump),
	O_FLAG("quiet", OPT_SET, quiet),
	O_STR("inject", inject),
	O_INT("inject-rank", inject_rank, 0, 1 << 20),
	O_ACTION("version", act_version),
	O_ACTION("help", act_help),
};

#define N_OPTIONS (sizeof(options) / sizeof(options[0]))

static long long num(const char *opt, const char *v, long long lo, long long hi)
{
	char *end;
	long long x;

	errno = 0;
	x = strtoll(v, &end, 10);
	if (errno || end == v || *end || x < lo || x > hi)
		die_usage("%s '%s': expected a whole number from %lld to %lld", opt, v, lo, hi);
	return x;
}

static double fnum(const char *opt, const char *v, double lo, double hi)
{
	char *end;
	double x;

	errno = 0;
	x = strtod(v, &end);
	if (errno || end == v || *end || !(x >= lo && x <= hi))
		die_usage("%s '%s': expected a number from %g to %g", opt, v, lo, hi);
	return x;
}

/* A duration in [lo, hi] seconds, or a usage error with examples from it. */
static double duration(const char *opt, const char *v, double lo, double hi)
{
	char expected[160];
	double x;

	if (nt_duration_parse(v, lo, hi, &x) == 0)
		return x;
	nt_duration_expected(lo, hi, expected, sizeof(expected));
	die_usage("%s '%s': expected %s", opt, v, expected);
}

/* The index of v in choices, or a usage error listing them ("a, b or c"). */
static int choice(const char *opt, const char *v, const char *const *choices)
{
	char list[256] = "";
	size_t len = 0;
	int n = 0;

	for (; choices[n]; n++)
		if (!strcmp(v, choices[n]))
			return n;
	for (int i = 0; i < n && len < sizeof(list); i++)
		len += (size_t)snprintf(list + len, sizeof(list) - len, "%s%s", i == 0 ? "" : i == n - 1 ? " or " : ", ",
					choices[i]);
	die_usage("%s '%s': expected %s", opt, v, list);
}

static void opt_apply(const struct opt *o, const char *v, struct trainer_config *cfg)
{
	char *field = (char *)cfg + o->off, name[40];
	int i;

	snprintf(name, sizeof(name), "--%s", o->name);
	switch (o->type) {
	case OPT_INT: *(int *)field = (int)num(name, v, o->lo, o->hi); break;
	case OPT_ULL: *(unsigned long long *)field = (unsigned long long)num(name, v, o->lo, o->hi); break;
	case OPT_REAL: *(double *)field = fnum(name, v, o->rlo, o->rhi); break;
	case OPT_DURATION: *(double *)field = duration(name, v, o->rlo, o->rhi); break;
	case OPT_STR: *(const char **)field = v; break;
	case OPT_CHOICE:
		i = choice(name, v, o->choices);
		if (o->set)
			o->set(cfg, i, v);
		else
			*(const char **)field = v;
		break;
	case OPT_CLEAR: *(bool *)field = false; break;
	case OPT_SET: *(bool *)field = true; break;
	case OPT_ACTION: o->set(cfg, 0, v); break;
	}
}

static void parse(int argc, char **argv, struct trainer_config *cfg)
{
	struct option lo[N_OPTIONS + 1];
	int c;

	for (size_t i = 0; i < N_OPTIONS; i++) {
		enum opt_type t = options[i].type;

		lo[i] = (struct option){ options[i].name, t != OPT_CLEAR && t != OPT_SET && t != OPT_ACTION, NULL,
					 256 + (int)i };
	}
	lo[N_OPTIONS] = (struct option){ 0 };
	*cfg = (struct trainer_config){
		.model = { MODEL_DLRM_SMALL, 8, 1024, DLRM_ROWS }, .model_name = "dlrm-small",
		.batch = 2048, .steps = 50, .warmup = 5, .accum = 1, .workers = 0, .prefetch = 4,
		.lr = 0.1, .bucket_mb = 25, .first_bucket_mb = 1, .timeout_s = 300, .seed = 1,
		.overlap = true, .pin = true, .device = "cpu", .comm = "auto", .inject_rank = -1,
	};
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", lo, NULL)) != -1) {
		if (c == 'h')
			act_help(cfg, 0, NULL);
		else if (c == ':')
			die_usage("option '%s' needs a value", argv[optind - 1]);
		else if (c < 256 || c >= 256 + (int)N_OPTIONS)
			die_usage("unknown option '%s'", argv[optind - 1]);
		opt_apply(&options[c - 256], optarg, cfg);
	}
	if (optind < argc)
		die_usage("unexpected argument '%s'", argv[optind]);
	if (cfg->write_data && !cfg->samples)
		die_usage("--write-data needs --samples N");
	if (cfg->data && cfg->frozen)
		die_usage("--data and --frozen-batch are mutually exclusive");
	if (cfg->model.kind == MODEL_MLP && cfg->data)
		die_usage("--data holds dlrm-small samples; the mlp trains on synthetic data");
}

static const struct trainer_ops *trainer_of(const char *device)
{
	for (size_t i = 0; i < sizeof(trainers) / sizeof(trainers[0]); i++)
		if (!strcmp(trainers[i]->name, device))
			return trainers[i];
	return NULL;
}

/* ---- set-up ------------------------------------------------------------ */

struct counters {
	long minflt, majflt, nvcsw, nivcsw;
	double runq_wait_ms;       /* the training thread's run-queue wait */
};

/* One run: the state every phase reads. */
struct run {
	struct trainer_config cfg;
	const struct trainer_ops *ops;
	struct comm comm;
	bool comm_up;
	struct model *m;
	struct loader *ld;
	struct trainer *tr;
	struct inject *inj;
	struct nt_err inject_note;   /* what --inject skipped on this host */
	struct step_rec *recs;
	double *ranks;             /* [world] compute p50, [world] data wait p50 */
	double final_loss, t_measured;
	struct counters c0;        /* when the warm-up ended */
	int *argc;                 /* main's, for MPI_Init */
	char ***argv;
	bool abort;                /* a failed rank takes the job down */
};

/* "nodetune-harness: rank R: MSG"; returns rc. */
static int rank_fail(struct run *r, int rc, bool abort, const char *msg)
{
	fprintf(stderr, "nodetune-harness: rank %d: %s\n", r->comm.rank, msg);
	r->abort = r->abort || abort;
	return rc;
}

static struct data_spec spec_of(const struct trainer_config *cfg)
{
	return (struct data_spec){
		.dense_width = (uint32_t)model_dense_width(&cfg->model),
		.sparse_width = cfg->model.kind == MODEL_DLRM_SMALL ? DLRM_TABLES * DLRM_BAG : 0,
		.rows = (uint32_t)cfg->model.rows, .seed = cfg->seed,
	};
}

/* The CPUs this rank may use; when it is unbound (its set is every online
 * CPU), split among the local ranks; at least 1. */
static int rank_cpus(const struct comm *c)
{
	cpu_set_t set;
	int n;

	if (sched_getaffinity(0, sizeof(set), &set) < 0)
		return 1;
	n = CPU_COUNT(&set);
	if (n == sysconf(_SC_NPROCESSORS_ONLN) && c->local_size > 1)
		n /= c->local_size;
	return n > 0 ? n : 1;
}

/* The device usable, comm up, this rank bound to its device. */
static int setup_comm(struct run *r)
{
	struct nt_err err = { 0 };
	int cpus;

	if (r->ops->probe && r->ops->probe(&err) < 0) {
		fprintf(stderr, "nodetune-harness: %s\n", err.msg);
		return EXIT_RUNTIME;
	}
	if (comm_init(&r->comm, r->cfg.comm, r->argc, r->argv, r->cfg.timeout_s, &err)) {
		fprintf(stderr, "nodetune-harness: %s\n", err.msg);
		return EXIT_RUNTIME;
	}
	r->comm_up = true;
	/* this rank's device, before anything allocates pinned or device
	 * memory */
	if (r->ops->select && r->ops->select(&r->comm, &err))
		return rank_fail(r, EXIT_RUNTIME, false, err.msg);
	cpus = rank_cpus(&r->comm);
	openblas_set_num_threads(r->cfg.blas_threads ? r->cfg.blas_threads : cpus);
	/* no --workers: from the CPUs this rank has (the --json summary's
	 * loader.workers says the count) */
	if (!r->cfg.workers)
		r->cfg.workers = loader_default_workers(cpus, r->ops == &cuda_trainer);
	return 0;
}

/* The model, with every rank on rank 0's weights, as DDP starts. */
static int setup_model(struct run *r)
{
	struct nt_err err = { 0 };
	size_t n_w;
	float *w;
	int failed;

	r->m = model_create(&r->cfg.model, r->cfg.batch, r->cfg.seed);
	if (!r->m) {
		fprintf(stderr, "nodetune-harness: rank %d: cannot build the model (out of memory?)\n", r->comm.rank);
		return EXIT_RUNTIME;
	}
	w = model_weights(r->m, &n_w);
	/* a peer stopped or lost here must not hang this rank for ever */
	comm_deadline_set(r->cfg.timeout_s, r->comm.world > 1 ? r->comm.rank : -1,
			  "the broadcast of the initial weights");
	failed = r->comm.ops->bcast(&r->comm, w, n_w * sizeof(float), 0, &err);
	comm_deadline_clear();
	if (failed)
		return rank_fail(r, EXIT_RUNTIME, false, err.msg);
	return 0;
}

/* The loader and the trainer row over it. */
static int setup_trainer(struct run *r)
{
	const struct trainer_config *cfg = &r->cfg;
	struct loader_config lc = {
		.spec = spec_of(cfg), .batch = cfg->batch, .rank = r->comm.rank, .world = r->comm.world,
		.workers = cfg->workers, .prefetch = cfg->prefetch, .zstd_level = cfg->zstd_level,
		.pin = cfg->pin, .frozen = cfg->frozen, .data_dir = cfg->data,
		.host_alloc = r->ops->host_alloc, .host_free = r->ops->host_free,
	};
	struct nt_err err = { 0 };
	struct trainer_info ti = { 0 };

	r->ld = loader_start(&lc, &err);
	if (!r->ld)
		return rank_fail(r, EXIT_USAGE, false, err.msg);
	r->tr = r->ops->create(cfg, r->m, &r->comm, r->ld, &err);
	if (!r->tr)
		return rank_fail(r, EXIT_RUNTIME, true, err.msg);
	r->ops->info(r->tr, &ti);
	if (r->comm.rank == 0 && !cfg->quiet && ti.gpu_name)
		fprintf(stderr, "nodetune-harness: training on %s\n", ti.gpu_name);
	return 0;
}

/* --inject on this rank, and the per-step records. */
static int setup_inject(struct run *r)
{
	size_t n_w;
	float *w = model_weights(r->m, &n_w);

	if (r->cfg.inject_rank >= 0 && r->cfg.inject_rank != r->comm.rank) {
		inject_stop(r->inj);    /* a straggler elsewhere: this rank runs clean */
		r->inj = NULL;
	}
	if (inject_start(r->inj, w, model_grads(r->m), n_w * sizeof(float), &r->inject_note) < 0) {
		fprintf(stderr, "nodetune-harness: rank %d: --inject %s: %s\n", r->comm.rank, r->cfg.inject,
			r->inject_note.msg[0] ? r->inject_note.msg : "cannot start");
		return EXIT_RUNTIME;
	}
	if (r->inject_note.msg[0] && r->comm.rank == 0)
		fprintf(stderr, "nodetune-harness: %s\n", r->inject_note.msg);
	r->recs = calloc((size_t)(r->cfg.warmup + r->cfg.steps), sizeof(*r->recs));
	if (!r->recs)
		return rank_fail(r, EXIT_RUNTIME, false, "out of memory");
	return 0;
}

/* ---- the step loop ------------------------------------------------------- */

static struct counters rusage_now(void)
{
	struct rusage ru;
	unsigned long long run = 0, wait = 0;
	FILE *f = fopen("/proc/thread-self/schedstat", "re");

	getrusage(RUSAGE_SELF, &ru);
	if (f) {
		if (fscanf(f, "%llu %llu", &run, &wait) != 2)
			wait = 0;
		fclose(f);
	}
	return (struct counters){ ru.ru_minflt, ru.ru_majflt, ru.ru_nvcsw, ru.ru_nivcsw, wait / 1e6 };
}

/* warmup + steps steps. */
static int train(struct run *r)
{
	const struct trainer_ops *ops = r->ops;
	int total = r->cfg.warmup + r->cfg.steps, report = stepreport_open();
	struct nt_err err = { 0 };

	for (int s = 0; s < total; s++) {
		struct step_rec *rec = &r->recs[s];
		double t0 = nt_mono_ms();
		bool bad_data = false;

		if (ops->step(r->tr, s, r->inj, rec, &bad_data, &err)) {
			stepreport_close(report);
			return rank_fail(r, bad_data ? EXIT_USAGE : EXIT_RUNTIME, true, err.msg);
		}
		rec->total = nt_mono_ms() - t0;
		if (ops->loss(r->tr, rec, &err)) {
			stepreport_close(report);
			return rank_fail(r, EXIT_RUNTIME, true, err.msg);
		}
		r->final_loss = rec->loss;
		if (s >= r->cfg.warmup) {
			r->t_measured += rec->total;
			stepreport_write(&report, s - r->cfg.warmup, r->comm.rank,
					 (double)r->cfg.batch * r->cfg.accum, rec);
		}
		if (s + 1 == r->cfg.warmup)
			r->c0 = rusage_now();
		if (s == 0)             /* buckets in the ready order just seen */
			ops->rebuild(r->tr);
	}
	stepreport_close(report);
	return 0;
}

/* ---- the summary ----------------------------------------------------------- */

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double percentile(double *v, int n, double p)
{
	double *s = malloc((size_t)n * sizeof(double)), r;
	int i;

	if (!s || n == 0) {
		free(s);
		return 0;
	}
	memcpy(s, v, (size_t)n * sizeof(double));
	qsort(s, (size_t)n, sizeof(double), cmp_double);
	i = (int)ceil(p / 100.0 * n) - 1;
	r = s[i < 0 ? 0 : i >= n ? n - 1 : i];
	free(s);
	return r;
}

enum phase { PH_DATA_WAIT, PH_H2D, PH_FWD, PH_BWD, PH_COMM_EXPOSED, PH_OPT, PH_TOTAL, PH_COMM, PHASES };

static double phase_of(const struct step_rec *r, enum phase k)
{
	const double v[PHASES] = {
		[PH_DATA_WAIT] = r->data_wait, [PH_H2D] = r->h2d, [PH_FWD] = r->fwd, [PH_BWD] = r->bwd,
		[PH_COMM_EXPOSED] = r->comm_exposed, [PH_OPT] = r->opt, [PH_TOTAL] = r->total, [PH_COMM] = r->comm,
	};

	return v[k];
}

static double median_phase(const struct step_rec *recs, int n, enum phase k)
{
	double *v = malloc((size_t)(n ? n : 1) * sizeof(double)), m;

	for (int i = 0; i < n; i++)
		v[i] = phase_of(&recs[i], k);
	m = percentile(v, n, 50);
	free(v);
	return m;
}

/* Per-rank skew: each rank's median compute time per step (everything but
 * waiting on the all-reduce), gathered by a sum over slots. */
static int gather_ranks(struct run *r)
{
	const struct step_rec *m = r->recs + r->cfg.warmup;
	int steps = r->cfg.steps, world = r->comm.world;
	struct nt_err err = { 0 };
	double *v;

	r->ranks = calloc((size_t)world * 2, sizeof(double));
	if (!r->ranks) {
		r->abort = true;
		return EXIT_RUNTIME;
	}
	v = malloc((size_t)steps * sizeof(double));
	for (int i = 0; i < steps && v; i++)
		v[i] = m[i].total - m[i].comm_exposed;
	r->ranks[r->comm.rank] = v ? percentile(v, steps, 50) : 0;
	r->ranks[world + r->comm.rank] = median_phase(m, steps, PH_DATA_WAIT);
	free(v);
	if (world > 1 && r->ops->allreduce_d(r->tr, r->ranks, (size_t)world * 2, &err))
		return rank_fail(r, EXIT_RUNTIME, true, err.msg);
	return 0;
}

/* stragglers: each rank's median compute per step; skew = the slowest over
 * the fastest */
static void json_ranks(FILE *f, const double *ranks, int world)
{
	double lo = ranks[0], hi = ranks[0];
	int slow = 0;

	fprintf(f, "    \"ranks\": [");
	for (int r = 0; r < world; r++) {
		fprintf(f, "%s{\"rank\": %d, \"compute_ms_p50\": %.4f, \"data_wait_ms_p50\": %.4f}", r ? ", " : "", r,
			ranks[r], ranks[world + r]);
		lo = fmin(lo, ranks[r]);
		if (ranks[r] > hi) {
			hi = ranks[r];
			slow = r;
		}
	}
	fprintf(f, "],\n    \"rank_skew\": %.4f,\n    \"slowest_rank\": %d,\n", lo > 0 ? hi / lo : 1.0, slow);
}

static void json_steps(FILE *f, const struct step_rec *recs, int warmup, int n)
{
	fprintf(f, "  \"steps\": [\n");
	for (int i = 0; i < n; i++)
		fprintf(f, "    {\"step\": %d, \"warmup\": %s, \"data_wait_ms\": %.4f, \"h2d_ms\": %.4f, \"fwd_ms\": %.4f, "
			   "\"bwd_ms\": %.4f, \"comm_exposed_ms\": %.4f, \"comm_ms\": %.4f, \"opt_ms\": %.4f, "
			   "\"total_ms\": %.4f, \"loss\": %.6f}%s\n",
			i, i < warmup ? "true" : "false", recs[i].data_wait, recs[i].h2d, recs[i].fwd, recs[i].bwd,
			recs[i].comm_exposed, recs[i].comm, recs[i].opt, recs[i].total, recs[i].loss,
			i + 1 < n ? "," : "");
	fprintf(f, "  ]\n}\n");
}

/* The summary object; tot: the measured steps' total times. */
static void json_summary(FILE *f, const struct run *r, double *tot, double samples_per_s,
			 const struct counters *ctr, const struct trainer_info *ti)
{
	const struct trainer_config *o = &r->cfg;
	const struct step_rec *m = r->recs + o->warmup;
	int nm = o->steps;
	double comm = 0, exposed = 0;

	for (int i = 0; i < nm; i++) {
		comm += m[i].comm;
		exposed += m[i].comm_exposed;
	}
	fprintf(f, "{\n  \"summary\": {\n");
	fprintf(f, "    \"world_size\": %d,\n    \"device\": \"%s\",\n    \"model\": \"%s\",\n", r->comm.world,
		o->device, o->model_name);
	fprintf(f, "    \"batch\": %d,\n    \"accum\": %d,\n    \"steps\": %d,\n    \"warmup\": %d,\n", o->batch,
		o->accum, nm, o->warmup);
	fprintf(f, "    \"samples_per_s\": %.3f,\n    \"step_ms_p50\": %.4f,\n    \"step_ms_p99\": %.4f,\n",
		samples_per_s, percentile(tot, nm, 50), percentile(tot, nm, 99));
	fprintf(f, "    \"phases\": {\"data_wait_ms\": %.4f, \"h2d_ms\": %.4f, \"fwd_ms\": %.4f, \"bwd_ms\": %.4f, "
		   "\"comm_exposed_ms\": %.4f, \"opt_ms\": %.4f},\n",
		median_phase(m, nm, PH_DATA_WAIT), median_phase(m, nm, PH_H2D), median_phase(m, nm, PH_FWD),
		median_phase(m, nm, PH_BWD), median_phase(m, nm, PH_COMM_EXPOSED), median_phase(m, nm, PH_OPT));
	fprintf(f, "    \"comm_ms\": %.4f,\n", median_phase(m, nm, PH_COMM));
	json_ranks(f, r->ranks, r->comm.world);
	fprintf(f, "    \"overlap_fraction\": %.4f,\n", comm > 0 ? fmax(0, 1 - exposed / comm) : 0.0);
	fprintf(f, "    \"final_loss\": %.6f,\n    \"buckets\": %d,\n    \"bucket_mb\": %g,\n    \"overlap\": %s,\n",
		r->final_loss, ti->buckets, o->bucket_mb, o->overlap ? "true" : "false");
	fprintf(f, "    \"comm_thread_boosted\": %s,\n", ti->comm_boosted ? "true" : "false");
	if (ti->gpu_name)
		fprintf(f, "    \"gpu\": {\"name\": \"%s\", \"h2d_gbps\": %.3f, \"h2d_pinned_gbps\": %.3f, "
			   "\"h2d_efficiency\": %.4f},\n", ti->gpu_name, ti->h2d_gbps, ti->pinned_gbps,
			ti->pinned_gbps > 0 ? ti->h2d_gbps / ti->pinned_gbps : 0.0);
	fprintf(f, "    \"inject\": \"%s\",\n    \"inject_note\": \"%s\",\n", o->inject ? o->inject : "none",
		r->inject_note.msg);
	fprintf(f, "    \"counters\": {\"minor_faults\": %ld, \"major_faults\": %ld, \"voluntary_switches\": %ld, "
		   "\"involuntary_switches\": %ld, \"runqueue_wait_ms\": %.3f},\n", ctr->minflt, ctr->majflt, ctr->nvcsw,
		ctr->nivcsw, ctr->runq_wait_ms);
	fprintf(f, "    \"loader\": {\"workers\": %d, \"prefetch\": %d, \"compress\": \"%s\", \"pinned\": %s, "
		   "\"mlocked\": %s, \"frozen\": %s, \"data\": %s%s%s}\n  },\n",
		o->frozen ? 0 : o->workers, o->prefetch, o->zstd_level ? "zstd" : "none", o->pin ? "true" : "false",
		loader_locked(r->ld) ? "true" : "false", o->frozen ? "true" : "false", o->data ? "\"" : "",
		o->data ? o->data : "null", o->data ? "\"" : "");
}

static int write_json(const struct run *r, double samples_per_s, const struct counters *ctr,
		      const struct trainer_info *ti)
{
	const char *path = r->cfg.json;
	FILE *f = strcmp(path, "-") ? fopen(path, "w") : stdout;
	int nm = r->cfg.steps;
	double *tot = malloc((size_t)(nm ? nm : 1) * sizeof(double));

	if (!f || !tot) {
		fprintf(stderr, "nodetune-harness: %s: %s\n", path, strerror(errno));
		free(tot);
		return -1;
	}
	for (int i = 0; i < nm; i++)
		tot[i] = r->recs[r->cfg.warmup + i].total;
	json_summary(f, r, tot, samples_per_s, ctr, ti);
	json_steps(f, r->recs, r->cfg.warmup, r->cfg.warmup + nm);
	free(tot);
	if (f != stdout ? fclose(f) != 0 : fflush(f) != 0) {
		fprintf(stderr, "nodetune-harness: writing %s failed\n", path);
		return -1;
	}
	return 0;
}

static int dump_weights(const char *path, const float *w, size_t n)
{
	FILE *f = fopen(path, "wb");

	if (!f || fwrite(w, sizeof(float), n, f) != n || fclose(f) != 0) {
		fprintf(stderr, "nodetune-harness: %s: %s\n", path, strerror(errno));
		return -1;
	}
	return 0;
}

/* The human lines on stderr. */
static void print_summary(const struct run *r, double sps, const struct trainer_info *ti)
{
	const struct trainer_config *o = &r->cfg;
	const struct step_rec *m = r->recs + o->warmup;
	double *tot = malloc((size_t)o->steps * sizeof(double));

	for (int i = 0; i < o->steps && tot; i++)
		tot[i] = m[i].total;
	if (tot)
		fprintf(stderr, "nodetune-harness: %s on %s, world %d, batch %d x %d: %.0f samples/s, step p50 %.2f ms p99 %.2f ms, "
				"exposed comm %.2f ms, %d buckets%s, final loss %.4f\n",
			o->model_name, o->device, r->comm.world, o->batch, o->accum, sps, percentile(tot, o->steps, 50),
			percentile(tot, o->steps, 99), median_phase(m, o->steps, PH_COMM_EXPOSED), ti->buckets,
			o->overlap ? " overlapped" : "", r->final_loss);
	if (ti->gpu_name)
		fprintf(stderr, "nodetune-harness: %s: loader H2D %.2f GB/s, pinned cudaMemcpy %.2f GB/s (%.0f%%)\n",
			ti->gpu_name, ti->h2d_gbps, ti->pinned_gbps,
			ti->pinned_gbps > 0 ? 100 * ti->h2d_gbps / ti->pinned_gbps : 0.0);
	free(tot);
}

/* Rank 0's output: the JSON, the human lines, the weights. */
static int report(struct run *r)
{
	const struct counters *c0 = &r->c0;
	const struct trainer_config *o = &r->cfg;
	double sps = r->t_measured > 0 ? (double)r->comm.world * o->batch * o->accum * o->steps / (r->t_measured / 1e3)
				       : 0;
	struct counters c1 = rusage_now();
	struct trainer_info ti = { 0 };
	struct nt_err err = { 0 };
	size_t n_w;
	float *w = model_weights(r->m, &n_w);
	int rc = 0;

	if (r->comm.rank != 0)
		return 0;
	c1 = (struct counters){ c1.minflt - c0->minflt, c1.majflt - c0->majflt, c1.nvcsw - c0->nvcsw,
				c1.nivcsw - c0->nivcsw, c1.runq_wait_ms - c0->runq_wait_ms };
	r->ops->info(r->tr, &ti);
	if (o->json && write_json(r, sps, &c1, &ti))
		rc = EXIT_RUNTIME;
	if (!o->quiet)
		print_summary(r, sps, &ti);
	if (o->dump && r->ops->fetch_weights && r->ops->fetch_weights(r->tr, &err)) {
		fprintf(stderr, "nodetune-harness: %s\n", err.msg);
		rc = EXIT_RUNTIME;
	} else if (o->dump && dump_weights(o->dump, w, n_w)) {
		rc = EXIT_RUNTIME;
	}
	return rc;
}

/* ---- engine_main --------------------------------------------------------- */

static int write_data(const struct trainer_config *cfg)
{
	struct data_spec spec = spec_of(cfg);
	struct nt_err err = { 0 };

	if (data_write_shards(cfg->write_data, &spec, cfg->samples, 256, 64, cfg->zstd_level, &err)) {
		fprintf(stderr, "nodetune-harness: --write-data: %s\n", err.msg);
		return EXIT_RUNTIME;
	}
	fprintf(stderr, "nodetune-harness: wrote %llu samples to %s\n", cfg->samples, cfg->write_data);
	return 0;
}

static int finish(struct run *r, int rc)
{
	if (r->abort) {
		/* a failed rank takes the job down: the others would wait
		 * forever */
		fflush(NULL);
		if (r->comm.world > 1)
			r->comm.ops->abort(&r->comm, rc);
	}
	inject_stop(r->inj);
	if (r->tr)
		r->ops->free(r->tr);    /* its threads may read the loader */
	loader_stop(r->ld);
	model_free(r->m);
	free(r->recs);
	free(r->ranks);
	if (r->comm_up && r->comm.ops->fini)
		r->comm.ops->fini(&r->comm);
	return rc;
}

/* The phases of a run, in order; each returns 0 or the exit code. */
static int (*const phases[])(struct run *r) = {
	setup_comm, setup_model, setup_trainer, setup_inject, train, gather_ranks, report,
};

int engine_main(int argc, char **argv)
{
	struct run r = { .argc = &argc, .argv = &argv };
	struct nt_err err = { 0 };
	int rc = 0;

	parse(argc, argv, &r.cfg);
	r.ops = trainer_of(r.cfg.device);
	if (r.cfg.inject && !(r.inj = inject_create(r.cfg.inject, &err))) {
		fprintf(stderr, "nodetune-harness: %s (see --help)\n", err.msg);
		return EXIT_USAGE;
	}
	/* batch buffers are about a megabyte: above glibc's default mmap
	 * threshold each would be mmap'ed, faulted in, zeroed and unmapped
	 * again every batch (page faults, TLB shootdowns).  Keep them on the
	 * heap, reused. */
	mallopt(M_MMAP_THRESHOLD, 256 << 20);
	mallopt(M_TRIM_THRESHOLD, 512 << 20);
	if (r.cfg.write_data)
		return finish(&r, write_data(&r.cfg));
	for (size_t i = 0; !rc && i < sizeof(phases) / sizeof(phases[0]); i++)
		rc = phases[i](&r);
	return finish(&r, rc);
}
