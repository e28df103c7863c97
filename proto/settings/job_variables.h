// The environment variables through which launchers tell a process its place in a job (which
// rank, how many ranks, which run), read one way by the injected library (trace header, the
// output name's %r) and by the analyzers (a trace's rank). Header-only.
#ifndef WARPSCOPE_PROTO_SETTINGS_JOB_VARIABLES_H_
#define WARPSCOPE_PROTO_SETTINGS_JOB_VARIABLES_H_

#include <string_view>

namespace warpscope {

// The process's global rank, first set wins: torchrun / torch.distributed, Open MPI, PMIx,
// MPICH / Intel MPI (PMI), Slurm's srun (one task per rank).
inline constexpr std::string_view kRankVariables[] = {"RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK",
                                                      "PMI_RANK", "SLURM_PROCID"};
// The number of ranks, in the same launcher order.
inline constexpr std::string_view kWorldSizeVariables[] = {"WORLD_SIZE", "OMPI_COMM_WORLD_SIZE",
                                                           "PMI_SIZE", "SLURM_NTASKS"};
// The rank within one host.
inline constexpr std::string_view kLocalRankVariables[] = {"LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK",
                                                           "MPI_LOCALRANKID", "SLURM_LOCALID"};
// What names one run of a job, the same in every rank's process: torchrun's rendezvous id,
// Slurm's job and step, PMIx's namespace, Open MPI's job id.
inline constexpr std::string_view kJobIdVariables[] = {"TORCHELASTIC_RUN_ID", "SLURM_JOB_ID",
                                                       "PMIX_NAMESPACE", "OMPI_MCA_ess_base_jobid"};

}  // namespace warpscope

#endif  // WARPSCOPE_PROTO_SETTINGS_JOB_VARIABLES_H_
