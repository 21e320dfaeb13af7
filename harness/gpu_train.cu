/* SPDX-License-Identifier: MIT */
/* gpu_train.cu — the CUDA trainer row (trainer.h: cuda_trainer); a build
 * without nvcc gets cuda_none.c's row, which fails cleanly.
 *
 * The model is the CPU model's: same params, same flat weight layout, same
 * initial weights (copied from struct model), run with kernels/cuda/ops.h and
 * cuBLAS on a compute stream.
 *
 *   loader (pinned host buffers from gpu_host_alloc)
 *     └─ preload thread: cudaMemcpyAsync of each batch's payload on a copy
 *        stream into one of --prefetch device buffers, ahead of use
 *   compute stream: forward, loss, backward; an event per ready bucket
 *   comm stream:   waits on that event, ncclAllReduce of the bucket (in place
 *                  where its gradients are contiguous, else through a bucket
 *                  buffer), overlapping the rest of backward
 *   compute stream: waits for the comm stream, SGD (lr / world: NCCL sums)
 *
 * Buckets follow ddp_plan_buckets (ddp.h): reverse parameter order, then
 * rebuilt after the first step in the ready order seen.  Every wait on the
 * GPU is a poll with a deadline (--timeout): a peer that died or hangs makes
 * the waiting rank abort its NCCL communicator and fail with a message
 * naming the peer, as PyTorch's NCCL watchdog does.
 */
extern "C" {
#include "comm.h"
#include "cuda_backend.h"
#include "ddp.h"
#include "loader.h"
#include "model.h"
#include "trainer.h"
}

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
#include "nt_clock.h"

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

} // namespace

// What one step took.  GPU phases are timed with CUDA events on their own
// streams; data_wait_ms is host time waiting for a batch on the device.
struct gpu_step {
	double data_wait_ms, h2d_ms, fwd_ms, bwd_ms, comm_exposed_ms, comm_ms, opt_ms;
	double loss_sum;           // sum of this rank's sample losses
};

struct gpu_train {
	trainer_config cfg;
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
	nt_err err;                // the preload thread's failure
	dslot *slots;
	int n_slots;
	unsigned long long next_fill, next_take;
	double h2d_bytes, h2d_ms;
	double pinned_gbps;
	double loss_sum;           // this rank's step_loss of the last step, over ranks
};

static int cuda_fail(struct nt_err *err, const char *what, cudaError_t e)
{
	return err_set(err, -EIO, "%s: %s (%s)", what, cudaGetErrorString(e), cudaGetErrorName(e));
}

static int cuda_try(cudaError_t e, const char *what, struct nt_err *err)
{
	return e == cudaSuccess ? 0 : cuda_fail(err, what, e);
}

// the code of the failure a callee recorded in err
static int err_code(const nt_err *err)
{
	return err && err->code ? err->code : -EIO;
}

#define CUDA_TRY(call, what)                                                                     \
	do {                                                                                     \
		cudaError_t e_ = (call);                                                         \
		if (e_ != cudaSuccess)                                                           \
			return cuda_fail(err, what, e_);                              \
	} while (0)

#define OPS_TRY(call, what)                                                                      \
	do {                                                                                     \
		if ((call) != 0)                                                                 \
			return cuda_fail(err, what, cudaGetLastError());              \
	} while (0)

static int gpu_select(int local_rank, struct nt_err *err)
{
	int n = 0, dev;
	cudaDeviceProp prop;

	CUDA_TRY(cudaGetDeviceCount(&n), "no usable GPU");
	if (n == 0)
		return err_set(err, -ENODEV, "no usable GPU: CUDA sees no device");
	dev = (local_rank < 0 ? 0 : local_rank) % n;
	CUDA_TRY(cudaSetDevice(dev), "cudaSetDevice");
	CUDA_TRY(cudaGetDeviceProperties(&prop, dev), "cudaGetDeviceProperties");
	err_set(err, 0, "GPU %d of %d: %s (sm_%d%d, %.0f GiB)", dev, n, prop.name, prop.major, prop.minor,
		 prop.totalGlobalMem / 1073741824.0);
	return 0;
}

static void *gpu_host_alloc(size_t bytes)
{
	void *p = NULL;

	if (cudaHostAlloc(&p, bytes, cudaHostAllocPortable) != cudaSuccess)
		return NULL;
	memset(p, 0, bytes);
	return p;
}

static void gpu_host_free(void *p)
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

static int build_buckets(gpu_train *t, const int *order, struct nt_err *err)
{
	int *end = (int *)calloc((size_t)t->n_params, sizeof(int)), n, start = 0, r = 0;

	free_buckets(t);
	t->b = (gbucket *)calloc((size_t)t->n_params, sizeof(gbucket));
	if (!end || !t->b) {
		free(end);
		return err_set(err, -ENOMEM, "out of memory");
	}
	n = ddp_plan_buckets(t->params, t->n_params, order, t->cfg.first_bucket_mb, t->cfg.bucket_mb, end);
	for (int bi = 0; bi < n && !r; start = end[bi++]) {
		gbucket *b = &t->b[bi];
		size_t lo;

		t->nb = bi + 1;
		b->n_params = end[bi] - start;
		b->params = (int *)malloc((size_t)b->n_params * sizeof(int));
		if (!b->params) {
			err_set(err, -ENOMEM, "out of memory");
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
			r = cuda_try(cudaMalloc((void **)&b->buf, b->count * sizeof(float)), "bucket buffer", err);
		if (!r)
			r = cuda_try(cudaEventCreateWithFlags(&b->ready, cudaEventDisableTiming), "cudaEventCreate", err);
		if (!r)
			r = cuda_try(cudaEventCreate(&b->c0), "cudaEventCreate", err);
		if (!r)
			r = cuda_try(cudaEventCreate(&b->c1), "cudaEventCreate", err);
	}
	free(end);
	return r;
}

// Hand bucket bi to the comm stream: it waits for the gradients (an event
// on the compute stream) and all-reduces them while backward goes on.
static int launch_bucket(gpu_train *t, int bi, struct nt_err *err)
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
		return err_set(err, -EIO, "ncclAllReduce of bucket %d: %s (%s)", bi, ncclGetErrorString(r),
			 ncclGetLastError(t->nccl));
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
static int ready(gpu_train *t, int p, struct nt_err *err)
{
	gbucket *b;

	if (!t->sync)
		return 0;
	t->order[t->n_order++] = p;
	b = &t->b[t->bucket_of[p]];
	if (--b->pending == 0 && t->cfg.overlap && t->nccl)
		return launch_bucket(t, t->bucket_of[p], err);
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
static int wait_event(gpu_train *t, cudaEvent_t ev, const char *what, struct nt_err *err)
{
	double t0 = nt_mono_ms(), deadline = t0 + t->cfg.timeout_s * 1e3;

	for (;;) {
		cudaError_t e = cudaEventQuery(ev);
		double now;

		if (e == cudaSuccess)
			return 0;
		if (e != cudaErrorNotReady)
			return cuda_fail(err, what, e);
		if (t->nccl && !t->nccl_aborted) {
			ncclResult_t ae = ncclSuccess;

			if (ncclCommGetAsyncError(t->nccl, &ae) == ncclSuccess && ae != ncclSuccess &&
			    ae != ncclInProgress) {
				char peer[48];

				if (t->cm->world == 2)
					snprintf(peer, sizeof(peer), "peer rank %d", 1 - t->cm->rank);
				else
					snprintf(peer, sizeof(peer), "a peer rank");
				err_set(err, -EIO, "%s (step %d) failed: %s failed or exited (NCCL: %s: %s)", what,
					 t->step, peer, ncclGetErrorString(ae), ncclGetLastError(t->nccl));
				abort_nccl(t);
				return err_code(err);
			}
		}
		now = nt_mono_ms();
		if (now > deadline) {
			if (t->cm->world == 1)
				err_set(err, -ETIMEDOUT, "%s (step %d) not done after %.0f s: the GPU stopped making progress",
					 what, t->step, t->cfg.timeout_s);
			else if (t->cm->world == 2)
				err_set(err, -ETIMEDOUT, "%s (step %d) not done after %.0f s: peer rank %d stopped responding",
					 what, t->step, t->cfg.timeout_s, 1 - t->cm->rank);
			else
				err_set(err, -ETIMEDOUT, "%s (step %d) not done after %.0f s: one of the %d peer ranks stopped responding",
					 what, t->step, t->cfg.timeout_s, t->cm->world - 1);
			abort_nccl(t);
			return err_code(err);
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

static void preload_fail(gpu_train *t, const nt_err *e, bool bad_data)
{
	pthread_mutex_lock(&t->mu);
	if (!t->failed) {
		t->failed = true;
		t->bad_data = bad_data;
		t->err = *e;
	}
	pthread_cond_broadcast(&t->cv);
	pthread_mutex_unlock(&t->mu);
}

// Copy loader batch lb into device slot s on the copy stream; the tensors'
// device addresses are their offsets in the host buffer.
static int copy_batch(gpu_train *t, dslot *s, const loader_batch *lb, struct nt_err *err)
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
	nt_err e;

	if (cudaSetDevice(t->dev) != cudaSuccess) {
		err_set(&e, -EIO, "preload thread: cudaSetDevice failed");
		preload_fail(t, &e, false);
		return NULL;
	}
	for (;;) {
		loader_batch *lb;
		dslot *s;
		double wait;
		size_t bytes;
		float ms = 0;
		cudaError_t ce;

		pthread_mutex_lock(&t->mu);
		s = &t->slots[t->next_fill % (unsigned long long)t->n_slots];
		while (!t->stop && !t->failed && s->ready)
			pthread_cond_wait(&t->cv, &t->mu);
		if (t->stop || t->failed) {
			pthread_mutex_unlock(&t->mu);
			break;
		}
		pthread_mutex_unlock(&t->mu);

		if (loader_next(t->ld, &lb, &wait, &e)) {
			preload_fail(t, &e, true);
			break;
		}
		if (copy_batch(t, s, lb, &e)) {
			loader_release(t->ld, lb);
			preload_fail(t, &e, false);
			break;
		}
		bytes = lb->bytes;
		// the host buffer goes back once the copy is done; poll so that a
		// stop is seen even while the GPU is stuck
		while ((ce = cudaEventQuery(s->copied)) == cudaErrorNotReady && !t->stop) {
			struct timespec ts = { 0, 20000 };

			nanosleep(&ts, NULL);
		}
		loader_release(t->ld, lb);
		if (ce != cudaSuccess) {
			if (!t->stop) {
				cuda_fail(&e, "batch copy to the GPU", ce);
				preload_fail(t, &e, false);
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
static dslot *take_batch(gpu_train *t, double *wait_ms, bool *bad_data, struct nt_err *err)
{
	double t0 = nt_mono_ms();
	struct timespec deadline;
	dslot *s;

	if (t->cfg.frozen) {
		*wait_ms = 0;
		return &t->slots[0];
	}
	deadline = nt_deadline(CLOCK_REALTIME, t->cfg.timeout_s);
	pthread_mutex_lock(&t->mu);
	s = &t->slots[t->next_take % (unsigned long long)t->n_slots];
	while (!s->ready && !t->failed)
		if (pthread_cond_timedwait(&t->cv, &t->mu, &deadline) == ETIMEDOUT) {
			err_set(err, -ETIMEDOUT, "no batch from the loader after %.0f s (step %d)", t->cfg.timeout_s,
				 t->step);
			pthread_mutex_unlock(&t->mu);
			return NULL;
		}
	if (!s->ready) {       // batches copied before a failure are still used
		err_set(err, t->err.code, "%s", t->err.msg);
		*bad_data = t->bad_data;
		pthread_mutex_unlock(&t->mu);
		return NULL;
	}
	pthread_mutex_unlock(&t->mu);
	*wait_ms = nt_mono_ms() - t0;
	return s;
}

// The kernels that read s are queued: the copy stream may refill it after
// them.
static int give_back(gpu_train *t, dslot *s, struct nt_err *err)
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

static int mlp_fwd(gpu_train *t, dev_layer *ls, int nl, const float *x, int n, struct nt_err *err)
{
	for (int i = 0; i < nl; i++) {
		OPS_TRY(cuda_linear_fwd(t->ops, x, DW(t, ls[i].pw), DW(t, ls[i].pb), ls[i].y, n, ls[i].in, ls[i].out,
					ls[i].relu), "linear forward");
		x = ls[i].y;
	}
	return 0;
}

static int mlp_bwd(gpu_train *t, dev_layer *ls, int nl, const float *x, float *dx, int n, struct nt_err *err)
{
	for (int i = nl - 1; i >= 0; i--) {
		const float *in = i ? ls[i - 1].y : x;
		float *din = i ? ls[i - 1].dy : dx;

		OPS_TRY(cuda_linear_bwd(t->ops, in, DW(t, ls[i].pw), ls[i].y, ls[i].dy, din, DG(t, ls[i].pw),
					DG(t, ls[i].pb), n, ls[i].in, ls[i].out, ls[i].relu), "linear backward");
		if (ready(t, ls[i].pb, err) || ready(t, ls[i].pw, err))
			return err_code(err);
	}
	return 0;
}

// forward, loss (into t->loss), backward of one micro-batch
static int micro_batch(gpu_train *t, const dslot *s, int k, double scale_n, bool last, struct nt_err *err)
{
	const int zw = DLRM_DIM * (DLRM_TABLES + 1), n = s->n;
	dev_layer *out = &t->top[t->n_top - 1];

	CUDA_TRY(cudaStreamWaitEvent(t->compute, s->copied, 0), "cudaStreamWaitEvent");
	CUDA_TRY(cudaEventRecord(t->f0[k], t->compute), "cudaEventRecord");
	if (t->emb0 < 0) {
		if (mlp_fwd(t, t->top, t->n_top, s->dense, n, err))
			return err_code(err);
	} else {
		if (mlp_fwd(t, t->bot, t->n_bot, s->dense, n, err))
			return err_code(err);
		CUDA_TRY(cudaMemcpy2DAsync(t->z, zw * sizeof(float), t->bot[t->n_bot - 1].y, DLRM_DIM * sizeof(float),
					   DLRM_DIM * sizeof(float), (size_t)n, cudaMemcpyDeviceToDevice, t->compute),
			 "concatenation");
		OPS_TRY(cuda_embbag_multi_fwd(t->ops, DW(t, t->emb0), t->rows, DLRM_TABLES, s->sparse, t->z + DLRM_DIM,
					      zw, n, DLRM_BAG, DLRM_DIM), "embedding-bag forward");
		if (mlp_fwd(t, t->top, t->n_top, t->z, n, err))
			return err_code(err);
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
			return err_set(err, -EIO, "ncclAllReduce of the loss: %s (%s)", ncclGetErrorString(r),
				 ncclGetLastError(t->nccl));
		}
	}
	if (t->emb0 < 0) {
		if (mlp_bwd(t, t->top, t->n_top, s->dense, NULL, n, err))
			return err_code(err);
	} else {
		dev_layer *l3 = &t->bot[t->n_bot - 1];

		if (mlp_bwd(t, t->top, t->n_top, t->z, t->dz, n, err))
			return err_code(err);
		OPS_TRY(cuda_embbag_multi_bwd(t->ops, t->dz + DLRM_DIM, zw, s->sparse, DG(t, t->emb0), t->rows,
					      DLRM_TABLES, n, DLRM_BAG, DLRM_DIM), "embedding-bag backward");
		for (int tb = DLRM_TABLES - 1; tb >= 0; tb--)
			if (ready(t, t->emb0 + tb, err))
				return err_code(err);
		CUDA_TRY(cudaMemcpy2DAsync(l3->dy, DLRM_DIM * sizeof(float), t->dz, zw * sizeof(float),
					   DLRM_DIM * sizeof(float), (size_t)n, cudaMemcpyDeviceToDevice, t->compute),
			 "concatenation gradient");
		if (mlp_bwd(t, t->bot, t->n_bot, s->dense, NULL, n, err))
			return err_code(err);
	}
	CUDA_TRY(cudaEventRecord(t->b1[k], t->compute), "cudaEventRecord");
	return 0;
}

static float elapsed(cudaEvent_t a, cudaEvent_t b)
{
	float ms = 0;

	return cudaEventElapsedTime(&ms, a, b) == cudaSuccess ? ms : 0.0f;
}

static int gpu_train_step(gpu_train *t, gpu_step *out, bool *bad_data, struct nt_err *err)
{
	const double scale_n = (double)t->cfg.batch * t->cfg.accum;

	memset(out, 0, sizeof(*out));
	*bad_data = false;
	// the previous step ended with a full sync: nothing reads g or loss now
	CUDA_TRY(cudaMemsetAsync(t->g, 0, t->n_w * sizeof(float), t->compute), "cudaMemsetAsync");
	CUDA_TRY(cudaMemsetAsync(t->loss, 0, sizeof(double), t->compute), "cudaMemsetAsync");
	for (int k = 0; k < t->cfg.accum; k++) {
		double wait = 0;
		dslot *s = take_batch(t, &wait, bad_data, err);
		bool last = k == t->cfg.accum - 1;

		if (!s)
			return err_code(err);
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
		if (micro_batch(t, s, k, scale_n, last, err) || give_back(t, s, err))
			return err_code(err);
	}
	if (t->nccl) {
		for (int i = 0; i < t->nb; i++)
			if (!t->b[i].launched && launch_bucket(t, i, err))
				return err_code(err);
		CUDA_TRY(cudaEventRecord(t->comm_done, t->commst), "cudaEventRecord");
		CUDA_TRY(cudaStreamWaitEvent(t->compute, t->comm_done, 0), "cudaStreamWaitEvent");
	}
	CUDA_TRY(cudaEventRecord(t->synced, t->compute), "cudaEventRecord");
	// NCCL summed the gradients: the averaging is folded into the step size
	OPS_TRY(cuda_sgd(t->ops, t->w, t->g, t->n_w, (float)t->cfg.lr / (float)t->cm->world), "SGD");
	CUDA_TRY(cudaEventRecord(t->opt_end, t->compute), "cudaEventRecord");
	CUDA_TRY(cudaMemcpyAsync(t->h_loss, t->loss, sizeof(double), cudaMemcpyDeviceToHost, t->compute),
		 "loss copy");
	CUDA_TRY(cudaEventRecord(t->done, t->compute), "cudaEventRecord");
	if (wait_event(t, t->done, t->nccl ? "gradient all-reduce" : "training step", err))
		return err_code(err);
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

static void gpu_train_rebuild(gpu_train *t)
{
	nt_err err;

	if (t->n_order == t->n_params && build_buckets(t, t->order, &err))
		fprintf(stderr, "nodetune-harness: rebuilding buckets: %s\n", err.msg);
}

static int gpu_train_buckets(const gpu_train *t)
{
	return t->nb;
}

static int gpu_train_fetch_weights(gpu_train *t, struct nt_err *err)
{
	CUDA_TRY(cudaMemcpy(model_weights(t->m, NULL), t->w, t->n_w * sizeof(float), cudaMemcpyDeviceToHost),
		 "weights copy");
	return 0;
}

static void gpu_train_h2d(const gpu_train *t, double *loader_gbps, double *pinned_gbps)
{
	*loader_gbps = t->h2d_ms > 0 ? t->h2d_bytes / (t->h2d_ms * 1e6) : 0;
	*pinned_gbps = t->pinned_gbps;
}

static const char *gpu_train_device(const gpu_train *t)
{
	return t->devname;
}

static void gpu_train_free(gpu_train *t);

// ---- setup ------------------------------------------------------------------

static int alloc_layers(gpu_train *t, bool top, dev_layer **ret, int *ret_n, struct nt_err *err)
{
	model_layer_info info[1024];
	int n = model_layers(t->m, top, info, 1024);
	dev_layer *ls;

	*ret_n = n;
	if (n > 1024) {
		return err_set(err, -EIO, "too many layers (%d)", n);
	}
	ls = *ret = (dev_layer *)calloc((size_t)(n ? n : 1), sizeof(dev_layer));
	if (!ls) {
		return err_set(err, -ENOMEM, "out of memory");
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

static int setup_nccl(gpu_train *t, struct nt_err *err)
{
	ncclUniqueId id;
	ncclResult_t r;

	memset(&id, 0, sizeof(id));
	if (t->cm->rank == 0 && (r = ncclGetUniqueId(&id)) != ncclSuccess) {
		return err_set(err, -EIO, "ncclGetUniqueId: %s", ncclGetErrorString(r));
	}
	if (t->cm->ops->bcast(t->cm, &id, sizeof(id), 0, err))
		return err_code(err);
	// ncclCommInitRank blocks until every rank has joined: bounded by
	// --timeout (a rank that died after the id went out)
	comm_deadline_set(t->cfg.timeout_s, t->cm->rank, "NCCL set-up (ncclCommInitRank)");
	r = ncclCommInitRank(&t->nccl, t->cm->world, id, t->cm->rank);
	comm_deadline_clear();
	if (r != ncclSuccess) {
		t->nccl = NULL;
		return err_set(err, -EIO, "ncclCommInitRank (rank %d of %d): %s", t->cm->rank, t->cm->world,
			 ncclGetErrorString(r));
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

// the device, its streams, the weights and the activations
static int setup_device(gpu_train *t, const trainer_config *cfg, model *m, struct nt_err *err)
{
	const model_config *mc = model_config_of(m);
	cudaDeviceProp prop;

	if (cudaGetDevice(&t->dev) != cudaSuccess || cudaGetDeviceProperties(&prop, t->dev) != cudaSuccess) {
		return err_set(err, -EIO, "no current GPU");
	}
	snprintf(t->devname, sizeof(t->devname), "%s", prop.name);
	if (cudaStreamCreateWithFlags(&t->compute, cudaStreamNonBlocking) != cudaSuccess ||
	    cudaStreamCreateWithFlags(&t->copy, cudaStreamNonBlocking) != cudaSuccess ||
	    cudaStreamCreateWithFlags(&t->commst, cudaStreamNonBlocking) != cudaSuccess ||
	    !(t->ops = cuda_ops_create(t->compute))) {
		return err_set(err, -EIO, "cannot create CUDA streams or the cuBLAS handle");
	}
	t->params = model_params(m, &t->n_params);
	model_weights(m, &t->n_w);
	if (cudaMalloc((void **)&t->w, t->n_w * sizeof(float)) != cudaSuccess ||
	    cudaMalloc((void **)&t->g, t->n_w * sizeof(float)) != cudaSuccess ||
	    cudaMemcpy(t->w, model_weights(m, NULL), t->n_w * sizeof(float), cudaMemcpyHostToDevice) != cudaSuccess) {
		return err_set(err, -EIO, "cannot place %zu weights on the GPU", t->n_w);
	}
	if (alloc_layers(t, false, &t->bot, &t->n_bot, err) ||
	    alloc_layers(t, true, &t->top, &t->n_top, err))
		return err_code(err);
	t->emb0 = model_emb_param0(m);
	t->rows = mc->rows;
	if (t->emb0 >= 0) {
		size_t zb = (size_t)cfg->batch * DLRM_DIM * (DLRM_TABLES + 1) * sizeof(float);

		if (cudaMalloc((void **)&t->z, zb) != cudaSuccess || cudaMalloc((void **)&t->dz, zb) != cudaSuccess) {
			return err_set(err, -ENOMEM, "out of GPU memory for activations");
		}
	}
	if (cudaMalloc((void **)&t->loss, sizeof(double)) != cudaSuccess ||
	    !(t->h_loss = (double *)gpu_host_alloc(sizeof(double)))) {
		return err_set(err, -ENOMEM, "out of memory for the loss");
	}
	return 0;
}

// the per-micro-batch events, the buckets (reverse parameter order) and NCCL
static int setup_buckets(gpu_train *t, const trainer_config *cfg, comm *cm, struct nt_err *err)
{
	int *rev = NULL, r = -1;

	t->f0 = (cudaEvent_t *)calloc((size_t)cfg->accum, sizeof(cudaEvent_t));
	t->f1 = (cudaEvent_t *)calloc((size_t)cfg->accum, sizeof(cudaEvent_t));
	t->b1 = (cudaEvent_t *)calloc((size_t)cfg->accum, sizeof(cudaEvent_t));
	t->bucket_of = (int *)calloc((size_t)t->n_params, sizeof(int));
	t->order = (int *)calloc((size_t)t->n_params, sizeof(int));
	rev = (int *)calloc((size_t)t->n_params, sizeof(int));
	if (!t->f0 || !t->f1 || !t->b1 || !t->bucket_of || !t->order || !rev) {
		err_set(err, -ENOMEM, "out of memory");
		goto out_free_rev;
	}
	for (int k = 0; k < cfg->accum; k++)
		if (cudaEventCreate(&t->f0[k]) || cudaEventCreate(&t->f1[k]) || cudaEventCreate(&t->b1[k])) {
			err_set(err, -EIO, "cannot create CUDA events");
			goto out_free_rev;
		}
	if (cudaEventCreateWithFlags(&t->ev_loss, cudaEventDisableTiming) || cudaEventCreate(&t->comm_done) ||
	    cudaEventCreate(&t->synced) || cudaEventCreate(&t->opt_end) ||
	    cudaEventCreateWithFlags(&t->done, cudaEventDisableTiming)) {
		err_set(err, -EIO, "cannot create CUDA events");
		goto out_free_rev;
	}
	for (int i = 0; i < t->n_params; i++)
		rev[i] = t->n_params - 1 - i;
	if (build_buckets(t, rev, err))
		goto out_free_rev;
	if (cm->world > 1 && setup_nccl(t, err))
		goto out_free_rev;
	r = 0;
out_free_rev:
	free(rev);
	return r;
}

// device batch buffers, and the copy stage
static int setup_slots(gpu_train *t, const trainer_config *cfg, loader *ld, struct nt_err *err)
{
	const model_config *mc = model_config_of(t->m);
	size_t payload;

	payload = batch_payload_size((uint32_t)cfg->batch, (uint32_t)model_dense_width(mc),
				     mc->kind == MODEL_DLRM_SMALL ? DLRM_TABLES * DLRM_BAG : 0);
	t->n_slots = cfg->frozen ? 1 : cfg->prefetch;
	t->slots = (dslot *)calloc((size_t)t->n_slots, sizeof(dslot));
	if (!t->slots) {
		return err_set(err, -ENOMEM, "out of memory");
	}
	for (int i = 0; i < t->n_slots; i++) {
		dslot *s = &t->slots[i];

		if (cudaMalloc(&s->mem, payload) || cudaEventCreate(&s->h0) || cudaEventCreate(&s->copied) ||
		    cudaEventCreateWithFlags(&s->consumed, cudaEventDisableTiming)) {
			return err_set(err, -ENOMEM, "out of GPU memory for %d batch buffers of %zu bytes", t->n_slots, payload);
		}
	}
	measure_pinned(t, payload);
	if (cfg->frozen) {
		// the batch pre-placed on the device: copied once, reused
		loader_batch *lb;
		double wait;

		if (loader_next(ld, &lb, &wait, err) || copy_batch(t, &t->slots[0], lb, err) ||
		    cudaStreamSynchronize(t->copy) != cudaSuccess) {
			if (!err->msg[0])
				return err_set(err, -EIO, "placing the frozen batch on the GPU failed");
			return err_code(err);
		}
		t->slots[0].ready = true;
	} else {
		if (pthread_create(&t->th, NULL, preload_main, t))
			return err_set(err, -EIO, "cannot start the preload thread");
		t->th_started = true;
	}
	return 0;
}

static gpu_train *gpu_train_create(const trainer_config *cfg, model *m, comm *cm, loader *ld, struct nt_err *err)
{
	gpu_train *t = (gpu_train *)calloc(1, sizeof(gpu_train));

	if (!t) {
		err_set(err, -ENOMEM, "out of memory");
		return NULL;
	}
	t->cfg = *cfg;
	t->m = m;
	t->cm = cm;
	t->ld = ld;
	pthread_mutex_init(&t->mu, NULL);
	pthread_cond_init(&t->cv, NULL);
	if (setup_device(t, cfg, m, err) || setup_buckets(t, cfg, cm, err) ||
	    setup_slots(t, cfg, ld, err)) {
		gpu_train_free(t);
		return NULL;
	}
	return t;
}

static void gpu_train_free(gpu_train *t)
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

// ---- the trainer row (trainer.h) ---------------------------------------------

static gpu_train *gpu(trainer *t)
{
	return (gpu_train *)t;
}

static int row_probe(nt_err *err)
{
	nt_err e = {};
	int r = cuda_probe(&e);

	if (r < 0)
		return err_set(err, r, "--device cuda: %s", e.msg);
	return 0;
}

// this rank's GPU (local rank modulo the GPUs)
static int row_select(const comm *c, nt_err *err)
{
	nt_err e = {};
	int r = gpu_select(c->local_rank, &e);

	if (r)
		return err_set(err, r, "--device cuda: %s", e.msg);
	return 0;
}

static trainer *row_create(const trainer_config *cfg, model *m, comm *c, loader *ld, nt_err *err)
{
	nt_err e = {};
	gpu_train *t = gpu_train_create(cfg, m, c, ld, &e);

	if (!t)
		err_set(err, e.code ? e.code : -EIO, "--device cuda: %s", e.msg);
	return (trainer *)t;
}

static int row_step(trainer *tr, int s, inject *inj, step_rec *r, bool *ret_bad_data, nt_err *err)
{
	gpu_train *t = gpu(tr);
	gpu_step gs;

	int e = gpu_train_step(t, &gs, ret_bad_data, err);

	if (e)
		return e;
	*r = step_rec{ gs.data_wait_ms, gs.h2d_ms, gs.fwd_ms, gs.bwd_ms, gs.comm_exposed_ms, gs.comm_ms, gs.opt_ms, 0, 0 };
	trainer_inject_compute(inj, s, gs.fwd_ms + gs.bwd_ms, r);
	inject_step_end(inj, s);
	t->loss_sum = gs.loss_sum;
	return 0;
}

// the loss is summed over ranks on the GPU (NCCL)
static int row_loss(trainer *tr, step_rec *r, nt_err *err)
{
	gpu_train *t = gpu(tr);

	(void)err;
	r->loss = t->loss_sum / ((double)t->cfg.batch * t->cfg.accum * t->cm->world);
	return 0;
}

static void row_rebuild(trainer *tr)
{
	gpu_train_rebuild(gpu(tr));
}

static int row_allreduce_d(trainer *tr, double *x, size_t n, nt_err *err)
{
	gpu_train *t = gpu(tr);

	return t->cm->ops->allreduce_sum_d(t->cm, x, n, err);
}

static void row_info(const trainer *tr, trainer_info *ret)
{
	const gpu_train *t = (const gpu_train *)tr;

	*ret = trainer_info{ gpu_train_buckets(t), false, gpu_train_device(t), 0, 0 };
	gpu_train_h2d(t, &ret->h2d_gbps, &ret->pinned_gbps);
}

static int row_fetch_weights(trainer *tr, nt_err *err)
{
	return gpu_train_fetch_weights(gpu(tr), err);
}

static void row_free(trainer *tr)
{
	gpu_train_free(gpu(tr));
}

extern "C" const trainer_ops cuda_trainer = {
	"cuda", row_probe, row_select, gpu_host_alloc, gpu_host_free, row_create, row_step, row_loss, row_rebuild,
	row_allreduce_d, row_info, row_fetch_weights, row_free,
};
