# Sourced by the GPU scripts (scripts/gpu_*.sh), after `set -u`: which build they test and
# where their results go. Arguments: the build folder to test when WS_BUILD is not set and
# .gpu/ holds no staged copy, and the results folder's default name.
# Sets here (the source tree), WS_BUILD (made absolute), OUTDIR ($WS_OUT, else $OUT, else
# ./<name>), BIN and LIB (the build's bin/ and lib/).
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
WS_BUILD=${WS_BUILD:-$([[ -d $here/.gpu/bin ]] && echo "$here/.gpu" || echo "$here/$1")}
WS_BUILD=$(cd "$WS_BUILD" && pwd)
OUTDIR=${WS_OUT:-${OUT:-$PWD/$2}}
BIN=$WS_BUILD/bin; LIB=$WS_BUILD/lib
