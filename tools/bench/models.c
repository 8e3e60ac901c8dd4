/* The shipped gradient sets (models.h); shapes derived from each
 * architecture, as torchvision and Hugging Face define it. */
#include "tools/bench/models.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Appends a tensor; out of memory marks the model (cap = -1) and
 * model_build fails. */
static void add(model_t *m, const char *name, size_t count)
{
  if (m->cap < 0)
    return;
  if (m->n == m->cap) {
    int cap = m->cap ? 2 * m->cap : 256;
    size_t *c = realloc(m->count, (size_t)cap * sizeof *c);
    if (c != NULL)
      m->count = c;
    char(*nm)[64] = realloc(m->name, (size_t)cap * sizeof *nm);
    if (nm != NULL)
      m->name = nm;
    if (c == NULL || nm == NULL) {
      m->cap = -1;
      return;
    }
    m->cap = cap;
  }
  snprintf(m->name[m->n], sizeof m->name[0], "%.63s", name);
  m->count[m->n++] = count;
  m->total += count;
}

/* A weight and its bias, "prefix.weight" and "prefix.bias". */
static void add_wb(model_t *m, const char *prefix, size_t weight, size_t bias)
{
  char s[80];
  snprintf(s, sizeof s, "%s.weight", prefix);
  add(m, s, weight);
  snprintf(s, sizeof s, "%s.bias", prefix);
  add(m, s, bias);
}

/* ResNet-50: conv1 + bn1, 16 bottleneck blocks in stages of 3, 4, 6, 3 with
 * widths 64..512 and expansion 4 (a 1x1 downsample + bn opens each stage),
 * then fc 2048 -> 1000: 161 tensors, 25.6 M values. */
static void resnet50(model_t *m)
{
  char s[64];
  add(m, "conv1.weight", 64 * 3 * 7 * 7);
  add_wb(m, "bn1", 64, 64);
  static const int blocks[4] = {3, 4, 6, 3}, width[4] = {64, 128, 256, 512};
  size_t in = 64;
  for (int st = 0; st < 4; st++) {
    size_t w = (size_t)width[st], out = 4 * w;
    for (int b = 0; b < blocks[st]; b++) {
      const size_t conv[3] = {in * w, w * w * 9, w * out}, bn[3] = {w, w, out};
      for (int c = 0; c < 3; c++) {
        snprintf(s, sizeof s, "layer%d.%d.conv%d.weight", st + 1, b, c + 1);
        add(m, s, conv[c]);
        snprintf(s, sizeof s, "layer%d.%d.bn%d", st + 1, b, c + 1);
        add_wb(m, s, bn[c], bn[c]);
      }
      if (b == 0) {
        snprintf(s, sizeof s, "layer%d.0.downsample.0.weight", st + 1);
        add(m, s, in * out);
        snprintf(s, sizeof s, "layer%d.0.downsample.1", st + 1);
        add_wb(m, s, out, out);
      }
      in = out;
    }
  }
  add_wb(m, "fc", 2048 * 1000, 1000);
}

/* BERT-base: embeddings (word 30522, position 512, token type 2; x 768) and
 * their LayerNorm, 12 layers of Q/K/V/attention-output (768 x 768 + bias),
 * LayerNorm, intermediate 768 -> 3072, output 3072 -> 768, LayerNorm, and
 * the pooler: 199 tensors, 109.5 M values. */
static void bert_base(model_t *m)
{
  char s[64];
  const size_t h = 768, ff = 3072;
  add(m, "embeddings.word", 30522 * h);
  add(m, "embeddings.position", 512 * h);
  add(m, "embeddings.token_type", 2 * h);
  add_wb(m, "embeddings.ln", h, h);
  static const char *const parts[] = {"query", "key", "value", "attention.output"};
  for (int l = 0; l < 12; l++) {
    for (int p = 0; p < 4; p++) {
      snprintf(s, sizeof s, "layer%d.%s", l, parts[p]);
      add_wb(m, s, h * h, h);
    }
    snprintf(s, sizeof s, "layer%d.attention.ln", l);
    add_wb(m, s, h, h);
    snprintf(s, sizeof s, "layer%d.intermediate", l);
    add_wb(m, s, h * ff, ff);
    snprintf(s, sizeof s, "layer%d.output", l);
    add_wb(m, s, ff * h, h);
    snprintf(s, sizeof s, "layer%d.output.ln", l);
    add_wb(m, s, h, h);
  }
  add_wb(m, "pooler", h * h, h);
}

/* VGG-16: 13 3x3 convolutions (64, 64, 128, 128, 256 x 3, 512 x 6 output
 * channels) and the classifier 25088 -> 4096 -> 4096 -> 1000, each with a
 * bias: 32 tensors, 138.4 M values (fc6 alone is 102.8 M). */
static void vgg16(model_t *m)
{
  static const int ch[13] = {64, 64, 128, 128, 256, 256, 256, 512, 512, 512, 512, 512, 512};
  char s[64];
  size_t in = 3;
  for (int i = 0; i < 13; i++) {
    snprintf(s, sizeof s, "features.conv%d", i + 1);
    add_wb(m, s, (size_t)ch[i] * in * 9, (size_t)ch[i]);
    in = (size_t)ch[i];
  }
  add_wb(m, "classifier.fc6", 512 * 7 * 7 * 4096, 4096);
  add_wb(m, "classifier.fc7", 4096 * 4096, 4096);
  add_wb(m, "classifier.fc8", 4096 * 1000, 1000);
}

int model_build(model_t *m, const char *which, size_t tensors, size_t bytes)
{
  memset(m, 0, sizeof *m);
  if (which == NULL) {
    char s[64];
    static const char *const unit[] = {"B", "KiB", "MiB", "GiB"};
    size_t v = bytes;
    int u = 0;
    while (u < 3 && v >= 1024 && v % 1024 == 0) {
      v /= 1024;
      u++;
    }
    snprintf(m->label, sizeof m->label, "%zux%zu%s", tensors, v, unit[u]);
    for (size_t i = 0; i < tensors; i++) {
      snprintf(s, sizeof s, "tensor.%zu", i);
      add(m, s, bytes / 4 ? bytes / 4 : 1);
    }
  } else if (strcmp(which, "resnet50") == 0) {
    resnet50(m);
  } else if (strcmp(which, "bert-base") == 0) {
    bert_base(m);
  } else if (strcmp(which, "vgg16") == 0) {
    vgg16(m);
  } else {
    return -1;
  }
  if (which != NULL)
    snprintf(m->label, sizeof m->label, "%s", which);
  if (m->cap < 0) {
    model_free(m);
    return -1;
  }
  return 0;
}

void model_free(model_t *m)
{
  free(m->count);
  free(m->name);
  memset(m, 0, sizeof *m);
}
