/* The trainer's random numbers: xoshiro256** seeded through splitmix64
 * (Blackman and Vigna). Streams are derived from (seed, purpose, index), so
 * a stream's state never needs saving: a checkpoint's seed and epoch are the
 * whole RNG state. */
#ifndef RONDO_TRAIN_RNG_H
#define RONDO_TRAIN_RNG_H

#include <stdint.h>

typedef struct {
  uint64_t s[4];
} rng_t;

static inline uint64_t rng_splitmix(uint64_t *x)
{
  uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

/* Stream `index` of kind `purpose` (RNG_INIT, RNG_SHUFFLE, ...) for `seed`. */
static inline void rng_seed(rng_t *r, uint64_t seed, uint64_t purpose, uint64_t index)
{
  uint64_t x = seed ^ (purpose * 0xd1b54a32d192ed03ULL) ^ (index * 0x8cb92ba72f3d8dd7ULL);
  for (int i = 0; i < 4; i++)
    r->s[i] = rng_splitmix(&x);
}

enum { RNG_INIT = 1, RNG_SHUFFLE = 2, RNG_SYNTHETIC = 3 };

static inline uint64_t rng_next(rng_t *r)
{
  uint64_t *s = r->s;
  uint64_t x = s[1] * 5, result = ((x << 7) | (x >> 57)) * 9, t = s[1] << 17;
  s[2] ^= s[0];
  s[3] ^= s[1];
  s[1] ^= s[2];
  s[0] ^= s[3];
  s[2] ^= t;
  s[3] = (s[3] << 45) | (s[3] >> 19);
  return result;
}

/* Uniform in [0, 1), exact in float (24 bits). */
static inline float rng_float(rng_t *r) { return (float)(rng_next(r) >> 40) * 0x1.0p-24f; }

/* Uniform in [0, n) without modulo bias (Lemire's method). */
static inline uint64_t rng_below(rng_t *r, uint64_t n)
{
  unsigned __int128 m = (unsigned __int128)rng_next(r) * n;
  uint64_t low = (uint64_t)m;
  if (low < n) {
    uint64_t threshold = -n % n;
    while (low < threshold) {
      m = (unsigned __int128)rng_next(r) * n;
      low = (uint64_t)m;
    }
  }
  return (uint64_t)(m >> 64);
}

#endif
