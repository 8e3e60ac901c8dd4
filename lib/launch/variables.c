/*
 * Which launcher started this process, and what it said: the launcher
 * variables and their order of precedence (docs/launching.md#variables).
 */
#include "launch/launch.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Variables only an MPI launcher sets: Hydra and Slurm's pmi/pmi2 (PMI_*),
 * Open MPI and PMIx launchers (OMPI_*, PMIX_*). */
static const char *const mpi_launcher_vars[] = {
    "PMI_FD", "PMI_PORT", "PMI_RANK", "PMIX_RANK", "OMPI_COMM_WORLD_SIZE", NULL};

/* A whole decimal number in [lo, hi] from variable name, or an error. */
static rondo_status_t read_int(const char *name, int lo, int hi, int *out)
{
  const char *s = getenv(name);
  char *end = NULL;
  errno = 0;
  long v = s != NULL ? strtol(s, &end, 10) : 0;
  if (s == NULL || *s == '\0' || end == s || *end != '\0' || errno != 0 || v < lo || v > hi)
    return rondo__fail(RONDO_ERR_LAUNCH, "%s='%s' is not a whole number from %d to %d", name,
                       s != NULL ? s : "", lo, hi);
  *out = (int)v;
  return RONDO_SUCCESS;
}

static int set(const char *name)
{
  const char *s = getenv(name);
  return s != NULL && *s != '\0';
}

/* Splits "host:port" (or "[v6]:port") into v->host and v->port. */
static rondo_status_t parse_address(const char *text, launch_vars_t *v, const char *from)
{
  const char *colon = strrchr(text, ':');
  const char *host = text;
  size_t hlen = colon != NULL ? (size_t)(colon - text) : 0;
  if (hlen >= 2 && text[0] == '[' && text[hlen - 1] == ']') {
    host++;
    hlen -= 2;
  }
  char *end = NULL;
  long port = colon != NULL ? strtol(colon + 1, &end, 10) : -1;
  if (colon == NULL || hlen == 0 || hlen >= sizeof v->host || end == colon + 1 || *end != '\0' ||
      port < 1 || port > 65535)
    return rondo__fail(RONDO_ERR_LAUNCH,
                       "%s='%s' is not HOST:PORT (a port from 1 to 65535)", from, text);
  memcpy(v->host, host, hlen);
  v->host[hlen] = '\0';
  v->port = (int)port;
  v->address_from = from;
  return RONDO_SUCCESS;
}

rondo_status_t launch_read_address(launch_vars_t *v)
{
  rondo__knobs_t k;
  RONDO_CHECK(rondo__knob_parse("RONDO_RENDEZVOUS", getenv("RONDO_RENDEZVOUS"), &k));
  if (k.rendezvous[0] != '\0')
    return parse_address(k.rendezvous, v, "RONDO_RENDEZVOUS");
  if (!set("MASTER_ADDR") || !set("MASTER_PORT"))
    return rondo__fail(RONDO_ERR_LAUNCH,
                       "%s describes a job of %d processes, but no rendezvous address is set: "
                       "set MASTER_ADDR and MASTER_PORT (rondo listens on MASTER_PORT + 1), or "
                       "RONDO_RENDEZVOUS=HOST:PORT",
                       v->source, v->size);
  int port = 0;
  RONDO_CHECK(read_int("MASTER_PORT", 1, 65534, &port));
  if (strlen(getenv("MASTER_ADDR")) >= sizeof v->host)
    return rondo__fail(RONDO_ERR_LAUNCH, "MASTER_ADDR is longer than %d bytes",
                       (int)sizeof v->host - 1);
  snprintf(v->host, sizeof v->host, "%s", getenv("MASTER_ADDR"));
  /* MASTER_PORT itself belongs to torch's store: the workers' (init_process_group
   * on rank 0) or torchrun's agent's (TORCHELASTIC_USE_AGENT_STORE). */
  v->port = port + 1;
  v->address_from = "MASTER_ADDR and MASTER_PORT + 1";
  return RONDO_SUCCESS;
}

rondo_status_t launch_read(launch_vars_t *v)
{
  memset(v, 0, sizeof *v);
  v->size = 1;
  v->local_rank = -1;
  for (int i = 0; mpi_launcher_vars[i] != NULL; i++)
    if (getenv(mpi_launcher_vars[i]) != NULL) {
      v->mpi_launcher = mpi_launcher_vars[i];
      break;
    }

  const char *rank_var = NULL, *size_var = NULL, *local_var = NULL;
  if (set("RANK") || set("WORLD_SIZE") || (v->mpi_launcher != NULL && set("LOCAL_RANK"))) {
    v->source = "RANK/WORLD_SIZE";
    rank_var = "RANK", size_var = "WORLD_SIZE", local_var = "LOCAL_RANK";
  } else if (set("SLURM_PROCID") && set("SLURM_STEP_NUM_TASKS")) {
    /* a task of srun (a step), not the batch script: the script has no step */
    v->source = "SLURM_PROCID/SLURM_STEP_NUM_TASKS";
    rank_var = "SLURM_PROCID", size_var = "SLURM_STEP_NUM_TASKS", local_var = "SLURM_LOCALID";
  }
  if (v->source != NULL) {
    /* Under an MPI launcher MPI knows the world: a variable alone is no
     * error (PyTorch's test runner exports WORLD_SIZE alone under mpiexec);
     * launch_check_world compares those present with MPI's. */
    if (v->mpi_launcher == NULL && (!set(rank_var) || !set(size_var)))
      return rondo__fail(RONDO_ERR_LAUNCH, "%s is set but %s is not: a launcher sets both",
                         set(rank_var) ? rank_var : size_var, set(rank_var) ? size_var : rank_var);
    v->rank_var = rank_var, v->size_var = size_var, v->local_var = local_var;
    if ((v->size_set = set(size_var)))
      RONDO_CHECK(read_int(size_var, 1, INT_MAX, &v->size));
    if ((v->rank_set = set(rank_var)))
      RONDO_CHECK(read_int(rank_var, 0, INT_MAX, &v->rank));
    if (v->rank_set && v->size_set && v->rank >= v->size)
      return rondo__fail(RONDO_ERR_LAUNCH, "%s=%d is not below %s=%d", rank_var, v->rank,
                         size_var, v->size);
    if (set(local_var))
      RONDO_CHECK(read_int(local_var, 0, v->size_set ? v->size - 1 : INT_MAX, &v->local_rank));
  }

  rondo__knobs_t k;
  RONDO_CHECK(rondo__knob_parse("RONDO_RENDEZVOUS_TIMEOUT_SEC",
                                getenv("RONDO_RENDEZVOUS_TIMEOUT_SEC"), &k));
  v->timeout_sec = k.rendezvous_timeout_sec;
  if (set("TORCHELASTIC_RUN_ID"))
    snprintf(v->run_id, sizeof v->run_id, "%.100s.%.20s", getenv("TORCHELASTIC_RUN_ID"),
             set("TORCHELASTIC_RESTART_COUNT") ? getenv("TORCHELASTIC_RESTART_COUNT") : "0");
  return RONDO_SUCCESS;
}
