/*
 * The hwloc side of topology: load this machine (or a synthetic one) and
 * count what the selector needs (cores and PUs in the process's cpuset,
 * NUMA nodes, GPUs, NICs).
 *
 * Devices are counted once per PCI device, not once per OS device: one
 * NVIDIA GPU can show up as cuda0, nvml0 and opencl0d0, one ConnectX as ib0
 * and mlx5_0. Only compute interfaces make a GPU; the DRM/GL nodes every
 * display adapter has (card0, renderD128, :0.0) do not, or every server with
 * a BMC's VGA chip would report a GPU.
 *
 * Debian's hwloc is built without the CUDA and NVML plugins, so there GPUs
 * are usually seen only through OpenCL, if at all. The authoritative path is
 * the CUDA runtime (cudaGetDeviceCount, PCI bus ids), which comes with the
 * NCCL backend; what hwloc reports here is the portable fallback.
 */
#include "topo/hw.h"

#include "base/leakcheck.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

/* ---- loading -------------------------------------------------------------------- */

static void destroy_keep_errno(hwloc_topology_t t)
{
  int saved = errno;
  hwloc_topology_destroy(t);
  errno = saved;
}

/* Loads t once configured (configured: 0 or -1 from the set_* calls) and
 * hands it to *topo, or destroys it. What hwloc's plugins allocate while
 * they discover the machine is theirs (lib/base/leakcheck.h); t itself,
 * made by hwloc_topology_init, stays in the leak check. */
static int finish_load(hwloc_topology_t t, int configured, hwloc_topology_t *topo)
{
  int loaded = -1;
  if (configured == 0)
    RONDO_LEAKCHECK_PAUSE(loaded = hwloc_topology_load(t));
  if (loaded != 0) {
    destroy_keep_errno(t);
    return -1;
  }
  *topo = t;
  return 0;
}

int topo_hw_load(hwloc_topology_t *topo)
{
  hwloc_topology_t t;
  *topo = NULL;
  if (hwloc_topology_init(&t) != 0)
    return -1;
  /* I/O objects are filtered out by default; KEEP_IMPORTANT keeps PCI GPUs,
   * NICs and storage but not USB devices, bridges without children or DMA
   * engines. */
  return finish_load(t, hwloc_topology_set_io_types_filter(t, HWLOC_TYPE_FILTER_KEEP_IMPORTANT),
                     topo);
}

int topo_hw_load_synthetic(hwloc_topology_t *topo, const char *desc)
{
  hwloc_topology_t t;
  *topo = NULL;
  if (hwloc_topology_init(&t) != 0)
    return -1;
  return finish_load(t, hwloc_topology_set_synthetic(t, desc), topo);
}

/* ---- cores and PUs -------------------------------------------------------------- */

static int count_of(hwloc_topology_t topo, hwloc_obj_type_t type)
{
  int n = hwloc_get_nbobjs_by_type(topo, type);
  return n > 0 ? n : 0; /* -1: the type is at several depths; not for these types */
}

/* Some VMs expose PUs without Core objects: each PU is then its own core. */
static hwloc_obj_type_t core_type(hwloc_topology_t topo)
{
  return count_of(topo, HWLOC_OBJ_CORE) > 0 ? HWLOC_OBJ_CORE : HWLOC_OBJ_PU;
}

/* Objects of type with at least one PU in set. */
static int count_touching(hwloc_topology_t topo, hwloc_obj_type_t type, hwloc_const_cpuset_t set)
{
  int n = 0;
  for (hwloc_obj_t o = hwloc_get_next_obj_by_type(topo, type, NULL); o != NULL;
       o = hwloc_get_next_obj_by_type(topo, type, o))
    if (hwloc_bitmap_intersects(o->cpuset, set))
      n++;
  return n;
}

static hwloc_const_cpuset_t or_allowed(hwloc_topology_t topo, hwloc_const_cpuset_t cpuset)
{
  return cpuset != NULL ? cpuset : hwloc_topology_get_allowed_cpuset(topo);
}

int topo_hw_cores_in(hwloc_topology_t topo, hwloc_const_cpuset_t cpuset)
{
  return count_touching(topo, core_type(topo), or_allowed(topo, cpuset));
}

/* ---- devices -------------------------------------------------------------------- */

static int subtype_is(hwloc_obj_t osdev, const char *name)
{
  return osdev->subtype != NULL && strcmp(osdev->subtype, name) == 0;
}

static int is_gpu(hwloc_obj_t d)
{
  switch (d->attr->osdev.type) {
  case HWLOC_OBJ_OSDEV_GPU:
    return subtype_is(d, "NVML") || subtype_is(d, "RSMI");
  case HWLOC_OBJ_OSDEV_COPROC:
    if (subtype_is(d, "OpenCL")) {
      const char *kind = hwloc_obj_get_info_by_name(d, "OpenCLDeviceType");
      return kind == NULL || strcmp(kind, "CPU") != 0; /* pocl's CPU device is not a GPU */
    }
    return subtype_is(d, "CUDA") || subtype_is(d, "LevelZero");
  default:
    return 0;
  }
}

static int is_nic(hwloc_obj_t d)
{
  switch (d->attr->osdev.type) {
  case HWLOC_OBJ_OSDEV_NETWORK:
    return d->name == NULL || strcmp(d->name, "lo") != 0;
  case HWLOC_OBJ_OSDEV_OPENFABRICS:
    return 1;
  default:
    return 0;
  }
}

/* The hardware an OS device stands for: its PCI device, or (no PCI locality
 * known) the OS device itself. Sub-devices (LevelZero tiles) fold into their
 * device. */
static hwloc_obj_t hardware_of(hwloc_obj_t d)
{
  while (d->parent != NULL && d->parent->type == HWLOC_OBJ_OS_DEVICE)
    d = d->parent;
  return d->parent != NULL && d->parent->type == HWLOC_OBJ_PCI_DEVICE ? d->parent : d;
}

/* Distinct hardware among the OS devices of one kind. Quadratic in the OS
 * devices, which are a few dozen. */
static int count_devices(hwloc_topology_t topo, int (*is_kind)(hwloc_obj_t))
{
  int n = 0;
  for (hwloc_obj_t d = hwloc_get_next_osdev(topo, NULL); d != NULL;
       d = hwloc_get_next_osdev(topo, d)) {
    if (!is_kind(d))
      continue;
    hwloc_obj_t e = hwloc_get_next_osdev(topo, NULL);
    while (e != d && !(is_kind(e) && hardware_of(e) == hardware_of(d)))
      e = hwloc_get_next_osdev(topo, e);
    n += e == d; /* first OS device of its hardware */
  }
  return n;
}

/* ---- summary -------------------------------------------------------------------- */

void topo_hw_count(hwloc_topology_t topo, hwloc_const_cpuset_t cpuset, topo_hw_t *out)
{
  hwloc_const_cpuset_t set = or_allowed(topo, cpuset);

  memset(out, 0, sizeof *out);
  out->packages = count_of(topo, HWLOC_OBJ_PACKAGE);
  /* hwloc 2 inserts one NUMA node in machines that report none. */
  out->numa_nodes = count_of(topo, HWLOC_OBJ_NUMANODE);
  out->cores = count_of(topo, core_type(topo));
  out->pus = count_of(topo, HWLOC_OBJ_PU);
  out->gpus = count_devices(topo, is_gpu);
  out->nics = count_devices(topo, is_nic);
  out->cpuset_cores = count_touching(topo, core_type(topo), set);
  out->cpuset_pus = count_touching(topo, HWLOC_OBJ_PU, set);
}

static const char *plural(int n)
{
  return n == 1 ? "" : "s";
}

void topo_hw_describe(const topo_hw_t *hw, char *buf, size_t len)
{
  snprintf(buf, len, "%d package%s, %d NUMA node%s, %d core%s, %d PU%s, %d GPU%s, %d NIC%s; "
           "cpuset: %d core%s",
           hw->packages, plural(hw->packages), hw->numa_nodes, plural(hw->numa_nodes),
           hw->cores, plural(hw->cores), hw->pus, plural(hw->pus), hw->gpus, plural(hw->gpus),
           hw->nics, plural(hw->nics), hw->cpuset_cores, plural(hw->cpuset_cores));
}

/* ---- the process's cpuset ------------------------------------------------------- */

int topo_hw_bind_cpuset(hwloc_topology_t topo, hwloc_cpuset_t out)
{
  hwloc_const_cpuset_t allowed = hwloc_topology_get_allowed_cpuset(topo);
  /* An unbound process gets every CPU the kernel knows, which can include
   * CPUs outside this topology (offline, other cgroups): keep the allowed
   * ones. */
  if (hwloc_get_cpubind(topo, out, HWLOC_CPUBIND_PROCESS) == 0 &&
      hwloc_bitmap_and(out, out, allowed) == 0 && !hwloc_bitmap_iszero(out))
    return 0;
  return hwloc_bitmap_copy(out, allowed);
}

int topo_hw_cpuset_nwords(hwloc_topology_t topo)
{
  /* Finite and never empty: every topology has a PU. */
  return hwloc_bitmap_nr_ulongs(hwloc_topology_get_complete_cpuset(topo));
}

int topo_hw_cpuset_to_ulongs(hwloc_const_cpuset_t set, unsigned long *words, int nwords)
{
  int need = hwloc_bitmap_nr_ulongs(set); /* -1: infinite */
  if (need < 0 || nwords < need) {
    errno = EOVERFLOW;
    return -1;
  }
  return hwloc_bitmap_to_ulongs(set, (unsigned)nwords, words);
}

int topo_hw_cpuset_from_ulongs(hwloc_cpuset_t set, const unsigned long *words, int nwords)
{
  if (nwords < 0) {
    errno = EINVAL;
    return -1;
  }
  return hwloc_bitmap_from_ulongs(set, (unsigned)nwords, words);
}
