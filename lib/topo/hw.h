/*
 * What hwloc tells rondo about the hardware: cores, NUMA nodes, the
 * process's cpuset, GPUs and NICs. Internal (prefix topo_). Kept apart from
 * the MPI side (topo.c) so it can be unit-tested on hwloc synthetic
 * topologies ("pack:2 numa:2 core:8 pu:2") instead of the CI host.
 *
 * Ownership: a topology loaded here belongs to the caller, who releases it
 * with hwloc_topology_destroy(). Cpusets passed in are only read; cpusets
 * passed out are allocated by the caller (hwloc_bitmap_alloc) and overwritten.
 */
#ifndef RONDO_TOPO_HW_H
#define RONDO_TOPO_HW_H

#include <stddef.h>

#include <hwloc.h>

typedef struct {
  int packages;     /* sockets (0 if hwloc reports none) */
  int numa_nodes;   /* >= 1 (a machine without NUMA info counts as one) */
  int cores;        /* physical cores in the machine; the PUs if hwloc
                       reports no Core objects (some VMs) */
  int pus;          /* hardware threads in the machine */
  int gpus;         /* compute GPUs hwloc sees (CUDA, NVML, RSMI, LevelZero,
                       OpenCL GPU/accelerator), one per PCI device however
                       many interfaces report it; display-only DRM/GL devices
                       (a BMC's VGA) are not counted. Usually 0 on Debian,
                       whose hwloc has no CUDA/NVML plugin. */
  int nics;         /* network devices (ethernet, InfiniBand, Omni-Path, ...),
                       one per PCI device ("ib0" and "mlx5_0" are one NIC);
                       "lo" is not one */
  int cpuset_cores; /* cores with at least one PU in the given cpuset */
  int cpuset_pus;   /* PUs in the given cpuset */
} topo_hw_t;

/* Loads the topology of this machine (with important I/O devices: PCI GPUs
 * and NICs) into *topo. Returns 0, or -1 with errno set and *topo = NULL if
 * hwloc fails. Scans sysfs: milliseconds, so once per process. */
int topo_hw_load(hwloc_topology_t *topo);

/* Loads a synthetic topology described by desc (hwloc's synthetic syntax,
 * e.g. "pack:2 numa:2 core:8 pu:2"; no I/O devices). Returns 0, or -1 with
 * *topo = NULL if desc is invalid. For tests and `rondo-info --synthetic`. */
int topo_hw_load_synthetic(hwloc_topology_t *topo, const char *desc);

/* Counts what *out describes in topo, for the given cpuset (NULL: the whole
 * machine's allowed cpuset). Never fails: unknown counts are 0 (numa_nodes
 * at least 1). */
void topo_hw_count(hwloc_topology_t topo, hwloc_const_cpuset_t cpuset, topo_hw_t *out);

/* The cores of topo that have at least one PU in cpuset (NULL: the allowed
 * cpuset); the PUs in cpuset if topo has no Core objects. 0 for an empty
 * cpuset. */
int topo_hw_cores_in(hwloc_topology_t topo, hwloc_const_cpuset_t cpuset);

/* A one-line summary into buf (always NUL-terminated if len > 0, truncated
 * to fit), exactly:
 *   "1 package, 1 NUMA node, 2 cores, 2 PUs, 0 GPUs, 1 NIC; cpuset: 2 cores"
 * with singular/plural following each count. */
void topo_hw_describe(const topo_hw_t *hw, char *buf, size_t len);

/* This process's CPU binding (all its threads: HWLOC_CPUBIND_PROCESS),
 * restricted to the allowed cpuset, into out: the allowed cpuset itself when
 * the process is not bound or hwloc cannot tell (binding unsupported, or a
 * binding outside the allowed cpuset). Synthetic topologies report the whole
 * machine. Returns 0, or -1 if out cannot be written (no memory). */
int topo_hw_bind_cpuset(hwloc_topology_t topo, hwloc_cpuset_t out);

/* Cpusets as arrays of unsigned long, so the ranks of a node can exchange
 * them with MPI_Allreduce(..., nwords, MPI_UNSIGNED_LONG, MPI_BOR, node)
 * (topo.c). Word i holds PUs i*B .. i*B+B-1, B the bits of an unsigned long
 * (hwloc_bitmap_to_ulongs's layout). */

/* Words needed for any cpuset of topo (those of its complete cpuset), >= 1.
 * The same on every process of a node since they load the same machine; an
 * MPI_MAX over the node makes that certain. */
int topo_hw_cpuset_nwords(hwloc_topology_t topo);

/* Writes set into words[0..nwords-1] (high words zeroed). Returns 0, or -1
 * (errno EOVERFLOW) if set has a PU beyond nwords words or is infinite; words
 * is then unspecified. */
int topo_hw_cpuset_to_ulongs(hwloc_const_cpuset_t set, unsigned long *words, int nwords);

/* Replaces set by the PUs in words[0..nwords-1]. Returns 0, or -1 (errno
 * EINVAL for nwords < 0, ENOMEM) on failure. */
int topo_hw_cpuset_from_ulongs(hwloc_cpuset_t set, const unsigned long *words, int nwords);

#endif /* RONDO_TOPO_HW_H */
