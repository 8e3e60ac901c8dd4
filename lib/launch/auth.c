/*
 * The job's key, and the challenge-response the rendezvous runs with it
 * (docs/launching.md#the-key).
 *
 * The key is a secret every rank of one job holds: RONDO_RENDEZVOUS_KEY,
 * or the first line of the file RONDO_RENDEZVOUS_KEY_FILE (readable by its
 * owner alone). It is read once, then taken out of the environment, so
 * that the training script's children do not inherit it.
 *
 * Each side proves it holds the key without sending it: the server sends a
 * fresh random nonce, the client answers with its own nonce and
 *   HMAC-SHA256(key, "rondo rendezvous client " SERVER_NONCE " " CLIENT_NONCE)
 * and the server, once that matched, with the same over "rondo rendezvous
 * server ...", so a rank never tells its secrets to an impostor rank 0
 * either. Nonces and MACs cross the wire as lowercase hex. OpenSSL's
 * libcrypto does the cryptography (the HMAC and the constant-time
 * comparison); the nonces are the kernel's random bytes.
 */
#include "launch/launch.h"

#include <errno.h>
#include <fcntl.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

enum { KEY_MIN = 16, KEY_MAX_BYTES = 1024 };

static struct {
  pthread_mutex_t lock;
  int loaded;             /* read (or failed) once */
  rondo_status_t status;  /* what reading it gave */
  char why[512];          /* the message of a failure */
  unsigned char key[KEY_MAX_BYTES];
  size_t len;             /* 0: no key */
} k = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* The key from the file at path into k (under the lock). */
static void load_file(const char *path)
{
  char why[256];
  int fd = rondo__open_regular(path, O_RDONLY, why, sizeof why);
  struct stat sb;
  if (fd < 0) {
    snprintf(k.why, sizeof k.why, "RONDO_RENDEZVOUS_KEY_FILE='%.200s' cannot be read: %s", path, why);
    return;
  }
  if (fstat(fd, &sb) != 0 || (sb.st_mode & 077) != 0 || sb.st_uid != geteuid()) {
    snprintf(k.why, sizeof k.why,
             "RONDO_RENDEZVOUS_KEY_FILE='%.200s' must belong to this user and be readable by it "
             "alone (chmod 600): it is mode %03o, owner %ld",
             path, (unsigned)(sb.st_mode & 0777), (long)sb.st_uid);
    close(fd);
    return;
  }
  unsigned char buf[KEY_MAX_BYTES + 2];
  ssize_t n = read(fd, buf, sizeof buf);
  close(fd);
  size_t len = 0; /* the first line's bytes */
  while (n > 0 && len < (size_t)n && buf[len] != '\n' && buf[len] != '\r')
    len++;
  if (n < 0)
    snprintf(k.why, sizeof k.why, "RONDO_RENDEZVOUS_KEY_FILE='%.200s' cannot be read: %s", path,
             strerror(errno));
  else if (len == 0) /* never a keyless job by accident */
    snprintf(k.why, sizeof k.why, "RONDO_RENDEZVOUS_KEY_FILE='%.200s' holds no key: its first "
             "line is empty", path);
  else if (len > KEY_MAX_BYTES)
    snprintf(k.why, sizeof k.why, "RONDO_RENDEZVOUS_KEY_FILE='%.200s': its first line is longer "
             "than %d bytes", path, KEY_MAX_BYTES);
  else
    memcpy(k.key, buf, len), k.len = len;
  OPENSSL_cleanse(buf, sizeof buf);
}

static void load(void)
{
  const char *env = getenv("RONDO_RENDEZVOUS_KEY");
  rondo__knobs_t knobs;
  const char *path = NULL;
  if (rondo__knob_parse("RONDO_RENDEZVOUS_KEY_FILE", getenv("RONDO_RENDEZVOUS_KEY_FILE"),
                        &knobs) == RONDO_SUCCESS && knobs.rendezvous_key_file[0] != '\0')
    path = knobs.rendezvous_key_file;
  k.why[0] = '\0';
  if (env != NULL && env[0] == '\0') { /* $(cat a-missing-file): never keyless by accident */
    snprintf(k.why, sizeof k.why,
             "RONDO_RENDEZVOUS_KEY is set but empty: give it the job's key, or unset it");
  } else if (env != NULL && path != NULL) {
    snprintf(k.why, sizeof k.why,
             "both RONDO_RENDEZVOUS_KEY and RONDO_RENDEZVOUS_KEY_FILE are set: set one");
  } else if (env != NULL) {
    size_t len = strlen(env);
    if (len > KEY_MAX_BYTES)
      snprintf(k.why, sizeof k.why, "RONDO_RENDEZVOUS_KEY is longer than %d bytes",
               KEY_MAX_BYTES);
    else
      memcpy(k.key, env, len), k.len = len;
  } else if (path != NULL) {
    load_file(path);
  }
  if (k.why[0] == '\0' && k.len > 0 && k.len < KEY_MIN)
    snprintf(k.why, sizeof k.why,
             "the rendezvous key (%s) has %zu bytes; it needs at least %d (for example "
             "'openssl rand -hex 32')",
             path != NULL ? "RONDO_RENDEZVOUS_KEY_FILE" : "RONDO_RENDEZVOUS_KEY", k.len, KEY_MIN);
  if (k.why[0] != '\0') {
    OPENSSL_cleanse(k.key, sizeof k.key);
    k.len = 0;
  }
  /* Out of the environment: the script's children never see it. The value
   * getenv returned is overwritten first, for /proc/PID/environ's sake
   * where it still lies in the process's initial environment block. */
  if (env != NULL) {
    OPENSSL_cleanse((void *)env, strlen(env));
    unsetenv("RONDO_RENDEZVOUS_KEY");
  }
  k.status = k.why[0] != '\0' ? RONDO_ERR_LAUNCH : RONDO_SUCCESS;
  k.loaded = 1;
}

rondo_status_t launch_key_read(int *keyed)
{
  pthread_mutex_lock(&k.lock);
  if (!k.loaded)
    load();
  rondo_status_t st = k.status;
  *keyed = k.len > 0;
  pthread_mutex_unlock(&k.lock);
  if (st != RONDO_SUCCESS)
    return rondo__fail(st, "%s", k.why);
  return RONDO_SUCCESS;
}

void launch_key_forget(void)
{
  pthread_mutex_lock(&k.lock);
  OPENSSL_cleanse(k.key, sizeof k.key);
  k.len = 0;
  k.loaded = 0;
  pthread_mutex_unlock(&k.lock);
}

static void to_hex(const unsigned char *bytes, size_t n, char *hex)
{
  static const char digits[] = "0123456789abcdef";
  for (size_t i = 0; i < n; i++) {
    hex[2 * i] = digits[bytes[i] >> 4];
    hex[2 * i + 1] = digits[bytes[i] & 15];
  }
  hex[2 * n] = '\0';
}

/* The nonces come from the kernel's random generator (getrandom), as
 * OpenSSL's own generator is seeded: its first use in a process costs
 * about 3 ms, most of the handshake's time. */
int launch_auth_nonce(char hex[LAUNCH_HEX_LEN + 1])
{
  unsigned char bytes[LAUNCH_HEX_LEN / 2];
  if (getrandom(bytes, sizeof bytes, 0) != (ssize_t)sizeof bytes)
    return -1;
  to_hex(bytes, sizeof bytes, hex);
  return 0;
}

int launch_auth_is_hex(const char *text)
{
  size_t n = strspn(text, "0123456789abcdef");
  return n == LAUNCH_HEX_LEN && text[n] == '\0';
}

int launch_auth_mac(const char *role, const char *server_nonce, const char *client_nonce,
                    char hex[LAUNCH_HEX_LEN + 1])
{
  char msg[64 + 2 * LAUNCH_HEX_LEN];
  int n = snprintf(msg, sizeof msg, "rondo rendezvous %s %s %s", role, server_nonce,
                   client_nonce);
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  pthread_mutex_lock(&k.lock);
  int ok = k.len > 0 && n > 0 && (size_t)n < sizeof msg &&
           HMAC(EVP_sha256(), k.key, (int)k.len, (const unsigned char *)msg, (size_t)n, mac,
                &len) != NULL &&
           len == LAUNCH_HEX_LEN / 2;
  pthread_mutex_unlock(&k.lock);
  if (!ok)
    return -1;
  to_hex(mac, len, hex);
  OPENSSL_cleanse(mac, sizeof mac);
  return 0;
}

int launch_auth_equal(const char *a, const char *b)
{
  return strlen(a) == LAUNCH_HEX_LEN && strlen(b) == LAUNCH_HEX_LEN &&
         CRYPTO_memcmp(a, b, LAUNCH_HEX_LEN) == 0;
}
