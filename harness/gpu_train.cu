// gpu_train.cu — see gpu_train.h.
extern "C" {
#include "comm.h"
#include "ddp.h"
#include "loader.h"
#include "model.h"
}
#include "gpu_train.h"

#include <cerrno>
#include <csignal>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#include <cuda_runtime.h>
#include <nccl.h>

#include "../kernels/cuda/ops.h"

namespace {

struct dev_layer {
	int in, out, pw, pb;
	bool relu;
	float *y, *dy;             // [batch][out]
};

struct dslot {                     // a device batch buffer
	void *mem;
	const float *dense, *label;
	const int32_t *sparse;
	int n;
	double h2d_ms;
	bool ready;                // filled, not yet taken
	cudaEvent_t h0, copied;    // around the copy (copy stream)
	cudaEvent_t consumed;      // after the kernels that read it (compute)
};

struct gbucket {
	int *params;
	int n_params, pending;
	size_t count;
	float *view;               // contiguous gradients: reduced in place
	float *buf;                // else gathered into here and back
	cudaEvent_t ready, c0, c1;
	bool launched;
};

double now_ms()
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

} // namespace

struct gpu_train {
	gpu_train_config cfg;
	model *m;
	comm *cm;
	loader *ld;
	int dev;
	char devname[256];
	cudaStream_t compute, copy, commst;
	cuda_ops_ctx *ops;
	ncclComm_t nccl;           // NULL with one rank
	bool nccl_aborted;

	float *w, *g;              // device weights and gradients, the host layout
	size_t n_w;
	const model_param *params;
	int n_params;
	dev_layer *bot, *top;
	int n_bot, n_top;
	int emb0, rows;
	float *z, *dz;             // dlrm concatenation [batch][432]
	double *loss;              // device: sum of sample losses (then over ranks)
	double *h_loss;            // pinned host copy

	gbucket *b;
	int nb;
	int *bucket_of, *order, n_order;
	bool sync;
	int step;

	cudaEvent_t *f0, *f1, *b1; // per micro-batch: start, forward done, backward done
	cudaEvent_t ev_loss, comm_done, synced, opt_end, done;

	pthread_t th;
	bool th_started;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool stop, failed, bad_data;
	char err[512];
	dslot *slots;
	int n_slots;
	unsigned long long next_fill, next_take;
	double h2d_bytes, h2d_ms;
	double pinned_gbps;
};

static int cuda_fail(char *why, size_t why_size, const char *what, cudaError_t e)
{
	snprintf(why, why_size, "%s: %s (%s)", what, cudaGetErrorString(e), cudaGetErrorName(e));
	return -1;
}

static int cuda_try(cudaError_t e, const char *what, char *why, size_t why_size)
{
	return e == cudaSuccess ? 0 : cuda_fail(why, why_size, what, e);
}

#define CUDA_TRY(call, what)                                                                     \
	do {                                                                                     \
		cudaError_t e_ = (call);                                                         \
		if (e_ != cudaSuccess)                                                           \
			return cuda_fail(why, why_size, what, e_);                              \
	} while (0)

#define OPS_TRY(call, what)                                                                      \
	do {                                                                                     \
		if ((call) != 0)                                                                 \
			return cuda_fail(why, why_size, what, cudaGetLastError());              \
	} while (0)

extern "C" int gpu_select(int local_rank, char *why, size_t why_size)
{
	int n = 0, dev;
	cudaDeviceProp prop;

	CUDA_TRY(cudaGetDeviceCount(&n), "no usable GPU");
	if (n == 0) {
		snprintf(why, why_size, "no usable GPU: CUDA sees no device");
		return -1;
	}
	dev = (local_rank < 0 ? 0 : local_rank) % n;
	CUDA_TRY(cudaSetDevice(dev), "cudaSetDevice");
	CUDA_TRY(cudaGetDeviceProperties(&prop, dev), "cudaGetDeviceProperties");
	snprintf(why, why_size, "GPU %d of %d: %s (sm_%d%d, %.0f GiB)", dev, n, prop.name, prop.major, prop.minor,
		 prop.totalGlobalMem / 1073741824.0);
	return 0;
}

extern "C" void *gpu_host_alloc(size_t bytes)
{
	void *p = NULL;

	if (cudaHostAlloc(&p, bytes, cudaHostAllocPortable) != cudaSuccess)
		return NULL;
	memset(p, 0, bytes);
	return p;
}

extern "C" void gpu_host_free(void *p)
{
	cudaFreeHost(p);
}

// ---- buckets (the plan is ddp.c's) ------------------------------------------

static void free_buckets(gpu_train *t)
{
	for (int i = 0; t->b && i < t->nb; i++) {
		free(t->b[i].params);
		cudaFree(t->b[i].buf);
		cudaEventDestroy(t->b[i].ready);
		cudaEventDestroy(t->b[i].c0);
		cudaEventDestroy(t->b[i].c1);
	}
	free(t->b);
	t->b = NULL;
	t->nb = 0;
}

static int build_buckets(gpu_train *t, const int *order, char *why, size_t why_size)
{
	int *end = (int *)calloc((size_t)t->n_params, sizeof(int)), n, start = 0, r = 0;

	free_buckets(t);
	t->b = (gbucket *)calloc((size_t)t->n_params, sizeof(gbucket));
	if (!end || !t->b) {
		free(end);
		snprintf(why, why_size, "out of memory");
		return -1;
	}
	n = ddp_plan_buckets(t->params, t->n_params, order, t->cfg.first_bucket_mb, t->cfg.bucket_mb, end);
	for (int bi = 0; bi < n && !r; start = end[bi++]) {
		gbucket *b = &t->b[bi];
		size_t lo;

		t->nb = bi + 1;
		b->n_params = end[bi] - start;
		b->params = (int *)malloc((size_t)b->n_params * sizeof(int));
		if (!b->params) {
			snprintf(why, why_size, "out of memory");
			r = -1;
			break;
		}
		memcpy(b->params, order + start, (size_t)b->n_params * sizeof(int));
		for (int i = 0; i < b->n_params; i++)
			t->bucket_of[b->params[i]] = bi;
		lo = ddp_bucket_span(t->params, b->params, b->n_params, &b->count);
		if (lo != (size_t)-1)
			b->view = t->g + lo;
		else
			r = cuda_try(cudaMalloc((void **)&b->buf, b->count * sizeof(float)), "bucket buffer", why, why_size);
		if (!r)
			r = cuda_try(cudaEventCreateWithFlags(&b->ready, cudaEventDisableTiming), "cudaEventCreate", why,
				     why_size);
		if (!r)
			r = cuda_try(cudaEventCreate(&b->c0), "cudaEventCreate", why, why_size);
		if (!r)
			r = cuda_try(cudaEventCreate(&b->c1), "cudaEventCreate", why, why_size);
	}
	free(end);
	return r;
}

// Hand bucket bi to the comm stream: it waits for the gradients (an event
// on the compute stream) and all-reduces them while backward goes on.
static int launch_bucket(gpu_train *t, int bi, char *why, size_t why_size)
{
	gbucket *b = &t->b[bi];
	float *data = b->view ? b->view : b->buf;
	size_t off = 0;
	ncclResult_t r;

	b->launched = true;
	CUDA_TRY(cudaEventRecord(b->ready, t->compute), "cudaEventRecord");
	CUDA_TRY(cudaStreamWaitEvent(t->commst, b->ready, 0), "cudaStreamWaitEvent");
	for (int i = 0; !b->view && i < b->n_params; i++) {
		const model_param *p = &t->params[b->params[i]];

		CUDA_TRY(cudaMemcpyAsync(b->buf + off, t->g + p->offset, p->count * sizeof(float),
					 cudaMemcpyDeviceToDevice, t->commst), "bucket gather");
		off += p->count;
	}
	CUDA_TRY(cudaEventRecord(b->c0, t->commst), "cudaEventRecord");
	r = ncclAllReduce(data, data, b->count, ncclFloat, ncclSum, t->nccl, t->commst);
	if (r != ncclSuccess) {
		snprintf(why, why_size, "ncclAllReduce of bucket %d: %s (%s)", bi, ncclGetErrorString(r),
			 ncclGetLastError(t->nccl));
		return -1;
	}
	CUDA_TRY(cudaEventRecord(b->c1, t->commst), "cudaEventRecord");
	off = 0;
	for (int i = 0; !b->view && i < b->n_params; i++) {
		const model_param *p = &t->params[b->params[i]];

		CUDA_TRY(cudaMemcpyAsync(t->g + p->offset, b->buf + off, p->count * sizeof(float),
					 cudaMemcpyDeviceToDevice, t->commst), "bucket scatter");
		off += p->count;
	}
	return 0;
}

// param p's gradient is final (its kernels are queued on the compute stream)
static int ready(gpu_train *t, int p, char *why, size_t why_size)
{
	gbucket *b;

	if (!t->sync)
		return 0;
	t->order[t->n_order++] = p;
	b = &t->b[t->bucket_of[p]];
	if (--b->pending == 0 && t->cfg.overlap && t->nccl)
		return launch_bucket(t, t->bucket_of[p], why, why_size);
	return 0;
}

// ---- waiting with a deadline ------------------------------------------------

static void abort_nccl(gpu_train *t)
{
	if (t->nccl && !t->nccl_aborted) {
		ncclCommAbort(t->nccl);
		t->nccl_aborted = true;
	}
}

// Wait for ev: a poll (yield, then short sleeps) that also watches NCCL's
// asynchronous errors and the deadline; the waiting rank aborts its
// communicator rather than hang on a dead peer.
static int wait_event(gpu_train *t, cudaEvent_t ev, const char *what, char *why, size_t why_size)
{
	double t0 = now_ms(), deadline = t0 + t->cfg.timeout_s * 1e3;

	for (;;) {
		cudaError_t e = cudaEventQuery(ev);
		double now;

		if (e == cudaSuccess)
			return 0;
		if (e != cudaErrorNotReady)
			return cuda_fail(why, why_size, what, e);
		if (t->nccl && !t->nccl_aborted) {
			ncclResult_t ae = ncclSuccess;

			if (ncclCommGetAsyncError(t->nccl, &ae) == ncclSuccess && ae != ncclSuccess &&
			    ae != ncclInProgress) {
				char peer[48];

				if (t->cm->world == 2)
					snprintf(peer, sizeof(peer), "peer rank %d", 1 - t->cm->rank);
				else
					snprintf(peer, sizeof(peer), "a peer rank");
				snprintf(why, why_size, "%s (step %d) failed: %s failed or exited (NCCL: %s: %s)", what,
					 t->step, peer, ncclGetErrorString(ae), ncclGetLastError(t->nccl));
				abort_nccl(t);
				return -1;
			}
		}
		now = now_ms();
		if (now > deadline) {
			if (t->cm->world == 1)
				snprintf(why, why_size, "%s (step %d) not done after %.0f s: the GPU stopped making progress",
					 what, t->step, t->cfg.timeout_s);
			else if (t->cm->world == 2)
				snprintf(why, why_size, "%s (step %d) not done after %.0f s: peer rank %d stopped responding",
					 what, t->step, t->cfg.timeout_s, 1 - t->cm->rank);
			else
				snprintf(why, why_size, "%s (step %d) not done after %.0f s: one of the %d peer ranks stopped responding",
					 what, t->step, t->cfg.timeout_s, t->cm->world - 1);
			abort_nccl(t);
			return -1;
		}
		if (now - t0 < 2.0) {
			sched_yield();
		} else {
			struct timespec ts = { 0, 20000 };

			nanosleep(&ts, NULL);
		}
	}
}

// ---- the preload thread -------------------------------------------------------

static void preload_fail(gpu_train *t, const char *msg, bool bad_data)
{
	pthread_mutex_lock(&t->mu);
	if (!t->failed) {
		t->failed = true;
		t->bad_data = bad_data;
		snprintf(t->err, sizeof(t->err), "%s", msg);
	}
	pthread_cond_broadcast(&t->cv);
	pthread_mutex_unlock(&t->mu);
}

// Copy loader batch lb into device slot s on the copy stream; the tensors'
// device addresses are their offsets in the host buffer.
static int copy_batch(gpu_train *t, dslot *s, const loader_batch *lb, char *why, size_t why_size)
{
	const char *base = (const char *)lb->base;
	char *d = (char *)s->mem;

	CUDA_TRY(cudaStreamWaitEvent(t->copy, s->consumed, 0), "cudaStreamWaitEvent");
	CUDA_TRY(cudaEventRecord(s->h0, t->copy), "cudaEventRecord");
	CUDA_TRY(cudaMemcpyAsync(s->mem, lb->base, lb->bytes, cudaMemcpyHostToDevice, t->copy), "batch copy to the GPU");
	CUDA_TRY(cudaEventRecord(s->copied, t->copy), "cudaEventRecord");
	s->n = (int)lb->data.n;
	s->dense = (const float *)(d + ((const char *)lb->data.dense - base));
	s->label = (const float *)(d + ((const char *)lb->data.label - base));
	s->sparse = lb->data.sparse ? (const int32_t *)(d + ((const char *)lb->data.sparse - base)) : NULL;
	return 0;
}

static void *preload_main(void *arg)
{
	gpu_train *t = (gpu_train *)arg;
	char why[512];

	if (cudaSetDevice(t->dev) != cudaSuccess) {
		preload_fail(t, "preload thread: cudaSetDevice failed", false);
		return NULL;
	}
	for (;;) {
		loader_batch *lb;
		dslot *s;
		double wait;
		size_t bytes;
		float ms = 0;
		cudaError_t e;

		pthread_mutex_lock(&t->mu);
		s = &t->slots[t->next_fill % (unsigned long long)t->n_slots];
		while (!t->stop && !t->failed && s->ready)
			pthread_cond_wait(&t->cv, &t->mu);
		if (t->stop || t->failed) {
			pthread_mutex_unlock(&t->mu);
			break;
		}
		pthread_mutex_unlock(&t->mu);

		if (loader_next(t->ld, &lb, &wait, why, sizeof(why))) {
			preload_fail(t, why, true);
			break;
		}
		if (copy_batch(t, s, lb, why, sizeof(why))) {
			loader_release(t->ld, lb);
			preload_fail(t, why, false);
			break;
		}
		bytes = lb->bytes;
		// the host buffer goes back once the copy is done; poll so that a
		// stop is seen even while the GPU is stuck
		while ((e = cudaEventQuery(s->copied)) == cudaErrorNotReady && !t->stop) {
			struct timespec ts = { 0, 20000 };

			nanosleep(&ts, NULL);
		}
		loader_release(t->ld, lb);
		if (e != cudaSuccess) {
			if (!t->stop) {
				cuda_fail(why, sizeof(why), "batch copy to the GPU", e);
				preload_fail(t, why, false);
			}
			break;
		}
		cudaEventElapsedTime(&ms, s->h0, s->copied);
		pthread_mutex_lock(&t->mu);
		s->h2d_ms = ms;
		s->ready = true;
		t->h2d_bytes += (double)bytes;
		t->h2d_ms += ms;
		t->next_fill++;
		pthread_cond_broadcast(&t->cv);
		pthread_mutex_unlock(&t->mu);
	}
	return NULL;
}

// The next device batch, in order; *wait_ms: how long the host waited.
static dslot *take_batch(gpu_train *t, double *wait_ms, bool *bad_data, char *why, size_t why_size)
{
	double t0 = now_ms();
	struct timespec deadline;
	dslot *s;

	if (t->cfg.frozen) {
		*wait_ms = 0;
		return &t->slots[0];
	}
	clock_gettime(CLOCK_REALTIME, &deadline);
	deadline.tv_sec += (time_t)t->cfg.timeout_s;
	pthread_mutex_lock(&t->mu);
	s = &t->slots[t->next_take % (unsigned long long)t->n_slots];
	while (!s->ready && !t->failed)
		if (pthread_cond_timedwait(&t->cv, &t->mu, &deadline) == ETIMEDOUT) {
			snprintf(why, why_size, "no batch from the loader after %.0f s (step %d)", t->cfg.timeout_s,
				 t->step);
			pthread_mutex_unlock(&t->mu);
			return NULL;
		}
	if (!s->ready) {       // batches copied before a failure are still used
		snprintf(why, why_size, "%s", t->err);
		*bad_data = t->bad_data;
		pthread_mutex_unlock(&t->mu);
		return NULL;
	}
	pthread_mutex_unlock(&t->mu);
	*wait_ms = now_ms() - t0;
	return s;
}

// The kernels that read s are queued: the copy stream may refill it after
// them.
static int give_back(gpu_train *t, dslot *s, char *why, size_t why_size)
{
	if (t->cfg.frozen)
		return 0;
	CUDA_TRY(cudaEventRecord(s->consumed, t->compute), "cudaEventRecord");
	pthread_mutex_lock(&t->mu);
	s->ready = false;
	t->next_take++;
	pthread_cond_broadcast(&t->cv);
	pthread_mutex_unlock(&t->mu);
	return 0;
}

// ---- the model on the GPU ----------------------------------------------------

#define DW(t, p) ((t)->w + (t)->params[p].offset)
#define DG(t, p) ((t)->g + (t)->params[p].offset)

static int mlp_fwd(gpu_train *t, dev_layer *ls, int nl, const float *x, int n, char *why, size_t why_size)
{
	for (int i = 0; i < nl; i++) {
		OPS_TRY(cuda_linear_fwd(t->ops, x, DW(t, ls[i].pw), DW(t, ls[i].pb), ls[i].y, n, ls[i].in, ls[i].out,
					ls[i].relu), "linear forward");
		x = ls[i].y;
	}
	return 0;
}

static int mlp_bwd(gpu_train *t, dev_layer *ls, int nl, const float *x, float *dx, int n, char *why,
		   size_t why_size)
{
	for (int i = nl - 1; i >= 0; i--) {
		const float *in = i ? ls[i - 1].y : x;
		float *din = i ? ls[i - 1].dy : dx;

		OPS_TRY(cuda_linear_bwd(t->ops, in, DW(t, ls[i].pw), ls[i].y, ls[i].dy, din, DG(t, ls[i].pw),
					DG(t, ls[i].pb), n, ls[i].in, ls[i].out, ls[i].relu), "linear backward");
		if (ready(t, ls[i].pb, why, why_size) || ready(t, ls[i].pw, why, why_size))
			return -1;
	}
	return 0;
}

// forward, loss (into t->loss), backward of one micro-batch
static int micro_batch(gpu_train *t, const dslot *s, int k, double scale_n, bool last, char *why, size_t why_size)
{
	const int zw = DLRM_DIM * (DLRM_TABLES + 1), n = s->n;
	dev_layer *out = &t->top[t->n_top - 1];

	CUDA_TRY(cudaStreamWaitEvent(t->compute, s->copied, 0), "cudaStreamWaitEvent");
	CUDA_TRY(cudaEventRecord(t->f0[k], t->compute), "cudaEventRecord");
	if (t->emb0 < 0) {
		if (mlp_fwd(t, t->top, t->n_top, s->dense, n, why, why_size))
			return -1;
	} else {
		if (mlp_fwd(t, t->bot, t->n_bot, s->dense, n, why, why_size))
			return -1;
		CUDA_TRY(cudaMemcpy2DAsync(t->z, zw * sizeof(float), t->bot[t->n_bot - 1].y, DLRM_DIM * sizeof(float),
					   DLRM_DIM * sizeof(float), (size_t)n, cudaMemcpyDeviceToDevice, t->compute),
			 "concatenation");
		OPS_TRY(cuda_embbag_multi_fwd(t->ops, DW(t, t->emb0), t->rows, DLRM_TABLES, s->sparse, t->z + DLRM_DIM,
					      zw, n, DLRM_BAG, DLRM_DIM), "embedding-bag forward");
		if (mlp_fwd(t, t->top, t->n_top, t->z, n, why, why_size))
			return -1;
	}
	CUDA_TRY(cudaEventRecord(t->f1[k], t->compute), "cudaEventRecord");
	OPS_TRY(cuda_bce_logits(t->ops, out->y, s->label, out->dy, t->loss, n, scale_n), "loss");
	if (last && t->nccl) {
		// the step's loss summed over ranks, first on the comm stream
		// (every rank queues its collectives in the same order)
		ncclResult_t r;

		CUDA_TRY(cudaEventRecord(t->ev_loss, t->compute), "cudaEventRecord");
		CUDA_TRY(cudaStreamWaitEvent(t->commst, t->ev_loss, 0), "cudaStreamWaitEvent");
		r = ncclAllReduce(t->loss, t->loss, 1, ncclDouble, ncclSum, t->nccl, t->commst);
		if (r != ncclSuccess) {
			snprintf(why, why_size, "ncclAllReduce of the loss: %s (%s)", ncclGetErrorString(r),
				 ncclGetLastError(t->nccl));
			return -1;
		}
	}
	if (t->emb0 < 0) {
		if (mlp_bwd(t, t->top, t->n_top, s->dense, NULL, n, why, why_size))
			return -1;
	} else {
		dev_layer *l3 = &t->bot[t->n_bot - 1];

		if (mlp_bwd(t, t->top, t->n_top, t->z, t->dz, n, why, why_size))
			return -1;
		OPS_TRY(cuda_embbag_multi_bwd(t->ops, t->dz + DLRM_DIM, zw, s->sparse, DG(t, t->emb0), t->rows,
					      DLRM_TABLES, n, DLRM_BAG, DLRM_DIM), "embedding-bag backward");
		for (int tb = DLRM_TABLES - 1; tb >= 0; tb--)
			if (ready(t, t->emb0 + tb, why, why_size))
				return -1;
		CUDA_TRY(cudaMemcpy2DAsync(l3->dy, DLRM_DIM * sizeof(float), t->dz, zw * sizeof(float),
					   DLRM_DIM * sizeof(float), (size_t)n, cudaMemcpyDeviceToDevice, t->compute),
			 "concatenation gradient");
		if (mlp_bwd(t, t->bot, t->n_bot, s->dense, NULL, n, why, why_size))
			return -1;
	}
	CUDA_TRY(cudaEventRecord(t->b1[k], t->compute), "cudaEventRecord");
	return 0;
}

static float elapsed(cudaEvent_t a, cudaEvent_t b)
{
	float ms = 0;

	return cudaEventElapsedTime(&ms, a, b) == cudaSuccess ? ms : 0.0f;
}

extern "C" int gpu_train_step(gpu_train *t, gpu_step *out, bool *bad_data, char *why, size_t why_size)
{
	const double scale_n = (double)t->cfg.batch * t->cfg.accum;

	memset(out, 0, sizeof(*out));
	*bad_data = false;
	// the previous step ended with a full sync: nothing reads g or loss now
	CUDA_TRY(cudaMemsetAsync(t->g, 0, t->n_w * sizeof(float), t->compute), "cudaMemsetAsync");
	CUDA_TRY(cudaMemsetAsync(t->loss, 0, sizeof(double), t->compute), "cudaMemsetAsync");
	for (int k = 0; k < t->cfg.accum; k++) {
		double wait = 0;
		dslot *s = take_batch(t, &wait, bad_data, why, why_size);
		bool last = k == t->cfg.accum - 1;

		if (!s)
			return -1;
		out->data_wait_ms += wait;
		out->h2d_ms += t->cfg.frozen ? 0 : s->h2d_ms;
		t->sync = last;
		if (last) {
			t->n_order = 0;
			for (int i = 0; i < t->nb; i++) {
				t->b[i].pending = t->b[i].n_params;
				t->b[i].launched = false;
			}
		}
		if (micro_batch(t, s, k, scale_n, last, why, why_size) || give_back(t, s, why, why_size))
			return -1;
	}
	if (t->nccl) {
		for (int i = 0; i < t->nb; i++)
			if (!t->b[i].launched && launch_bucket(t, i, why, why_size))
				return -1;
		CUDA_TRY(cudaEventRecord(t->comm_done, t->commst), "cudaEventRecord");
		CUDA_TRY(cudaStreamWaitEvent(t->compute, t->comm_done, 0), "cudaStreamWaitEvent");
	}
	CUDA_TRY(cudaEventRecord(t->synced, t->compute), "cudaEventRecord");
	// NCCL summed the gradients: the averaging is folded into the step size
	OPS_TRY(cuda_sgd(t->ops, t->w, t->g, t->n_w, t->cfg.lr / (float)t->cm->world), "SGD");
	CUDA_TRY(cudaEventRecord(t->opt_end, t->compute), "cudaEventRecord");
	CUDA_TRY(cudaMemcpyAsync(t->h_loss, t->loss, sizeof(double), cudaMemcpyDeviceToHost, t->compute),
		 "loss copy");
	CUDA_TRY(cudaEventRecord(t->done, t->compute), "cudaEventRecord");
	if (wait_event(t, t->done, t->nccl ? "gradient all-reduce" : "training step", why, why_size))
		return -1;
	for (int k = 0; k < t->cfg.accum; k++) {
		out->fwd_ms += elapsed(t->f0[k], t->f1[k]);
		out->bwd_ms += elapsed(t->f1[k], t->b1[k]);
	}
	out->comm_exposed_ms = elapsed(t->b1[t->cfg.accum - 1], t->synced);
	out->opt_ms = elapsed(t->synced, t->opt_end);
	for (int i = 0; t->nccl && i < t->nb; i++)
		out->comm_ms += elapsed(t->b[i].c0, t->b[i].c1);
	out->loss_sum = *t->h_loss;
	t->step++;
	return 0;
}

extern "C" void gpu_train_rebuild(gpu_train *t)
{
	char why[256];

	if (t->n_order == t->n_params && build_buckets(t, t->order, why, sizeof(why)))
		fprintf(stderr, "nodetune-harness: rebuilding buckets: %s\n", why);
}

extern "C" int gpu_train_buckets(const gpu_train *t)
{
	return t->nb;
}

extern "C" int gpu_train_fetch_weights(gpu_train *t, char *why, size_t why_size)
{
	CUDA_TRY(cudaMemcpy(model_weights(t->m, NULL), t->w, t->n_w * sizeof(float), cudaMemcpyDeviceToHost),
		 "weights copy");
	return 0;
}

extern "C" void gpu_train_h2d(const gpu_train *t, double *loader_gbps, double *pinned_gbps)
{
	*loader_gbps = t->h2d_ms > 0 ? t->h2d_bytes / (t->h2d_ms * 1e6) : 0;
	*pinned_gbps = t->pinned_gbps;
}

extern "C" const char *gpu_train_device(const gpu_train *t)
{
	return t->devname;
}

// ---- setup ------------------------------------------------------------------

static int alloc_layers(gpu_train *t, bool top, dev_layer **ret, int *ret_n, char *why, size_t why_size)
{
	model_layer_info info[1024];
	int n = model_layers(t->m, top, info, 1024);
	dev_layer *ls;

	*ret_n = n;
	if (n > 1024) {
		snprintf(why, why_size, "too many layers (%d)", n);
		return -1;
	}
	ls = *ret = (dev_layer *)calloc((size_t)(n ? n : 1), sizeof(dev_layer));
	if (!ls) {
		snprintf(why, why_size, "out of memory");
		return -1;
	}
	for (int i = 0; i < n; i++) {
		size_t bytes = (size_t)t->cfg.batch * info[i].out * sizeof(float);

		ls[i] = dev_layer{ info[i].in, info[i].out, info[i].pw, info[i].pb, info[i].relu, NULL, NULL };
		CUDA_TRY(cudaMalloc((void **)&ls[i].y, bytes), "activations");
		CUDA_TRY(cudaMalloc((void **)&ls[i].dy, bytes), "activation gradients");
	}
	return 0;
}

static void free_layers(dev_layer *ls, int n)
{
	for (int i = 0; ls && i < n; i++) {
		cudaFree(ls[i].y);
		cudaFree(ls[i].dy);
	}
	free(ls);
}

static int setup_nccl(gpu_train *t, char *why, size_t why_size)
{
	ncclUniqueId id;
	ncclResult_t r;

	memset(&id, 0, sizeof(id));
	if (t->cm->rank == 0 && (r = ncclGetUniqueId(&id)) != ncclSuccess) {
		snprintf(why, why_size, "ncclGetUniqueId: %s", ncclGetErrorString(r));
		return -1;
	}
	if (t->cm->bcast(t->cm, &id, sizeof(id), 0, why, why_size))
		return -1;
	// ncclCommInitRank blocks until every rank has joined: bounded by
	// --timeout (a rank that died after the id went out)
	comm_deadline_set(t->cfg.timeout_s, t->cm->rank, "NCCL set-up (ncclCommInitRank)");
	r = ncclCommInitRank(&t->nccl, t->cm->world, id, t->cm->rank);
	comm_deadline_clear();
	if (r != ncclSuccess) {
		t->nccl = NULL;
		snprintf(why, why_size, "ncclCommInitRank (rank %d of %d): %s", t->cm->rank, t->cm->world,
			 ncclGetErrorString(r));
		return -1;
	}
	return 0;
}

// the reference for the loader's copies: cudaMemcpy of the same size from
// page-locked memory, on the same stream, best of several
static void measure_pinned(gpu_train *t, size_t bytes)
{
	void *h = gpu_host_alloc(bytes), *d = NULL;
	cudaEvent_t a, b;
	double best = 0;

	if (!h || cudaMalloc(&d, bytes) != cudaSuccess || cudaEventCreate(&a) != cudaSuccess) {
		gpu_host_free(h);
		return;
	}
	cudaEventCreate(&b);
	for (int i = 0; i < 23; i++) {
		float ms = 0;

		cudaEventRecord(a, t->copy);
		cudaMemcpyAsync(d, h, bytes, cudaMemcpyHostToDevice, t->copy);
		cudaEventRecord(b, t->copy);
		if (cudaEventSynchronize(b) != cudaSuccess)
			break;
		cudaEventElapsedTime(&ms, a, b);
		if (i >= 3 && ms > 0 && bytes / (ms * 1e6) > best)
			best = bytes / (ms * 1e6);
	}
	t->pinned_gbps = best;
	cudaEventDestroy(a);
	cudaEventDestroy(b);
	cudaFree(d);
	gpu_host_free(h);
}

extern "C" gpu_train *gpu_train_create(const gpu_train_config *cfg, model *m, comm *cm, loader *ld, char *why,
				       size_t why_size)
{
	gpu_train *t = (gpu_train *)calloc(1, sizeof(gpu_train));
	const model_config *mc = model_config_of(m);
	size_t payload;
	int *rev = NULL;
	cudaDeviceProp prop;

	if (!t) {
		snprintf(why, why_size, "out of memory");
		return NULL;
	}
	t->cfg = *cfg;
	t->m = m;
	t->cm = cm;
	t->ld = ld;
	pthread_mutex_init(&t->mu, NULL);
	pthread_cond_init(&t->cv, NULL);
	if (cudaGetDevice(&t->dev) != cudaSuccess || cudaGetDeviceProperties(&prop, t->dev) != cudaSuccess) {
		snprintf(why, why_size, "no current GPU");
		goto fail;
	}
	snprintf(t->devname, sizeof(t->devname), "%s", prop.name);
	if (cudaStreamCreateWithFlags(&t->compute, cudaStreamNonBlocking) != cudaSuccess ||
	    cudaStreamCreateWithFlags(&t->copy, cudaStreamNonBlocking) != cudaSuccess ||
	    cudaStreamCreateWithFlags(&t->commst, cudaStreamNonBlocking) != cudaSuccess ||
	    !(t->ops = cuda_ops_create(t->compute))) {
		snprintf(why, why_size, "cannot create CUDA streams or the cuBLAS handle");
		goto fail;
	}
	t->params = model_params(m, &t->n_params);
	model_weights(m, &t->n_w);
	if (cudaMalloc((void **)&t->w, t->n_w * sizeof(float)) != cudaSuccess ||
	    cudaMalloc((void **)&t->g, t->n_w * sizeof(float)) != cudaSuccess ||
	    cudaMemcpy(t->w, model_weights(m, NULL), t->n_w * sizeof(float), cudaMemcpyHostToDevice) != cudaSuccess) {
		snprintf(why, why_size, "cannot place %zu weights on the GPU", t->n_w);
		goto fail;
	}
	if (alloc_layers(t, false, &t->bot, &t->n_bot, why, why_size) ||
	    alloc_layers(t, true, &t->top, &t->n_top, why, why_size))
		goto fail;
	t->emb0 = model_emb_param0(m);
	t->rows = mc->rows;
	if (t->emb0 >= 0) {
		size_t zb = (size_t)cfg->batch * DLRM_DIM * (DLRM_TABLES + 1) * sizeof(float);

		if (cudaMalloc((void **)&t->z, zb) != cudaSuccess || cudaMalloc((void **)&t->dz, zb) != cudaSuccess) {
			snprintf(why, why_size, "out of GPU memory for activations");
			goto fail;
		}
	}
	if (cudaMalloc((void **)&t->loss, sizeof(double)) != cudaSuccess ||
	    !(t->h_loss = (double *)gpu_host_alloc(sizeof(double)))) {
		snprintf(why, why_size, "out of memory for the loss");
		goto fail;
	}
	t->f0 = (cudaEvent_t *)calloc((size_t)cfg->accum, sizeof(cudaEvent_t));
	t->f1 = (cudaEvent_t *)calloc((size_t)cfg->accum, sizeof(cudaEvent_t));
	t->b1 = (cudaEvent_t *)calloc((size_t)cfg->accum, sizeof(cudaEvent_t));
	t->bucket_of = (int *)calloc((size_t)t->n_params, sizeof(int));
	t->order = (int *)calloc((size_t)t->n_params, sizeof(int));
	rev = (int *)calloc((size_t)t->n_params, sizeof(int));
	if (!t->f0 || !t->f1 || !t->b1 || !t->bucket_of || !t->order || !rev) {
		snprintf(why, why_size, "out of memory");
		goto fail;
	}
	for (int k = 0; k < cfg->accum; k++)
		if (cudaEventCreate(&t->f0[k]) || cudaEventCreate(&t->f1[k]) || cudaEventCreate(&t->b1[k])) {
			snprintf(why, why_size, "cannot create CUDA events");
			goto fail;
		}
	if (cudaEventCreateWithFlags(&t->ev_loss, cudaEventDisableTiming) || cudaEventCreate(&t->comm_done) ||
	    cudaEventCreate(&t->synced) || cudaEventCreate(&t->opt_end) ||
	    cudaEventCreateWithFlags(&t->done, cudaEventDisableTiming)) {
		snprintf(why, why_size, "cannot create CUDA events");
		goto fail;
	}
	for (int i = 0; i < t->n_params; i++)
		rev[i] = t->n_params - 1 - i;
	if (build_buckets(t, rev, why, why_size))
		goto fail;
	if (cm->world > 1 && setup_nccl(t, why, why_size))
		goto fail;

	// device batch buffers, and the copy stage
	payload = batch_payload_size((uint32_t)cfg->batch, (uint32_t)model_dense_width(mc),
				     mc->kind == MODEL_DLRM_SMALL ? DLRM_TABLES * DLRM_BAG : 0);
	t->n_slots = cfg->frozen ? 1 : cfg->prefetch;
	t->slots = (dslot *)calloc((size_t)t->n_slots, sizeof(dslot));
	if (!t->slots) {
		snprintf(why, why_size, "out of memory");
		goto fail;
	}
	for (int i = 0; i < t->n_slots; i++) {
		dslot *s = &t->slots[i];

		if (cudaMalloc(&s->mem, payload) || cudaEventCreate(&s->h0) || cudaEventCreate(&s->copied) ||
		    cudaEventCreateWithFlags(&s->consumed, cudaEventDisableTiming)) {
			snprintf(why, why_size, "out of GPU memory for %d batch buffers of %zu bytes", t->n_slots, payload);
			goto fail;
		}
	}
	measure_pinned(t, payload);
	if (cfg->frozen) {
		// the batch pre-placed on the device: copied once, reused
		loader_batch *lb;
		double wait;

		if (loader_next(ld, &lb, &wait, why, why_size) || copy_batch(t, &t->slots[0], lb, why, why_size) ||
		    cudaStreamSynchronize(t->copy) != cudaSuccess) {
			if (!why[0])
				snprintf(why, why_size, "placing the frozen batch on the GPU failed");
			goto fail;
		}
		t->slots[0].ready = true;
	} else {
		if (pthread_create(&t->th, NULL, preload_main, t)) {
			snprintf(why, why_size, "cannot start the preload thread");
			goto fail;
		}
		t->th_started = true;
	}
	free(rev);
	return t;
fail:
	free(rev);
	gpu_train_free(t);
	return NULL;
}

extern "C" void gpu_train_free(gpu_train *t)
{
	if (!t)
		return;
	if (t->th_started) {
		pthread_mutex_lock(&t->mu);
		t->stop = true;
		pthread_cond_broadcast(&t->cv);
		pthread_mutex_unlock(&t->mu);
		pthread_join(t->th, NULL);
	}
	if (t->nccl && !t->nccl_aborted)
		cudaStreamSynchronize(t->commst);
	cudaDeviceSynchronize();
	if (t->nccl && !t->nccl_aborted)   // an aborted one is already freed
		ncclCommDestroy(t->nccl);
	free_buckets(t);
	for (int i = 0; t->slots && i < t->n_slots; i++) {
		cudaFree(t->slots[i].mem);
		cudaEventDestroy(t->slots[i].h0);
		cudaEventDestroy(t->slots[i].copied);
		cudaEventDestroy(t->slots[i].consumed);
	}
	free(t->slots);
	for (int k = 0; k < t->cfg.accum; k++) {
		if (t->f0 && t->f0[k])
			cudaEventDestroy(t->f0[k]);
		if (t->f1 && t->f1[k])
			cudaEventDestroy(t->f1[k]);
		if (t->b1 && t->b1[k])
			cudaEventDestroy(t->b1[k]);
	}
	free(t->f0);
	free(t->f1);
	free(t->b1);
	cudaEvent_t evs[] = { t->ev_loss, t->comm_done, t->synced, t->opt_end, t->done };

	for (cudaEvent_t e : evs)
		if (e)
			cudaEventDestroy(e);
	free_layers(t->bot, t->n_bot);
	free_layers(t->top, t->n_top);
	cudaFree(t->z);
	cudaFree(t->dz);
	cudaFree(t->loss);
	if (t->h_loss)
		gpu_host_free(t->h_loss);
	cudaFree(t->w);
	cudaFree(t->g);
	free(t->bucket_of);
	free(t->order);
	cuda_ops_free(t->ops);
	if (t->compute)
		cudaStreamDestroy(t->compute);
	if (t->copy)
		cudaStreamDestroy(t->copy);
	if (t->commst)
		cudaStreamDestroy(t->commst);
	pthread_mutex_destroy(&t->mu);
	pthread_cond_destroy(&t->cv);
	free(t);
}
