/*
 * --strategy sharded: ZeRO's stages (Rajbhandari et al., 2020), which
 * PyTorch's FSDP and DeepSpeed run, on rondo's reduce-scatter and
 * all-gather (docs/train.md, "Sharded"). Each variable is cut into N
 * pieces, one per rank (sharded_t says how); a rank owns the optimizer
 * state of its pieces only and applies the update to them.
 *
 *   stage 1  the momentum is sharded. The gradients are all-reduced as
 *            under mirrored; each rank updates its piece of every variable
 *            and the pieces are all-gathered into every rank's variables.
 *   stage 2  the summed gradient is sharded too: backward hands each
 *            variable's gradient to the engine's reduce-scatter as soon as
 *            it is final, so a rank receives only the sum of its piece
 *            (FSDP's SHARD_GRAD_OP), in place over its piece of the local
 *            gradient. The update and the all-gather as at stage 1. The
 *            default: mirrored's bytes on the wire (a reduce-scatter and an
 *            all-gather are an all-reduce), the work of the update 1/N.
 *   stage 3  the variables are sharded too (FSDP's FULL_SHARD): a layer's
 *            weights are all-gathered into one of two layer buffers before
 *            its forward, and again before its backward where the buffer no
 *            longer holds them; the next layer's gather is started before
 *            the current layer computes (prefetch). After the update the
 *            first layer's gather of the next step starts at once.
 *
 * The arithmetic per element is mirrored's: the same sum of the ranks'
 * gradients (on one node rondo's shm all-reduce and reduce-scatter add in
 * rank order, and any order is the same at 2 ranks), the same scale by
 * 1 / (samples in the global batch) inside the collective, the same
 * optimizer step. So the variables are mirrored's bytes there (across
 * nodes at 3+ ranks within rounding: setup.c, choose_algo), and checkpoints
 * hold the whole variables and momentum, gathered when written: any
 * strategy at any rank count resumes them.
 *
 * What stays whole on every rank at every stage: the local gradient that
 * backward writes (one buffer of nparams floats, which the summed pieces
 * overwrite in place; ZeRO and FSDP free it bucket by bucket) and the
 * activations. So stage 2 holds what stage 1 does.
 */
#include <stdlib.h>
#include <string.h>

#include "examples/train/trainer.h"

/* Variable i's layer buffer offset: W first, then b. */
static size_t in_layer(const mlp_t *m, int i)
{
  return i % 2 == 0 ? 0 : m->vars[i - 1].count;
}

static void split(size_t count, int r, int n, size_t *lo, size_t *len)
{
  size_t q = count / (size_t)n, rem = count % (size_t)n, ur = (size_t)r;
  *lo = q * ur + (ur < rem ? ur : rem);
  *len = q + (ur < rem);
}

/* Submits the all-gather of variable i's pieces (this rank's: from) into
 * into, the whole variable. */
static void submit_gather(trainer_t *t, int i, const float *from, float *into,
                          rondo_request_t *req)
{
  const var_t *v = &t->m.vars[i];
  rondo_async_opts_t o = RONDO_ASYNC_OPTS_INIT;
  char name[48];
  snprintf(name, sizeof name, "%s/gather", v->name);
  if (rondo_allgather_into_async(t->comm, name, from, t->sharded.len[i], into, v->count, 1,
                                 RONDO_FLOAT32, &o, req) != RONDO_SUCCESS)
    trainer_die(t, "submitting %s: %s", name, rondo_last_error());
}

/* ---- stage 3: a layer's weights, gathered ----------------------------------------- */

/* Starts gathering layer l (1-based) into its buffer, unless it is there. */
static void gather_layer(trainer_t *t, int l)
{
  sharded_t *s = &t->sharded;
  int b = l % 2;
  if (s->held[b] == l)
    return;
  if (trainer_wait(t, s->pending[b], 2, "weights' all-gather") < 0) /* a stale one */
    trainer_die(t, "gathering the variables failed");
  for (int i = 2 * (l - 1); i < 2 * l; i++)
    submit_gather(t, i, s->params + s->at[i], s->layer[b] + in_layer(&t->m, i),
                  &s->pending[b][i % 2]);
  s->held[b] = l;
}

/* The model's W and b of layer l point at its gathered weights. */
static void use_layer(trainer_t *t, int l)
{
  sharded_t *s = &t->sharded;
  int b = l % 2;
  gather_layer(t, l);
  if (trainer_wait(t, s->pending[b], 2, "weights' all-gather") < 0)
    trainer_die(t, "gathering the variables failed");
  t->m.W[l - 1] = s->layer[b];
  t->m.b[l - 1] = s->layer[b] + t->m.vars[2 * (l - 1)].count;
}

/* mlp_t's layer hook: this layer's weights, and the next one's started. */
static void layer_hook(int l, int backward, void *user)
{
  trainer_t *t = user;
  use_layer(t, l);
  int next = backward ? l - 1 : l + 1;
  if (next >= (backward ? 2 : 1) && next <= t->m.nlayers) /* backward of fc1 needs no W */
    gather_layer(t, next);
}

/* ---- the strategy's rows ----------------------------------------------------------- */

int sharded_create(trainer_t *t)
{
  sharded_t *s = &t->sharded;
  mlp_t *m = &t->m;
  char err[1024] = "";
  s->stage = t->o.stage;
  for (int i = 0; i < m->nvars && err[0] == '\0'; i++)
    if (m->vars[i].count < (size_t)t->size)
      snprintf(err, sizeof err,
               "--strategy sharded: %s has %zu elements, fewer than the %d ranks: every rank "
               "must own a piece of every variable (run on at most %zu ranks, or widen the "
               "layer)",
               m->vars[i].name, m->vars[i].count, t->size, m->vars[i].count);
  if (trainer_agree(t, err[0] == '\0', err, sizeof err) != 0) /* the same on every rank */
    return TRAIN_EXIT_USAGE;
  size_t widest = 0;
  for (int i = 0; i < m->nvars; i++) {
    split(m->vars[i].count, t->rank, t->size, &s->lo[i], &s->len[i]);
    s->at[i] = s->total;
    s->total += s->len[i];
    if (i % 2 == 1 && m->vars[i - 1].count + m->vars[i].count > widest)
      widest = m->vars[i - 1].count + m->vars[i].count;
  }
  size_t bytes = s->total * sizeof(float);
  s->velocity = malloc(bytes);
  int ok = s->velocity != NULL;
  if (s->stage == 3) {
    ok = ok && (s->params = malloc(bytes)) != NULL;
    ok = ok && (s->layer[0] = malloc(widest * sizeof(float))) != NULL;
    ok = ok && (s->layer[1] = malloc(widest * sizeof(float))) != NULL;
  }
  snprintf(err, sizeof err, "--strategy sharded: no memory for this rank's shards (%zu MiB)",
           bytes >> 20);
  if (trainer_agree(t, ok, err, sizeof err) != 0)
    return TRAIN_EXIT_ERROR;
  /* Keep this rank's pieces of what every rank holds whole (mirror_start),
   * and free the whole. */
  for (int i = 0; i < m->nvars; i++) {
    size_t from = m->vars[i].offset + s->lo[i], n = s->len[i] * sizeof(float);
    memcpy(s->velocity + s->at[i], m->velocity + from, n);
    if (s->stage == 3)
      memcpy(s->params + s->at[i], m->params + from, n);
  }
  free(m->velocity);
  m->velocity = NULL;
  if (s->stage == 3) {
    free(m->params);
    m->params = NULL;
    for (int l = 0; l < m->nlayers; l++)
      m->W[l] = m->b[l] = NULL;
    m->layer_hook = layer_hook;
    m->hook_user = t;
    gather_layer(t, 1);
  }
  return 0;
}

void sharded_grads_ready(trainer_t *t, int layer)
{
  sharded_t *s = &t->sharded;
  if (s->stage == 1) {
    mirrored_grads_ready(t, layer);
    return;
  }
  if (t->nreq == 0)
    t->first_submit = train_now();
  rondo_async_opts_t o = t->ropts;
  o.algo = t->rs_algo; /* deterministic as mirrored's all-reduce: setup.c */
  for (int i = 2 * (layer - 1); i <= 2 * (layer - 1) + 1; i++) {
    const var_t *v = &t->m.vars[i];
    o.user = &t->done_at[t->nreq];
    float *g = t->m.grads + v->offset; /* the sum of its piece lands on the piece */
    if (rondo_reduce_scatter_async(t->comm, v->name, g, g + s->lo[i], v->count, 1,
                                   RONDO_FLOAT32, RONDO_SUM, &o, &t->req[t->nreq]) !=
        RONDO_SUCCESS)
      trainer_die(t, "submitting %s: %s", v->name, rondo_last_error());
    t->nreq++;
  }
}

double sharded_wait_grads(trainer_t *t)
{
  double waited = trainer_wait(t, t->req, t->nreq,
                               t->sharded.stage == 1 ? "gradient all-reduce"
                                                     : "gradient reduce-scatter");
  t->nreq = 0;
  return waited;
}

void sharded_update(trainer_t *t, float lr)
{
  sharded_t *s = &t->sharded;
  mlp_t *m = &t->m;
  float mom = (float)t->o.momentum, wd = (float)t->o.weight_decay;
  for (int i = 0; i < m->nvars; i++) {
    size_t lo = m->vars[i].offset + s->lo[i], hi = lo + s->len[i];
    float *w = s->stage == 3 ? s->params + s->at[i] : m->params + lo;
    optim_step_slice(m, w, s->velocity + s->at[i], m->grads + lo, lo, hi, lr, mom, wd);
  }
  if (s->stage == 3) { /* the layer buffers are stale; the next forward gathers */
    for (int b = 0; b < 2; b++)
      if (trainer_wait(t, s->pending[b], 2, "weights' all-gather") < 0)
        trainer_die(t, "gathering the variables failed");
    s->held[0] = s->held[1] = 0;
    gather_layer(t, 1);
    return;
  }
  /* Every rank's updated pieces into every rank's variables, in place. */
  rondo_request_t req[2 * TRAIN_MAX_LAYERS];
  for (int i = 0; i < m->nvars; i++)
    submit_gather(t, i, m->params + m->vars[i].offset + s->lo[i], m->params + m->vars[i].offset,
                  &req[i]);
  if (trainer_wait(t, req, m->nvars, "variables' all-gather") < 0)
    trainer_die(t, "gathering the variables failed");
}

/* Variable i's pieces from every rank's shard array into whole, at its offset. */
static void gather_whole(trainer_t *t, const float *shards, float *whole, size_t *counts,
                         size_t *displs)
{
  const sharded_t *s = &t->sharded;
  for (int i = 0; i < t->m.nvars; i++) {
    const var_t *v = &t->m.vars[i];
    for (int r = 0; r < t->size; r++) {
      split(v->count, r, t->size, &displs[r], &counts[r]);
      displs[r] += v->offset;
    }
    TRAINER_CHECK(t, rondo_allgatherv(t->comm, shards + s->at[i], s->len[i], whole, counts,
                                      displs, RONDO_FLOAT32));
  }
}

float *sharded_whole(trainer_t *t, int velocity)
{
  sharded_t *s = &t->sharded;
  if (!velocity && s->stage < 3)
    return t->m.params;
  float *whole = malloc(t->m.nparams * sizeof(float));
  size_t *counts = malloc(2 * (size_t)t->size * sizeof *counts);
  if (whole == NULL || counts == NULL)
    trainer_die(t, "no memory for the whole %s (%zu MiB)", velocity ? "momentum" : "variables",
                t->m.nparams * sizeof(float) >> 20);
  gather_whole(t, velocity ? s->velocity : s->params, whole, counts, counts + t->size);
  free(counts);
  return whole;
}

void sharded_describe(const trainer_t *t, char *buf, size_t len)
{
  const sharded_t *s = &t->sharded;
  static const char *const what[] = {
      "", "the momentum; the gradients are all-reduced",
      "the momentum and the summed gradients; each variable's gradient is reduce-scattered as "
      "backward produces it",
      "the momentum, the summed gradients and the variables; each layer's weights are "
      "all-gathered before its forward and backward (the next layer's prefetched)"};
  double whole = (double)(t->m.nparams * sizeof(float)) / (1 << 20);
  double mine = (double)(s->total * sizeof(float)) / (1 << 20);
  snprintf(buf, len,
           "sharded, ZeRO stage %d: each rank keeps 1/%d of %s, and updates its piece "
           "(%.2f of %.2f MiB per sharded array)%s",
           s->stage, t->size, what[s->stage], mine, whole,
           s->stage < 3 ? "; the updated pieces are all-gathered" : "");
}

void sharded_destroy(trainer_t *t)
{
  sharded_t *s = &t->sharded;
  for (int b = 0; b < 2; b++)
    for (int j = 0; j < 2; j++)
      if (s->pending[b][j] != NULL)
        rondo_wait(&s->pending[b][j]);
  free(s->velocity);
  free(s->params);
  free(s->layer[0]);
  free(s->layer[1]);
  t->m.layer_hook = NULL;
  memset(s, 0, sizeof *s);
}
