/*
 * The model: a multi-layer perceptron, fc1 .. fcL, ReLU between layers and a
 * softmax cross-entropy loss on the last one. Layer l computes
 *
 *   Z_l = A_{l-1} W_l^T + b_l,   A_l = relu(Z_l)   (A_0 = the batch, n x in)
 *
 * with W_l stored row-major as out x in (PyTorch's nn.Linear layout) and
 * every variable in one array, W1 b1 W2 b2 ... (the weight file's layout).
 * The three GEMMs per layer go through CBLAS; the rest is a few loops.
 *
 * Gradients are sums over the batch's rows, not means: main.c divides the
 * all-reduced sum by the true global batch size, which is exact for a short
 * last batch and for uneven splits across ranks.
 */
#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "examples/train/rng.h"
#include "examples/train/train.h"

static size_t layer_params(const mlp_t *m, int l) /* l: 1-based */
{
  return m->sizes[l] * m->sizes[l - 1] + m->sizes[l];
}

/* Variable i of the model (made once, by mlp_create). */
static void describe_var(const mlp_t *m, int i, var_t *v)
{
  int l = i / 2 + 1;
  v->is_weight = i % 2 == 0;
  snprintf(v->name, sizeof v->name, "fc%d.%s", l, v->is_weight ? "weight" : "bias");
  float *p = v->is_weight ? m->W[l - 1] : m->b[l - 1];
  v->offset = (size_t)(p - m->params);
  v->count = v->is_weight ? m->sizes[l] * m->sizes[l - 1] : m->sizes[l];
}

int mlp_create(mlp_t *m, const size_t *sizes, int nsizes, size_t max_rows, uint64_t seed)
{
  memset(m, 0, sizeof *m);
  if (nsizes < 2 || nsizes > TRAIN_MAX_LAYERS + 1)
    return -1;
  m->nlayers = nsizes - 1;
  memcpy(m->sizes, sizes, (size_t)nsizes * sizeof *sizes);
  m->max_rows = max_rows > 0 ? max_rows : 1;
  size_t widest = 0;
  for (int l = 1; l <= m->nlayers; l++) {
    m->nparams += layer_params(m, l);
    widest = sizes[l] > widest ? sizes[l] : widest;
  }
  m->params = calloc(m->nparams, sizeof(float));
  m->grads = calloc(m->nparams, sizeof(float));
  m->velocity = calloc(m->nparams, sizeof(float));
  m->delta[0] = malloc(m->max_rows * widest * sizeof(float));
  m->delta[1] = malloc(m->max_rows * widest * sizeof(float));
  int ok = m->params && m->grads && m->velocity && m->delta[0] && m->delta[1];
  for (int l = 1; ok && l <= m->nlayers; l++)
    ok = (m->act[l] = malloc(m->max_rows * sizes[l] * sizeof(float))) != NULL;
  if (!ok) {
    mlp_destroy(m);
    return -1;
  }
  size_t off = 0;
  for (int l = 1; l <= m->nlayers; l++) {
    size_t in = sizes[l - 1], out = sizes[l];
    m->W[l - 1] = m->params + off;
    m->dW[l - 1] = m->grads + off;
    off += out * in;
    m->b[l - 1] = m->params + off;
    m->db[l - 1] = m->grads + off;
    off += out;
    /* He initialization for ReLU layers, Glorot for the output layer;
     * biases start at zero. */
    double limit = l < m->nlayers ? sqrt(6.0 / (double)in) : sqrt(6.0 / (double)(in + out));
    rng_t r;
    rng_seed(&r, seed, RNG_INIT, (uint64_t)l);
    for (size_t i = 0; i < out * in; i++)
      m->W[l - 1][i] = (float)((2.0 * rng_float(&r) - 1.0) * limit);
  }
  m->nvars = 2 * m->nlayers;
  for (int i = 0; i < m->nvars; i++)
    describe_var(m, i, &m->vars[i]);
  return 0;
}

void mlp_destroy(mlp_t *m)
{
  if (!m->adopted) {
    free(m->params);
    free(m->velocity);
  }
  free(m->grads);
  free(m->delta[0]);
  free(m->delta[1]);
  for (int l = 1; l <= TRAIN_MAX_LAYERS; l++)
    free(m->act[l]);
  memset(m, 0, sizeof *m);
}

const float *mlp_forward(mlp_t *m, const float *x, size_t n)
{
  m->act[0] = (float *)x;
  for (int l = 1; l <= m->nlayers; l++) {
    size_t in = m->sizes[l - 1], out = m->sizes[l];
    float *z = m->act[l];
    if (m->layer_hook != NULL)
      m->layer_hook(l, 0, m->hook_user);
    for (size_t i = 0; i < n; i++)
      memcpy(z + i * out, m->b[l - 1], out * sizeof(float));
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)n, (int)out, (int)in, 1.0f,
                m->act[l - 1], (int)in, m->W[l - 1], (int)in, 1.0f, z, (int)out);
    if (l < m->nlayers)
      for (size_t i = 0; i < n * out; i++)
        z[i] = z[i] > 0 ? z[i] : 0;
  }
  return m->act[m->nlayers];
}

void mlp_loss(mlp_t *m, const uint16_t *y, size_t n, double *loss_sum, size_t *correct)
{
  size_t C = m->sizes[m->nlayers];
  const float *logits = m->act[m->nlayers];
  float *d = m->delta[0];
  double loss = 0;
  size_t right = 0;
  for (size_t i = 0; i < n; i++) {
    const float *z = logits + i * C;
    float *g = d + i * C;
    size_t best = 0;
    for (size_t c = 1; c < C; c++)
      best = z[c] > z[best] ? c : best;
    /* log-sum-exp around the largest logit: no overflow, no log(0) */
    float top = z[best], sum = 0;
    for (size_t c = 0; c < C; c++)
      sum += (g[c] = expf(z[c] - top));
    loss += (double)(top + logf(sum) - z[y[i]]);
    for (size_t c = 0; c < C; c++)
      g[c] /= sum;
    g[y[i]] -= 1.0f;
    right += best == y[i];
  }
  *loss_sum = loss;
  *correct = right;
}

void mlp_backward(mlp_t *m, size_t n, void (*grad_ready)(int layer, void *user), void *user)
{
  int cur = 0; /* mlp_loss left dL/dZ_L in delta[0] */
  for (int l = m->nlayers; l >= 1; l--) {
    size_t in = m->sizes[l - 1], out = m->sizes[l];
    float *dz = m->delta[cur], *dW = m->dW[l - 1], *db = m->db[l - 1];
    if (m->layer_hook != NULL && l > 1) /* only dA_{l-1} reads W_l; n = 0 too (collective) */
      m->layer_hook(l, 1, m->hook_user);
    if (n == 0) {
      memset(dW, 0, out * in * sizeof(float));
      memset(db, 0, out * sizeof(float));
      if (grad_ready != NULL)
        grad_ready(l, user);
      continue;
    }
    /* dW = dZ^T A_{l-1} (out x in), db = the column sums of dZ */
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)out, (int)in, (int)n, 1.0f, dz,
                (int)out, m->act[l - 1], (int)in, 0.0f, dW, (int)in);
    memcpy(db, dz, out * sizeof(float));
    for (size_t i = 1; i < n; i++)
      for (size_t j = 0; j < out; j++)
        db[j] += dz[i * out + j];
    if (grad_ready != NULL)
      grad_ready(l, user);
    if (l == 1)
      break;
    /* dA_{l-1} = dZ W_l, then through the ReLU of layer l-1 */
    float *da = m->delta[!cur];
    const float *a = m->act[l - 1];
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)n, (int)in, (int)out, 1.0f, dz,
                (int)out, m->W[l - 1], (int)in, 0.0f, da, (int)in);
    for (size_t i = 0; i < n * in; i++)
      da[i] = a[i] > 0 ? da[i] : 0;
    cur = !cur;
  }
}

void mlp_adopt(mlp_t *m, float *params, float *velocity)
{
  if (!m->adopted) {
    free(m->params);
    free(m->velocity);
  }
  m->params = params;
  m->velocity = velocity;
  m->adopted = 1;
  for (int l = 1; l <= m->nlayers; l++) {
    m->W[l - 1] = params + m->vars[2 * (l - 1)].offset;
    m->b[l - 1] = params + m->vars[2 * (l - 1) + 1].offset;
  }
}

void mlp_shape(const size_t *sizes, int nsizes, char *buf, size_t len)
{
  size_t used = 0;
  buf[0] = '\0';
  for (int i = 0; i < nsizes && used < len; i++)
    used += (size_t)snprintf(buf + used, len - used, "%s%zu", i ? "-" : "", sizes[i]);
}
