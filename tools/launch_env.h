/* Before MPI_Init: is this the first process of the job? Launchers say so in
 * the environment; a process started alone is. The tools use it to print a
 * usage error once instead of once per rank. */
#ifndef RONDO_TOOLS_LAUNCH_ENV_H
#define RONDO_TOOLS_LAUNCH_ENV_H

#include <stdlib.h>

static inline int launch_first_process(void)
{
  static const char *const vars[] = {"PMI_RANK", "PMIX_RANK", "OMPI_COMM_WORLD_RANK",
                                     "MPI_LOCALRANKID"};
  for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
    const char *v = getenv(vars[i]);
    if (v != NULL)
      return atoi(v) == 0;
  }
  return 1;
}

#endif
