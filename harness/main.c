/* main.c — nodetune-harness: data-parallel training of dlrm-small or mlp,
 * the workload nodetune runs to prove a policy and catch regressions.
 *
 * Divisions: options; setup (comm, BLAS threads, model, loader, DDP); the
 * training loop; output (JSON, human summary, weights).
 *
 * Launch: alone (one process), `mpirun -np N nodetune-harness ...`, or in a
 * torchrun environment (TCP rendezvous).  --device cuda trains on the GPU
 * (gpu_train.h): the same model and weights, NCCL for the gradients.
 * Exit codes: 0 done; 2 bad flags or bad input data (one line saying what);
 * 3 runtime failure (no usable GPU, a peer that stopped responding, ...).
 */
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

#include "../kernels/cpu/ops.h"
#include "comm.h"
#include "cuda_backend.h"
#include "data.h"
#include "ddp.h"
#include "gpu_train.h"
#include "inject.h"
#include "loader.h"
#include "model.h"

#ifndef HARNESS_VERSION
#define HARNESS_VERSION "0.1.0"
#endif

extern void openblas_set_num_threads(int);
extern char *openblas_get_config(void);

enum { EXIT_USAGE = 2, EXIT_RUNTIME = 3 };

struct opts {
	struct model_config model;
	const char *model_name;
	int batch, steps, warmup, accum, workers, prefetch, zstd_level, blas_threads;
	double lr, bucket_mb, first_bucket_mb, timeout_s;
	unsigned long long seed, samples;
	bool overlap, pin, frozen, quiet;
	const char *device, *comm, *json, *dump, *data, *write_data, *inject;
	int inject_rank;           /* -1: every rank */
};

struct step_rec {
	double data_wait, h2d, fwd, bwd, comm_exposed, comm, opt, total, loss;
};

static int rank0 = 1;   /* print only on rank 0 once comm is up */

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

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* ---- options ----------------------------------------------------------- */

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
	       "  --workers N --prefetch D loader threads (2) and pinned buffers (4)\n"
	       "  --compress zstd|none     batch compression in the loader (none)\n"
	       "  --no-pin                 a fresh pageable buffer per batch\n"
	       "  --frozen-batch           one batch, reused: the loader roofline\n"
	       "  --data DIR               read shards written by --write-data DIR\n"
	       "  --write-data DIR --samples N   write N synthetic samples as shards, exit\n"
	       "  --rows N                 embedding rows per table (10000)\n"
	       "  --device cpu|cuda        where to train (cpu)\n"
	       "  --comm auto|mpi|tcp|none collectives (auto: MPI under mpirun, TCP under torchrun)\n"
	       "  --timeout S              a peer silent this long is fatal (300)\n"
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
	printf("nodetune-harness %s\n", HARNESS_VERSION);
	printf("cuda: %s\n", cuda_build_info());
	printf("nccl: %s\n", cuda_nccl_info());
	printf("mpi: %s\n", comm_mpi_version());
	printf("blas: OpenBLAS (%s)\n", openblas_get_config());
	printf("zstd: %s\n", ZSTD_versionString());
}

static void parse(int argc, char **argv, struct opts *o)
{
	enum { O_MODEL = 256, O_DEPTH, O_WIDTH, O_BATCH, O_STEPS, O_WARMUP, O_ACCUM, O_LR, O_SEED,
	       O_BUCKET, O_FIRST, O_NO_OVERLAP, O_WORKERS, O_PREFETCH, O_COMPRESS, O_NO_PIN, O_FROZEN,
	       O_DATA, O_WRITE, O_SAMPLES, O_ROWS, O_DEVICE, O_COMM, O_TIMEOUT, O_BLAS, O_JSON, O_DUMP,
	       O_QUIET, O_VERSION, O_HELP, O_ZLEVEL, O_INJECT, O_INJECT_RANK };
	static const struct option lo[] = {
		{ "model", 1, NULL, O_MODEL }, { "mlp-depth", 1, NULL, O_DEPTH }, { "mlp-width", 1, NULL, O_WIDTH },
		{ "batch", 1, NULL, O_BATCH }, { "steps", 1, NULL, O_STEPS }, { "warmup", 1, NULL, O_WARMUP },
		{ "accum", 1, NULL, O_ACCUM }, { "lr", 1, NULL, O_LR }, { "seed", 1, NULL, O_SEED },
		{ "bucket-mb", 1, NULL, O_BUCKET }, { "first-bucket-mb", 1, NULL, O_FIRST },
		{ "no-overlap", 0, NULL, O_NO_OVERLAP }, { "workers", 1, NULL, O_WORKERS },
		{ "prefetch", 1, NULL, O_PREFETCH }, { "compress", 1, NULL, O_COMPRESS },
		{ "zstd-level", 1, NULL, O_ZLEVEL }, { "no-pin", 0, NULL, O_NO_PIN },
		{ "frozen-batch", 0, NULL, O_FROZEN }, { "data", 1, NULL, O_DATA },
		{ "write-data", 1, NULL, O_WRITE }, { "samples", 1, NULL, O_SAMPLES }, { "rows", 1, NULL, O_ROWS },
		{ "device", 1, NULL, O_DEVICE }, { "comm", 1, NULL, O_COMM }, { "timeout", 1, NULL, O_TIMEOUT },
		{ "blas-threads", 1, NULL, O_BLAS }, { "json", 1, NULL, O_JSON }, { "dump-weights", 1, NULL, O_DUMP },
		{ "quiet", 0, NULL, O_QUIET }, { "inject", 1, NULL, O_INJECT }, { "inject-rank", 1, NULL, O_INJECT_RANK }, { "version", 0, NULL, O_VERSION }, { "help", 0, NULL, O_HELP },
		{ 0 },
	};
	int c;

	*o = (struct opts){
		.model = { MODEL_DLRM_SMALL, 8, 1024, DLRM_ROWS }, .model_name = "dlrm-small",
		.batch = 2048, .steps = 50, .warmup = 5, .accum = 1, .workers = 2, .prefetch = 4,
		.lr = 0.1, .bucket_mb = 25, .first_bucket_mb = 1, .timeout_s = 300, .seed = 1,
		.overlap = true, .pin = true, .device = "cpu", .comm = "auto", .inject_rank = -1,
	};
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", lo, NULL)) != -1) {
		switch (c) {
		case O_MODEL:
			if (!strcmp(optarg, "dlrm-small"))
				o->model.kind = MODEL_DLRM_SMALL;
			else if (!strcmp(optarg, "mlp"))
				o->model.kind = MODEL_MLP;
			else
				die_usage("--model '%s': expected dlrm-small or mlp", optarg);
			o->model_name = optarg;
			break;
		case O_DEPTH: o->model.mlp_depth = (int)num("--mlp-depth", optarg, 1, 1000); break;
		case O_WIDTH: o->model.mlp_width = (int)num("--mlp-width", optarg, 1, 65536); break;
		case O_BATCH: o->batch = (int)num("--batch", optarg, 1, 1 << 20); break;
		case O_STEPS: o->steps = (int)num("--steps", optarg, 1, 10000000); break;
		case O_WARMUP: o->warmup = (int)num("--warmup", optarg, 0, 1000000); break;
		case O_ACCUM: o->accum = (int)num("--accum", optarg, 1, 1024); break;
		case O_LR: o->lr = fnum("--lr", optarg, 0, 1e6); break;
		case O_SEED: o->seed = (unsigned long long)num("--seed", optarg, 0, 1LL << 62); break;
		case O_BUCKET: o->bucket_mb = fnum("--bucket-mb", optarg, 0.001, 1e6); break;
		case O_FIRST: o->first_bucket_mb = fnum("--first-bucket-mb", optarg, 0.001, 1e6); break;
		case O_NO_OVERLAP: o->overlap = false; break;
		case O_WORKERS: o->workers = (int)num("--workers", optarg, 1, 256); break;
		case O_PREFETCH: o->prefetch = (int)num("--prefetch", optarg, 1, 1024); break;
		case O_COMPRESS:
			if (!strcmp(optarg, "zstd"))
				o->zstd_level = o->zstd_level ? o->zstd_level : 1;
			else if (!strcmp(optarg, "none"))
				o->zstd_level = 0;
			else
				die_usage("--compress '%s': expected zstd or none", optarg);
			break;
		case O_ZLEVEL: o->zstd_level = (int)num("--zstd-level", optarg, 1, 19); break;
		case O_NO_PIN: o->pin = false; break;
		case O_FROZEN: o->frozen = true; break;
		case O_DATA: o->data = optarg; break;
		case O_WRITE: o->write_data = optarg; break;
		case O_SAMPLES: o->samples = (unsigned long long)num("--samples", optarg, 1, 1LL << 40); break;
		case O_ROWS: o->model.rows = (int)num("--rows", optarg, 1, 100000000); break;
		case O_DEVICE:
			if (strcmp(optarg, "cpu") && strcmp(optarg, "cuda"))
				die_usage("--device '%s': expected cpu or cuda", optarg);
			o->device = optarg;
			break;
		case O_COMM:
			if (strcmp(optarg, "auto") && strcmp(optarg, "mpi") && strcmp(optarg, "tcp") && strcmp(optarg, "none"))
				die_usage("--comm '%s': expected auto, mpi, tcp or none", optarg);
			o->comm = optarg;
			break;
		case O_TIMEOUT: o->timeout_s = fnum("--timeout", optarg, 1, 86400 * 7); break;
		case O_BLAS: o->blas_threads = (int)num("--blas-threads", optarg, 1, 4096); break;
		case O_JSON: o->json = optarg; break;
		case O_DUMP: o->dump = optarg; break;
		case O_QUIET: o->quiet = true; break;
		case O_INJECT: o->inject = optarg; break;
		case O_INJECT_RANK: o->inject_rank = (int)num("--inject-rank", optarg, 0, 1 << 20); break;
		case O_VERSION: version(); exit(0);
		case 'h': case O_HELP: usage(); exit(0);
		case ':': die_usage("option '%s' needs a value", argv[optind - 1]);
		default: die_usage("unknown option '%s'", argv[optind - 1]);
		}
	}
	if (optind < argc)
		die_usage("unexpected argument '%s'", argv[optind]);
	if (o->write_data && !o->samples)
		die_usage("--write-data needs --samples N");
	if (o->data && o->frozen)
		die_usage("--data and --frozen-batch are mutually exclusive");
	if (o->model.kind == MODEL_MLP && o->data)
		die_usage("--data holds dlrm-small samples; the mlp trains on synthetic data");
}

/* ---- setup ------------------------------------------------------------- */

/* OpenBLAS threads: --blas-threads, else the CPUs this rank may use, split
 * among the local ranks when they all share the same (unbound) set. */
static int blas_threads(const struct opts *o, const struct comm *c)
{
	cpu_set_t set;
	int n;

	if (o->blas_threads)
		return o->blas_threads;
	if (sched_getaffinity(0, sizeof(set), &set) < 0)
		return 1;
	n = CPU_COUNT(&set);
	if (n == sysconf(_SC_NPROCESSORS_ONLN) && c->local_size > 1)
		n /= c->local_size;
	return n > 0 ? n : 1;
}

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

#define PHASES 8
static double phase_of(const struct step_rec *r, int k)
{
	const double v[PHASES] = { r->data_wait, r->h2d, r->fwd, r->bwd, r->comm_exposed, r->opt, r->total, r->comm };

	return v[k];
}

static double median_phase(const struct step_rec *recs, int n, int k)
{
	double *v = malloc((size_t)(n ? n : 1) * sizeof(double)), m;

	for (int i = 0; i < n; i++)
		v[i] = phase_of(&recs[i], k);
	m = percentile(v, n, 50);
	free(v);
	return m;
}

struct counters {
	long minflt, majflt, nvcsw, nivcsw;
	double runq_wait_ms;       /* the training thread's run-queue wait */
};

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

/* The GPU's part of the summary (NULL on the CPU). */
struct gpu_info {
	const char *name;
	double h2d_gbps, pinned_gbps;
};

static int write_json(const struct opts *o, const struct comm *c, const struct step_rec *recs, int warmup,
		      int n, double samples_per_s, double final_loss, int buckets, bool locked, bool boosted,
		      const struct counters *ctr, const char *inject_note, const double *ranks,
		      const struct gpu_info *gpu)
{
	FILE *f = strcmp(o->json, "-") ? fopen(o->json, "w") : stdout;
	const struct step_rec *m = recs + warmup;
	int nm = n - warmup;
	double *tot = malloc((size_t)(nm ? nm : 1) * sizeof(double)), comm = 0, exposed = 0;

	if (!f || !tot) {
		fprintf(stderr, "nodetune-harness: %s: %s\n", o->json, strerror(errno));
		free(tot);
		return -1;
	}
	for (int i = 0; i < nm; i++) {
		tot[i] = m[i].total;
		comm += m[i].comm;
		exposed += m[i].comm_exposed;
	}
	fprintf(f, "{\n  \"summary\": {\n");
	fprintf(f, "    \"world_size\": %d,\n    \"device\": \"%s\",\n    \"model\": \"%s\",\n", c->world, o->device,
		o->model_name);
	fprintf(f, "    \"batch\": %d,\n    \"accum\": %d,\n    \"steps\": %d,\n    \"warmup\": %d,\n", o->batch,
		o->accum, nm, warmup);
	fprintf(f, "    \"samples_per_s\": %.3f,\n    \"step_ms_p50\": %.4f,\n    \"step_ms_p99\": %.4f,\n",
		samples_per_s, percentile(tot, nm, 50), percentile(tot, nm, 99));
	fprintf(f, "    \"phases\": {\"data_wait_ms\": %.4f, \"h2d_ms\": %.4f, \"fwd_ms\": %.4f, \"bwd_ms\": %.4f, "
		   "\"comm_exposed_ms\": %.4f, \"opt_ms\": %.4f},\n",
		median_phase(m, nm, 0), median_phase(m, nm, 1), median_phase(m, nm, 2), median_phase(m, nm, 3),
		median_phase(m, nm, 4), median_phase(m, nm, 5));
	fprintf(f, "    \"comm_ms\": %.4f,\n", median_phase(m, nm, 7));
	{
		/* stragglers: each rank's median compute per step; skew = the
		 * slowest over the fastest */
		double lo = ranks[0], hi = ranks[0];
		int slow = 0;

		fprintf(f, "    \"ranks\": [");
		for (int r = 0; r < c->world; r++) {
			fprintf(f, "%s{\"rank\": %d, \"compute_ms_p50\": %.4f, \"data_wait_ms_p50\": %.4f}", r ? ", " : "", r,
				ranks[r], ranks[c->world + r]);
			lo = fmin(lo, ranks[r]);
			if (ranks[r] > hi) {
				hi = ranks[r];
				slow = r;
			}
		}
		fprintf(f, "],\n    \"rank_skew\": %.4f,\n    \"slowest_rank\": %d,\n", lo > 0 ? hi / lo : 1.0, slow);
	}
	fprintf(f, "    \"overlap_fraction\": %.4f,\n", comm > 0 ? fmax(0, 1 - exposed / comm) : 0.0);
	fprintf(f, "    \"final_loss\": %.6f,\n    \"buckets\": %d,\n    \"bucket_mb\": %g,\n    \"overlap\": %s,\n",
		final_loss, buckets, o->bucket_mb, o->overlap ? "true" : "false");
	fprintf(f, "    \"comm_thread_boosted\": %s,\n", boosted ? "true" : "false");
	if (gpu)
		fprintf(f, "    \"gpu\": {\"name\": \"%s\", \"h2d_gbps\": %.3f, \"h2d_pinned_gbps\": %.3f, "
			   "\"h2d_efficiency\": %.4f},\n", gpu->name, gpu->h2d_gbps, gpu->pinned_gbps,
			gpu->pinned_gbps > 0 ? gpu->h2d_gbps / gpu->pinned_gbps : 0.0);
	fprintf(f, "    \"inject\": \"%s\",\n    \"inject_note\": \"%s\",\n", o->inject ? o->inject : "none",
		inject_note);
	fprintf(f, "    \"counters\": {\"minor_faults\": %ld, \"major_faults\": %ld, \"voluntary_switches\": %ld, "
		   "\"involuntary_switches\": %ld, \"runqueue_wait_ms\": %.3f},\n", ctr->minflt, ctr->majflt, ctr->nvcsw,
		ctr->nivcsw, ctr->runq_wait_ms);
	fprintf(f, "    \"loader\": {\"workers\": %d, \"prefetch\": %d, \"compress\": \"%s\", \"pinned\": %s, "
		   "\"mlocked\": %s, \"frozen\": %s, \"data\": %s%s%s}\n  },\n",
		o->workers, o->prefetch, o->zstd_level ? "zstd" : "none", o->pin ? "true" : "false",
		locked ? "true" : "false", o->frozen ? "true" : "false", o->data ? "\"" : "",
		o->data ? o->data : "null", o->data ? "\"" : "");
	fprintf(f, "  \"steps\": [\n");
	for (int i = 0; i < n; i++)
		fprintf(f, "    {\"step\": %d, \"warmup\": %s, \"data_wait_ms\": %.4f, \"h2d_ms\": %.4f, \"fwd_ms\": %.4f, "
			   "\"bwd_ms\": %.4f, \"comm_exposed_ms\": %.4f, \"comm_ms\": %.4f, \"opt_ms\": %.4f, "
			   "\"total_ms\": %.4f, \"loss\": %.6f}%s\n",
			i, i < warmup ? "true" : "false", recs[i].data_wait, recs[i].h2d, recs[i].fwd, recs[i].bwd,
			recs[i].comm_exposed, recs[i].comm, recs[i].opt, recs[i].total, recs[i].loss,
			i + 1 < n ? "," : "");
	fprintf(f, "  ]\n}\n");
	free(tot);
	if (f != stdout ? fclose(f) != 0 : fflush(f) != 0) {
		fprintf(stderr, "nodetune-harness: writing %s failed\n", o->json);
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

/* ---- main -------------------------------------------------------------- */

int main(int argc, char **argv)
{
	struct opts o;
	struct comm comm;
	struct data_spec spec;
	struct model *m = NULL;
	struct loader *ld = NULL;
	struct ddp *dd = NULL;
	struct gpu_train *gt = NULL;
	bool gpu;
	struct step_rec *recs = NULL;
	char why[600];
	int rc = 0, n_params, total;
	const struct model_param *params;
	float *w, *g;
	size_t n_w;
	double final_loss = 0, t_measured = 0, *ranks = NULL;

	parse(argc, argv, &o);
	gpu = !strcmp(o.device, "cuda");
	struct inject *inj = NULL;
	char inject_note[256] = "";
	struct counters c0 = { 0 }, c1;

	if (o.inject && !(inj = inject_create(o.inject, why, sizeof(why)))) {
		fprintf(stderr, "nodetune-harness: %s (see --help)\n", why);
		return EXIT_USAGE;
	}
	/* batch buffers are about a megabyte: above glibc's default mmap
	 * threshold each would be mmap'ed, faulted in, zeroed and unmapped
	 * again every batch (page faults, TLB shootdowns).  Keep them on the
	 * heap, reused. */
	mallopt(M_MMAP_THRESHOLD, 256 << 20);
	mallopt(M_TRIM_THRESHOLD, 512 << 20);
	spec = (struct data_spec){
		.dense_width = (uint32_t)model_dense_width(&o.model),
		.sparse_width = o.model.kind == MODEL_DLRM_SMALL ? DLRM_TABLES * DLRM_BAG : 0,
		.rows = (uint32_t)o.model.rows, .seed = o.seed,
	};
	if (o.write_data) {
		if (data_write_shards(o.write_data, &spec, o.samples, 256, 64, o.zstd_level, why, sizeof(why))) {
			fprintf(stderr, "nodetune-harness: --write-data: %s\n", why);
			return EXIT_RUNTIME;
		}
		fprintf(stderr, "nodetune-harness: wrote %llu samples to %s\n", o.samples, o.write_data);
		return 0;
	}
	if (gpu && cuda_probe(why, sizeof(why)) < 0) {
		fprintf(stderr, "nodetune-harness: --device cuda: %s\n", why);
		return EXIT_RUNTIME;
	}
	if (comm_init(&comm, o.comm, &argc, &argv, o.timeout_s, why, sizeof(why))) {
		fprintf(stderr, "nodetune-harness: %s\n", why);
		return EXIT_RUNTIME;
	}
	rank0 = comm.rank == 0;
	/* this rank's GPU (local rank modulo the GPUs), before anything
	 * allocates pinned or device memory */
	if (gpu && gpu_select(comm.local_rank, why, sizeof(why))) {
		fprintf(stderr, "nodetune-harness: rank %d: --device cuda: %s\n", comm.rank, why);
		rc = EXIT_RUNTIME;
		goto out;
	}
	openblas_set_num_threads(blas_threads(&o, &comm));

	m = model_create(&o.model, o.batch, o.seed);
	if (!m) {
		fprintf(stderr, "nodetune-harness: rank %d: cannot build the model (out of memory?)\n", comm.rank);
		rc = EXIT_RUNTIME;
		goto out;
	}
	params = model_params(m, &n_params);
	w = model_weights(m, &n_w);
	g = model_grads(m);
	/* every rank starts from rank 0's weights, as DDP does (a peer
	 * stopped or lost here must not hang this rank for ever) */
	comm_deadline_set(o.timeout_s, comm.world > 1 ? comm.rank : -1, "the broadcast of the initial weights");
	int bcast_failed = comm.bcast(&comm, w, n_w * sizeof(float), 0, why, sizeof(why));

	comm_deadline_clear();
	if (bcast_failed) {
		fprintf(stderr, "nodetune-harness: rank %d: %s\n", comm.rank, why);
		rc = EXIT_RUNTIME;
		goto out;
	}
	{
		struct loader_config lc = {
			.spec = spec, .batch = o.batch, .rank = comm.rank, .world = comm.world,
			.workers = o.workers, .prefetch = o.prefetch, .zstd_level = o.zstd_level,
			.pin = o.pin, .frozen = o.frozen, .data_dir = o.data,
			/* on a GPU the pinned buffers are page-locked by CUDA,
			 * which is what makes the copy stage asynchronous */
			.host_alloc = gpu ? gpu_host_alloc : NULL, .host_free = gpu ? gpu_host_free : NULL,
		};
		struct ddp_config dc = { o.bucket_mb, o.first_bucket_mb, o.overlap, o.timeout_s, -10 };

		ld = loader_start(&lc, why, sizeof(why));
		if (!ld) {
			fprintf(stderr, "nodetune-harness: rank %d: %s\n", comm.rank, why);
			rc = EXIT_USAGE;
			goto out;
		}
		if (gpu) {
			struct gpu_train_config gc = {
				.batch = o.batch, .accum = o.accum, .lr = (float)o.lr, .bucket_mb = o.bucket_mb,
				.first_bucket_mb = o.first_bucket_mb, .overlap = o.overlap, .timeout_s = o.timeout_s,
				.prefetch = o.prefetch, .frozen = o.frozen,
			};

			gt = gpu_train_create(&gc, m, &comm, ld, why, sizeof(why));
			if (!gt) {
				fprintf(stderr, "nodetune-harness: rank %d: --device cuda: %s\n", comm.rank, why);
				rc = EXIT_RUNTIME;
				goto out_abort;
			}
			if (rank0 && !o.quiet)
				fprintf(stderr, "nodetune-harness: training on %s\n", gpu_train_device(gt));
		} else {
			dd = ddp_create(&dc, &comm, params, n_params, g);
		}
	}
	if (o.inject_rank >= 0 && o.inject_rank != comm.rank) {
		inject_stop(inj);       /* a straggler elsewhere: this rank runs clean */
		inj = NULL;
	}
	if (inject_start(inj, w, g, n_w * sizeof(float), inject_note, sizeof(inject_note)) < 0) {
		fprintf(stderr, "nodetune-harness: rank %d: --inject %s: %s\n", comm.rank, o.inject,
			inject_note[0] ? inject_note : "cannot start");
		rc = EXIT_RUNTIME;
		goto out;
	}
	if (inject_note[0] && rank0)
		fprintf(stderr, "nodetune-harness: %s\n", inject_note);
	total = o.warmup + o.steps;
	recs = calloc((size_t)total, sizeof(*recs));
	if ((!dd && !gt) || !recs) {
		fprintf(stderr, "nodetune-harness: rank %d: out of memory\n", comm.rank);
		rc = EXIT_RUNTIME;
		goto out;
	}

	for (int s = 0; s < total; s++) {
		struct step_rec *r = &recs[s];
		double t0 = now_ms(), loss = 0, t1, stats[2];

		if (gt) {
			struct gpu_step gs;
			bool bad_data;

			if (gpu_train_step(gt, &gs, &bad_data, why, sizeof(why))) {
				fprintf(stderr, "nodetune-harness: rank %d: %s\n", comm.rank, why);
				rc = bad_data ? EXIT_USAGE : EXIT_RUNTIME;
				goto out_abort;
			}
			*r = (struct step_rec){ gs.data_wait_ms, gs.h2d_ms, gs.fwd_ms, gs.bwd_ms, gs.comm_exposed_ms,
						gs.comm_ms, gs.opt_ms, 0, 0 };
			{
				double ti = now_ms();

				inject_after_compute(inj, s, gs.fwd_ms + gs.bwd_ms);
				r->bwd += now_ms() - ti;
			}
			inject_step_end(inj, s);
			r->total = now_ms() - t0;
			/* the loss is summed over ranks on the GPU (NCCL) */
			r->loss = gs.loss_sum / ((double)o.batch * o.accum * comm.world);
		} else {
			/* no zeroing pass: the first micro-batch's backward writes g */
			for (int k = 0; k < o.accum; k++) {
				struct loader_batch *b;
				struct batch_view v;
				double wait, fwd, bwd;

				if (loader_next(ld, &b, &wait, why, sizeof(why))) {
					fprintf(stderr, "nodetune-harness: rank %d: %s\n", comm.rank, why);
					rc = EXIT_USAGE;
					goto out_abort;
				}
				v = (struct batch_view){ (int)b->data.n, b->data.dense, b->data.sparse, b->data.label };
				ddp_begin(dd, k == o.accum - 1);
				/* each rank's loss is the mean over its own samples of the
				 * step; averaging the gradients over ranks then gives the
				 * mean over the global batch, as one process would */
				loss += model_step(m, &v, (double)o.batch * o.accum, k == 0, ddp_on_ready, dd, &fwd,
						   &bwd);
				loader_release(ld, b);
				r->data_wait += wait;
				r->fwd += fwd;
				r->bwd += bwd;
				{
					/* an injected slowdown stretches compute: count it there */
					double ti = now_ms();

					inject_after_compute(inj, s, fwd + bwd);
					r->bwd += now_ms() - ti;
				}
			}
			if (ddp_finish(dd, &r->comm_exposed, &r->comm, why, sizeof(why))) {
				fprintf(stderr, "nodetune-harness: rank %d: %s\n", comm.rank, why);
				rc = EXIT_RUNTIME;
				goto out_abort;
			}
			inject_step_end(inj, s);
			t1 = now_ms();
			cpu_sgd_scaled(w, g, n_w, (float)o.lr, ddp_scale(dd));
			r->opt = now_ms() - t1;
			r->total = now_ms() - t0;
			/* the global mean loss of the step (outside the timed part) */
			stats[0] = loss;
			stats[1] = (double)o.batch * o.accum;
			if (ddp_allreduce_double(dd, stats, 2, why, sizeof(why))) {
				fprintf(stderr, "nodetune-harness: rank %d: %s\n", comm.rank, why);
				rc = EXIT_RUNTIME;
				goto out_abort;
			}
			r->loss = stats[0] / stats[1];
		}
		final_loss = r->loss;
		if (s >= o.warmup)
			t_measured += r->total;
		if (s + 1 == o.warmup)
			c0 = rusage_now();
		if (s == 0) {           /* buckets in the ready order just seen */
			if (gt)
				gpu_train_rebuild(gt);
			else
				ddp_rebuild(dd);
		}
	}

	/* per-rank skew: each rank's median compute time per step (everything
	 * but waiting on the all-reduce), gathered by a sum over slots */
	ranks = calloc((size_t)comm.world * 2, sizeof(double));
	if (!ranks) {
		rc = EXIT_RUNTIME;
		goto out_abort;
	}
	{
		double *v = malloc((size_t)o.steps * sizeof(double));

		for (int i = 0; i < o.steps && v; i++) {
			const struct step_rec *q = &recs[o.warmup + i];

			v[i] = q->total - q->comm_exposed;
		}
		ranks[comm.rank] = v ? percentile(v, o.steps, 50) : 0;
		ranks[comm.world + comm.rank] = median_phase(recs + o.warmup, o.steps, 0);
		free(v);
	}
	if (comm.world > 1 && (gt ? comm.allreduce_sum_d(&comm, ranks, (size_t)comm.world * 2, why, sizeof(why))
				  : ddp_allreduce_double(dd, ranks, (size_t)comm.world * 2, why, sizeof(why)))) {
		fprintf(stderr, "nodetune-harness: rank %d: %s\n", comm.rank, why);
		rc = EXIT_RUNTIME;
		goto out_abort;
	}
	if (rank0) {
		double sps = t_measured > 0 ? (double)comm.world * o.batch * o.accum * o.steps / (t_measured / 1e3) : 0;
		double *tot = malloc((size_t)o.steps * sizeof(double));

		for (int i = 0; i < o.steps && tot; i++)
			tot[i] = recs[o.warmup + i].total;
		c1 = rusage_now();
		c1 = (struct counters){ c1.minflt - c0.minflt, c1.majflt - c0.majflt, c1.nvcsw - c0.nvcsw,
					c1.nivcsw - c0.nivcsw, c1.runq_wait_ms - c0.runq_wait_ms };
		struct gpu_info gi = { gt ? gpu_train_device(gt) : "", 0, 0 };
		int buckets = gt ? gpu_train_buckets(gt) : ddp_bucket_count(dd);

		if (gt)
			gpu_train_h2d(gt, &gi.h2d_gbps, &gi.pinned_gbps);
		if (o.json && write_json(&o, &comm, recs, o.warmup, total, sps, final_loss, buckets,
					 loader_locked(ld), dd && ddp_comm_boosted(dd), &c1, inject_note, ranks,
					 gt ? &gi : NULL))
			rc = EXIT_RUNTIME;
		if (!o.quiet && tot)
			fprintf(stderr, "nodetune-harness: %s on %s, world %d, batch %d x %d: %.0f samples/s, step p50 %.2f ms p99 %.2f ms, "
					"exposed comm %.2f ms, %d buckets%s, final loss %.4f\n",
				o.model_name, o.device, comm.world, o.batch, o.accum, sps, percentile(tot, o.steps, 50),
				percentile(tot, o.steps, 99), median_phase(recs + o.warmup, o.steps, 4), buckets,
				o.overlap ? " overlapped" : "", final_loss);
		if (!o.quiet && gt)
			fprintf(stderr, "nodetune-harness: %s: loader H2D %.2f GB/s, pinned cudaMemcpy %.2f GB/s (%.0f%%)\n",
				gi.name, gi.h2d_gbps, gi.pinned_gbps, gi.pinned_gbps > 0 ? 100 * gi.h2d_gbps / gi.pinned_gbps : 0.0);
		free(tot);
		if (o.dump && gt && gpu_train_fetch_weights(gt, why, sizeof(why))) {
			fprintf(stderr, "nodetune-harness: %s\n", why);
			rc = EXIT_RUNTIME;
		} else if (o.dump && dump_weights(o.dump, w, n_w)) {
			rc = EXIT_RUNTIME;
		}
	}
out:
	inject_stop(inj);
	ddp_free(dd);
	gpu_train_free(gt);     /* its preload thread reads the loader */
	loader_stop(ld);
	model_free(m);
	free(recs);
	free(ranks);
	if (comm.fini)
		comm.fini(&comm);
	return rc;
out_abort:
	/* a failed rank takes the job down: the others would wait forever */
	fflush(NULL);
	if (comm.world > 1)
		comm.abort(&comm, rc);
	goto out;
}
