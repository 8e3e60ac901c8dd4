/*
 * Unit tests of the hwloc side of topology (lib/topo/hw.h).
 *
 * Counts are checked on hwloc synthetic topologies, whose shape gives every
 * expected value in closed form, and the GPU/NIC rules on an XML topology
 * with the OS devices real nodes show (one GPU as cuda0 + nvml0 + opencl0d0,
 * a BMC's VGA as card0, a ConnectX as ib0 + mlx5_0, lo, pocl's CPU device).
 * The host is only asked to load and to have a core.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "topo/hw.h"

#define BIG "pack:2 numa:2 core:8 pu:2" /* 2 packages, 4 NUMA nodes, 32 cores, 64 PUs */
#define ULONG_BITS ((int)(CHAR_BIT * sizeof(unsigned long)))

/* ---- fixtures: *state is the topology, loaded from the prestate string ---------- */

static int load_synthetic(void **state)
{
  hwloc_topology_t topo;
  if (topo_hw_load_synthetic(&topo, (const char *)*state) != 0)
    return -1;
  *state = topo;
  return 0;
}

/* The devices of a 2-core machine as hwloc exports them to XML. Expected:
 * 3 GPUs (two NVIDIA boards, one LevelZero board with a tile sub-device), 2
 * NICs (a ConnectX seen twice, an ethernet port); not counted: the BMC's
 * VGA (card0), the DRM nodes of the first NVIDIA board, lo, pocl's CPU. */
static const char devices_xml[] =
    "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
    "<!DOCTYPE topology SYSTEM \"hwloc2.dtd\">\n"
    "<topology version=\"2.0\">\n"
    " <object type=\"Machine\" os_index=\"0\" cpuset=\"0x3\" complete_cpuset=\"0x3\""
    "  allowed_cpuset=\"0x3\" nodeset=\"0x1\" complete_nodeset=\"0x1\" allowed_nodeset=\"0x1\""
    "  gp_index=\"1\">\n"
    "  <object type=\"Package\" os_index=\"0\" cpuset=\"0x3\" complete_cpuset=\"0x3\""
    "   nodeset=\"0x1\" complete_nodeset=\"0x1\" gp_index=\"2\">\n"
    "   <object type=\"NUMANode\" os_index=\"0\" cpuset=\"0x3\" complete_cpuset=\"0x3\""
    "    nodeset=\"0x1\" complete_nodeset=\"0x1\" gp_index=\"3\" local_memory=\"1073741824\"/>\n"
    "   <object type=\"Core\" os_index=\"0\" cpuset=\"0x1\" complete_cpuset=\"0x1\""
    "    nodeset=\"0x1\" complete_nodeset=\"0x1\" gp_index=\"4\">\n"
    "    <object type=\"PU\" os_index=\"0\" cpuset=\"0x1\" complete_cpuset=\"0x1\""
    "     nodeset=\"0x1\" complete_nodeset=\"0x1\" gp_index=\"5\"/>\n"
    "   </object>\n"
    "   <object type=\"Core\" os_index=\"1\" cpuset=\"0x2\" complete_cpuset=\"0x2\""
    "    nodeset=\"0x1\" complete_nodeset=\"0x1\" gp_index=\"6\">\n"
    "    <object type=\"PU\" os_index=\"1\" cpuset=\"0x2\" complete_cpuset=\"0x2\""
    "     nodeset=\"0x1\" complete_nodeset=\"0x1\" gp_index=\"7\"/>\n"
    "   </object>\n"
    "   <object type=\"Bridge\" gp_index=\"10\" bridge_type=\"0-1\" depth=\"0\""
    "    bridge_pci=\"0000:[00-00]\">\n"
    "    <object type=\"PCIDev\" gp_index=\"11\" pci_busid=\"0000:00:01.0\""
    "     pci_type=\"0300 [1a03:2000] [1a03:2000] 41\" pci_link_speed=\"0.000000\">\n"
    "     <object type=\"OSDev\" gp_index=\"12\" name=\"card0\" osdev_type=\"1\"/>\n"
    "    </object>\n"
    "    <object type=\"PCIDev\" gp_index=\"13\" pci_busid=\"0000:00:02.0\""
    "     pci_type=\"0302 [10de:20b0] [10de:134f] a1\" pci_link_speed=\"0.000000\">\n"
    "     <object type=\"OSDev\" gp_index=\"14\" name=\"card1\" osdev_type=\"1\"/>\n"
    "     <object type=\"OSDev\" gp_index=\"15\" name=\"renderD128\" osdev_type=\"1\"/>\n"
    "     <object type=\"OSDev\" gp_index=\"16\" name=\"cuda0\" subtype=\"CUDA\" osdev_type=\"5\"/>\n"
    "     <object type=\"OSDev\" gp_index=\"17\" name=\"nvml0\" subtype=\"NVML\" osdev_type=\"1\"/>\n"
    "     <object type=\"OSDev\" gp_index=\"18\" name=\"opencl0d0\" subtype=\"OpenCL\""
    "      osdev_type=\"5\">\n"
    "      <info name=\"OpenCLDeviceType\" value=\"GPU\"/>\n"
    "     </object>\n"
    "    </object>\n"
    "    <object type=\"PCIDev\" gp_index=\"19\" pci_busid=\"0000:00:03.0\""
    "     pci_type=\"0302 [10de:20b0] [10de:134f] a1\" pci_link_speed=\"0.000000\">\n"
    "     <object type=\"OSDev\" gp_index=\"20\" name=\"opencl0d1\" subtype=\"OpenCL\""
    "      osdev_type=\"5\">\n"
    "      <info name=\"OpenCLDeviceType\" value=\"GPU\"/>\n"
    "     </object>\n"
    "    </object>\n"
    "    <object type=\"PCIDev\" gp_index=\"21\" pci_busid=\"0000:00:04.0\""
    "     pci_type=\"0207 [15b3:101b] [15b3:0007] 00\" pci_link_speed=\"0.000000\">\n"
    "     <object type=\"OSDev\" gp_index=\"22\" name=\"ib0\" osdev_type=\"2\"/>\n"
    "     <object type=\"OSDev\" gp_index=\"23\" name=\"mlx5_0\" osdev_type=\"3\"/>\n"
    "    </object>\n"
    "    <object type=\"PCIDev\" gp_index=\"24\" pci_busid=\"0000:00:05.0\""
    "     pci_type=\"0200 [8086:1521] [8086:0001] 01\" pci_link_speed=\"0.000000\">\n"
    "     <object type=\"OSDev\" gp_index=\"25\" name=\"eth0\" osdev_type=\"2\"/>\n"
    "    </object>\n"
    "    <object type=\"PCIDev\" gp_index=\"26\" pci_busid=\"0000:00:06.0\""
    "     pci_type=\"0380 [8086:0bd5] [8086:0000] 2f\" pci_link_speed=\"0.000000\">\n"
    "     <object type=\"OSDev\" gp_index=\"27\" name=\"ze0\" subtype=\"LevelZero\""
    "      osdev_type=\"5\">\n"
    "      <object type=\"OSDev\" gp_index=\"28\" name=\"ze0.0\" subtype=\"LevelZero\""
    "       osdev_type=\"5\"/>\n"
    "     </object>\n"
    "    </object>\n"
    "   </object>\n"
    "  </object>\n"
    "  <object type=\"OSDev\" gp_index=\"30\" name=\"lo\" osdev_type=\"2\"/>\n"
    "  <object type=\"OSDev\" gp_index=\"31\" name=\"opencl1d0\" subtype=\"OpenCL\" osdev_type=\"5\">\n"
    "   <info name=\"OpenCLDeviceType\" value=\"CPU\"/>\n"
    "  </object>\n"
    " </object>\n"
    "</topology>\n";

static int load_devices_xml(void **state)
{
  hwloc_topology_t topo;
  if (hwloc_topology_init(&topo) != 0)
    return -1;
  if (hwloc_topology_set_xmlbuffer(topo, devices_xml, (int)sizeof devices_xml) != 0 ||
      hwloc_topology_set_io_types_filter(topo, HWLOC_TYPE_FILTER_KEEP_ALL) != 0 ||
      hwloc_topology_load(topo) != 0) {
    hwloc_topology_destroy(topo);
    return -1;
  }
  *state = topo;
  return 0;
}

static int load_host(void **state)
{
  hwloc_topology_t topo;
  if (topo_hw_load(&topo) != 0)
    return -1;
  *state = topo;
  return 0;
}

static int destroy(void **state)
{
  hwloc_topology_destroy((hwloc_topology_t)*state);
  return 0;
}

#define ON(test, desc) cmocka_unit_test_prestate_setup_teardown(test, load_synthetic, destroy, desc)

/* ---- helpers -------------------------------------------------------------------- */

static void assert_counts(const topo_hw_t *hw, int packages, int numa_nodes, int cores, int pus,
                          int cpuset_cores, int cpuset_pus)
{
  assert_int_equal(hw->packages, packages);
  assert_int_equal(hw->numa_nodes, numa_nodes);
  assert_int_equal(hw->cores, cores);
  assert_int_equal(hw->pus, pus);
  assert_int_equal(hw->gpus, 0); /* synthetic topologies have no I/O */
  assert_int_equal(hw->nics, 0);
  assert_int_equal(hw->cpuset_cores, cpuset_cores);
  assert_int_equal(hw->cpuset_pus, cpuset_pus);
}

/* The cpuset of PUs first..last (logical indexes). */
static hwloc_bitmap_t pus(hwloc_topology_t topo, int first, int last)
{
  hwloc_bitmap_t set = hwloc_bitmap_alloc();
  assert_non_null(set);
  for (int i = first; i <= last; i++) {
    hwloc_obj_t pu = hwloc_get_obj_by_type(topo, HWLOC_OBJ_PU, (unsigned)i);
    assert_non_null(pu);
    hwloc_bitmap_or(set, set, pu->cpuset);
  }
  return set;
}

/* ---- whole machines ------------------------------------------------------------- */

static void test_two_packages_of_two_numa_nodes(void **state)
{
  topo_hw_t hw;
  topo_hw_count(*state, NULL, &hw);
  assert_counts(&hw, 2, 4, 32, 64, 32, 64);
}

static void test_one_package_without_smt(void **state)
{
  topo_hw_t hw;
  topo_hw_count(*state, NULL, &hw);
  assert_counts(&hw, 1, 1, 4, 4, 4, 4);
}

static void test_no_package_level_counts_zero_packages(void **state)
{
  topo_hw_t hw;
  topo_hw_count(*state, NULL, &hw);
  assert_counts(&hw, 0, 1, 2, 4, 2, 4);
}

static void test_pus_are_cores_when_there_are_no_cores(void **state)
{
  assert_int_equal(hwloc_get_nbobjs_by_type(*state, HWLOC_OBJ_CORE), 0);
  topo_hw_t hw;
  topo_hw_count(*state, NULL, &hw);
  assert_counts(&hw, 1, 1, 4, 4, 4, 4);

  hwloc_bitmap_t middle = pus(*state, 1, 2);
  assert_int_equal(topo_hw_cores_in(*state, middle), 2);
  hwloc_bitmap_free(middle);
}

static void test_invalid_synthetic_description_fails(void **state)
{
  (void)state;
  hwloc_topology_t topo = (hwloc_topology_t)&topo; /* must be reset to NULL */
  assert_int_equal(topo_hw_load_synthetic(&topo, "pack:2 bogus:3"), -1);
  assert_null(topo);
}

/* ---- cpusets -------------------------------------------------------------------- */

static void test_three_pus_of_smt_pairs_touch_two_cores(void **state)
{
  hwloc_bitmap_t first3 = pus(*state, 0, 2);
  assert_int_equal(topo_hw_cores_in(*state, first3), 2);
  topo_hw_t hw;
  topo_hw_count(*state, first3, &hw);
  assert_counts(&hw, 2, 4, 32, 64, 2, 3);
  hwloc_bitmap_free(first3);

  /* One PU of each of two neighbouring cores: both count. */
  hwloc_bitmap_t straddle = pus(*state, 1, 2);
  assert_int_equal(topo_hw_cores_in(*state, straddle), 2);
  hwloc_bitmap_free(straddle);
}

static void test_a_numa_node_holds_eight_cores(void **state)
{
  for (unsigned n = 0; n < 4; n++) {
    hwloc_obj_t numa = hwloc_get_obj_by_type(*state, HWLOC_OBJ_NUMANODE, n);
    assert_non_null(numa);
    topo_hw_t hw;
    topo_hw_count(*state, numa->cpuset, &hw);
    assert_counts(&hw, 2, 4, 32, 64, 8, 16);
  }
  hwloc_obj_t pack = hwloc_get_obj_by_type(*state, HWLOC_OBJ_PACKAGE, 1);
  assert_non_null(pack);
  assert_int_equal(topo_hw_cores_in(*state, pack->cpuset), 16);
}

static void test_empty_cpuset_has_no_cores(void **state)
{
  hwloc_bitmap_t empty = hwloc_bitmap_alloc();
  assert_non_null(empty);
  assert_int_equal(topo_hw_cores_in(*state, empty), 0);
  topo_hw_t hw;
  topo_hw_count(*state, empty, &hw);
  assert_counts(&hw, 2, 4, 32, 64, 0, 0);
  hwloc_bitmap_free(empty);
}

static void test_pus_outside_the_machine_are_ignored(void **state)
{
  hwloc_bitmap_t set = hwloc_bitmap_alloc();
  assert_non_null(set);
  hwloc_bitmap_set_range(set, 60, 200); /* PUs 60..63 exist: cores 30 and 31 */
  topo_hw_t hw;
  topo_hw_count(*state, set, &hw);
  assert_counts(&hw, 2, 4, 32, 64, 2, 4);
  hwloc_bitmap_free(set);
}

static void test_null_cpuset_is_the_allowed_cpuset(void **state)
{
  hwloc_const_cpuset_t allowed = hwloc_topology_get_allowed_cpuset(*state);
  assert_int_equal(topo_hw_cores_in(*state, NULL), topo_hw_cores_in(*state, allowed));
  assert_int_equal(topo_hw_cores_in(*state, NULL), 32);
}

static void test_bind_cpuset_of_synthetic_is_whole_machine(void **state)
{
  hwloc_bitmap_t bound = hwloc_bitmap_alloc();
  assert_non_null(bound);
  assert_int_equal(topo_hw_bind_cpuset(*state, bound), 0);
  assert_true(hwloc_bitmap_isequal(bound, hwloc_topology_get_allowed_cpuset(*state)));
  assert_int_equal(hwloc_bitmap_weight(bound), 64);
  hwloc_bitmap_free(bound);
}

/* A cgroup or a batch system can leave the process fewer CPUs than the
 * machine has: its binding never reaches outside them, and NULL means them. */
static void test_binding_stays_inside_the_allowed_cpuset(void **state)
{
  (void)state;
  hwloc_topology_t topo;
  assert_int_equal(hwloc_topology_init(&topo), 0);
  assert_int_equal(hwloc_topology_set_synthetic(topo, BIG), 0);
  assert_int_equal(hwloc_topology_set_flags(topo, HWLOC_TOPOLOGY_FLAG_INCLUDE_DISALLOWED), 0);
  assert_int_equal(hwloc_topology_load(topo), 0);
  hwloc_obj_t numa1 = hwloc_get_obj_by_type(topo, HWLOC_OBJ_NUMANODE, 1);
  assert_non_null(numa1);
  assert_int_equal(hwloc_topology_allow(topo, numa1->cpuset, NULL, HWLOC_ALLOW_FLAG_CUSTOM), 0);

  hwloc_bitmap_t bound = hwloc_bitmap_alloc();
  assert_non_null(bound);
  assert_int_equal(topo_hw_bind_cpuset(topo, bound), 0);
  assert_true(hwloc_bitmap_isequal(bound, numa1->cpuset));

  topo_hw_t hw;
  topo_hw_count(topo, NULL, &hw);
  assert_counts(&hw, 2, 4, 32, 64, 8, 16);
  hwloc_bitmap_free(bound);
  hwloc_topology_destroy(topo);
}

/* ---- exchanging cpusets as unsigned longs --------------------------------------- */

/* Word layout stated in hw.h, computed here bit by bit. */
static void expect_words(const unsigned long *words, int nwords, int first_pu, int last_pu)
{
  for (int w = 0; w < nwords; w++) {
    unsigned long expected = 0;
    for (int b = 0; b < ULONG_BITS; b++) {
      int pu = w * ULONG_BITS + b;
      if (pu >= first_pu && pu <= last_pu)
        expected |= 1UL << b;
    }
    assert_int_equal(words[w], expected);
  }
}

/* Two ranks of a 128-PU node (words straddle the 64-bit boundary), bound to
 * NUMA nodes 0 and 2: what MPI_Allgather would deliver is unpacked and OR-ed
 * into the union both ranks see. */
static void test_union_of_two_ranks_via_ulongs(void **state)
{
  hwloc_topology_t topo = *state;
  int nwords = topo_hw_cpuset_nwords(topo);
  assert_int_equal(nwords, 128 / ULONG_BITS);

  unsigned long gathered[2 * 128 / (CHAR_BIT * sizeof(unsigned long))];
  const unsigned numa_of_rank[2] = {0, 2};
  for (int r = 0; r < 2; r++) {
    hwloc_obj_t numa = hwloc_get_obj_by_type(topo, HWLOC_OBJ_NUMANODE, numa_of_rank[r]);
    assert_non_null(numa);
    assert_int_equal(topo_hw_cpuset_to_ulongs(numa->cpuset, gathered + r * nwords, nwords), 0);
  }
  expect_words(gathered, nwords, 0, 31);
  expect_words(gathered + nwords, nwords, 64, 95);

  hwloc_bitmap_t all = hwloc_bitmap_alloc(), one = hwloc_bitmap_alloc();
  assert_non_null(all);
  assert_non_null(one);
  for (int r = 0; r < 2; r++) {
    assert_int_equal(topo_hw_cpuset_from_ulongs(one, gathered + r * nwords, nwords), 0);
    hwloc_bitmap_or(all, all, one);
  }
  assert_true(hwloc_bitmap_isequal(one, hwloc_get_obj_by_type(topo, HWLOC_OBJ_NUMANODE, 2)->cpuset));

  hwloc_bitmap_t expected = pus(topo, 0, 31);
  hwloc_bitmap_t upper = pus(topo, 64, 95);
  hwloc_bitmap_or(expected, expected, upper);
  assert_true(hwloc_bitmap_isequal(all, expected));

  topo_hw_t hw;
  topo_hw_count(topo, all, &hw);
  assert_counts(&hw, 2, 4, 64, 128, 32, 64);

  hwloc_bitmap_free(upper);
  hwloc_bitmap_free(expected);
  hwloc_bitmap_free(one);
  hwloc_bitmap_free(all);
}

static void test_ulongs_reject_sets_that_do_not_fit(void **state)
{
  (void)state;
  unsigned long words[2] = {~0UL, ~0UL};
  hwloc_bitmap_t set = hwloc_bitmap_alloc();
  assert_non_null(set);

  assert_int_equal(topo_hw_cpuset_to_ulongs(set, words, 2), 0); /* empty: zeros */
  expect_words(words, 2, 1, 0);
  assert_int_equal(topo_hw_cpuset_to_ulongs(set, NULL, 0), 0);

  hwloc_bitmap_only(set, (unsigned)ULONG_BITS); /* first PU of word 1 */
  errno = 0;
  assert_int_equal(topo_hw_cpuset_to_ulongs(set, words, 1), -1);
  assert_int_equal(errno, EOVERFLOW);
  assert_int_equal(topo_hw_cpuset_to_ulongs(set, words, 2), 0);
  expect_words(words, 2, ULONG_BITS, ULONG_BITS);

  hwloc_bitmap_fill(set); /* infinite */
  errno = 0;
  assert_int_equal(topo_hw_cpuset_to_ulongs(set, words, 2), -1);
  assert_int_equal(errno, EOVERFLOW);

  errno = 0;
  assert_int_equal(topo_hw_cpuset_from_ulongs(set, words, -1), -1);
  assert_int_equal(errno, EINVAL);
  assert_int_equal(topo_hw_cpuset_from_ulongs(set, NULL, 0), 0);
  assert_true(hwloc_bitmap_iszero(set));
  hwloc_bitmap_free(set);
}

/* ---- describe ------------------------------------------------------------------- */

static void test_describe_counts_and_plurals(void **state)
{
  char buf[128];
  topo_hw_t hw;
  topo_hw_count(*state, NULL, &hw);
  topo_hw_describe(&hw, buf, sizeof buf);
  assert_string_equal(buf, "2 packages, 4 NUMA nodes, 32 cores, 64 PUs, 0 GPUs, 0 NICs; "
                           "cpuset: 32 cores");

  const topo_hw_t header_example = {1, 1, 2, 2, 0, 1, 2, 2};
  topo_hw_describe(&header_example, buf, sizeof buf);
  assert_string_equal(buf, "1 package, 1 NUMA node, 2 cores, 2 PUs, 0 GPUs, 1 NIC; "
                           "cpuset: 2 cores");

  const topo_hw_t ones = {1, 1, 1, 1, 1, 1, 1, 1};
  topo_hw_describe(&ones, buf, sizeof buf);
  assert_string_equal(buf, "1 package, 1 NUMA node, 1 core, 1 PU, 1 GPU, 1 NIC; "
                           "cpuset: 1 core");
}

static void test_describe_truncates_to_the_buffer(void **state)
{
  (void)state;
  const topo_hw_t hw = {2, 4, 32, 64, 0, 0, 32, 64};
  char buf[11];
  memset(buf, 'x', sizeof buf);
  topo_hw_describe(&hw, buf, sizeof buf);
  assert_string_equal(buf, "2 packages");
  topo_hw_describe(&hw, NULL, 0);
}

/* ---- I/O devices ---------------------------------------------------------------- */

static void test_devices_count_once_per_pci_device(void **state)
{
  topo_hw_t hw;
  topo_hw_count(*state, NULL, &hw);
  assert_int_equal(hw.gpus, 3);
  assert_int_equal(hw.nics, 2);
  assert_int_equal(hw.cores, 2);
  assert_int_equal(hw.cpuset_cores, 2);
}

/* ---- this machine --------------------------------------------------------------- */

static void test_this_machine_has_a_core(void **state)
{
  hwloc_topology_t topo = *state;
  hwloc_bitmap_t bound = hwloc_bitmap_alloc();
  assert_non_null(bound);
  assert_int_equal(topo_hw_bind_cpuset(topo, bound), 0);

  topo_hw_t hw;
  topo_hw_count(topo, bound, &hw);
  assert_true(hw.cores >= 1);

  char buf[160];
  topo_hw_describe(&hw, buf, sizeof buf);
  print_message("this machine: %s\n", buf);
  hwloc_bitmap_free(bound);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      ON(test_two_packages_of_two_numa_nodes, BIG),
      ON(test_one_package_without_smt, "pack:1 core:4 pu:1"),
      ON(test_no_package_level_counts_zero_packages, "numa:1 core:2 pu:2"),
      ON(test_pus_are_cores_when_there_are_no_cores, "pack:1 pu:4"),
      cmocka_unit_test(test_invalid_synthetic_description_fails),
      ON(test_three_pus_of_smt_pairs_touch_two_cores, BIG),
      ON(test_a_numa_node_holds_eight_cores, BIG),
      ON(test_empty_cpuset_has_no_cores, BIG),
      ON(test_pus_outside_the_machine_are_ignored, BIG),
      ON(test_null_cpuset_is_the_allowed_cpuset, BIG),
      ON(test_bind_cpuset_of_synthetic_is_whole_machine, BIG),
      cmocka_unit_test(test_binding_stays_inside_the_allowed_cpuset),
      ON(test_union_of_two_ranks_via_ulongs, "pack:2 numa:2 core:16 pu:2"),
      cmocka_unit_test(test_ulongs_reject_sets_that_do_not_fit),
      ON(test_describe_counts_and_plurals, BIG),
      cmocka_unit_test(test_describe_truncates_to_the_buffer),
      cmocka_unit_test_setup_teardown(test_devices_count_once_per_pci_device, load_devices_xml,
                                      destroy),
      cmocka_unit_test_setup_teardown(test_this_machine_has_a_core, load_host, destroy),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
