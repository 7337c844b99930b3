# Pieces shared by check-mpich.sh and check-mpi4py.sh (sourced; $prog set
# by the caller): messages, option and run-spec checks, phase timing.

die()  { echo "$prog: error: $*" >&2; exit 2; }
note() { echo "$prog: $*"; }
need_arg() { [[ $# -ge 2 && -n $2 ]] || die "$1 needs an argument"; }

# split_env "A=1,B=x,y": env_split=(A=1 "B=x,y") (a piece without = belongs
# to the value before it).
split_env() {
    local piece; env_split=()
    IFS=, read -r -a pieces <<<"$1"
    for piece in "${pieces[@]}"; do
        if [[ $piece != *=* && ${#env_split[@]} -gt 0 ]]; then env_split[-1]+=",$piece"
        else env_split+=("$piece"); fi
    done
}

# run_spec_label SPEC ENV: checks the run's environment (VAR=VALUE pieces)
# and that the run was not given before; its label in $label, appended to
# run_label.
run_spec_label() {
    local e
    if [[ -n $2 ]]; then
        split_env "$2"
        for e in "${env_split[@]}"; do [[ $e == *=* ]] || die "run '$1': '$e' is not VAR=VALUE"; done
    fi
    label=$(tr -c 'A-Za-z0-9_.=+,-' '_' <<<"${1//[:@]/-}"); label=${label%_}
    [[ " ${run_label[*]} " != *" $label "* ]] || die "run '$1' given twice"
    run_label+=("$label")
}

# need_lib_file WHAT: $lib is given and exists (made absolute).
need_lib_file() {
    [[ -n $lib ]] || die "$1 need --lib PATH/libmpix.so"
    [[ -f $lib ]] || die "--lib $lib: no such file"
    lib=$(realpath "$lib")
}

phase_start() { phase_t0=$(date +%s); }
phase_end()   { timing+=("$(printf '%-28s %5ds' "$1" $(( $(date +%s) - phase_t0 )))"); }
