// What a trace's header takes from the process's environment: its place in a job (the rank
// variables and the job id) and how it was recorded (the WARPSCOPE_* variables and the
// effective settings). Pure: the session and the tests hand it an environment.
#ifndef WARPSCOPE_LIBINJECT_HEADER_ENVIRONMENT_H_
#define WARPSCOPE_LIBINJECT_HEADER_ENVIRONMENT_H_

#include <string>
#include <string_view>

#include "libinject/config.h"
#include "proto/writer/trace_records.h"

namespace warpscope {

// The header's rank_env: the variables of proto/settings/job_variables.h (rank, world size,
// local rank, job id) and the other placement variables launchers set (LOCAL_WORLD_SIZE,
// NODE_RANK, GROUP_RANK, ...), each that is set, once.
KeyValueList RankEnvironment(const GetEnvFn& getenv_fn);

// The header's job_id, the same in every process of one run: "<VARIABLE>=<value>" of the first
// of kJobIdVariables that is set; else, under `warpscope record`,
// "warpscope-record=<host>:<launcher pid>:<start ns>"; else empty.
std::string JobId(const GetEnvFn& getenv_fn, std::string_view hostname);

// Fills the header's rank_env and job_id (header->hostname set first), and its config: the
// settings as given, every other WARPSCOPE_* variable of `environment` (collectors' own ones
// included) and the effective trace kinds and capture range.
void AddEnvironmentToHeader(const Config& config, char** environment, HeaderRecord* header);

}  // namespace warpscope

#endif  // WARPSCOPE_LIBINJECT_HEADER_ENVIRONMENT_H_
