# Sourced by the scripts that test an installed wheel: prints PATH without any directory that holds
# cargo or rustc, so that nothing can be rebuilt.
path_without_rust() {
    local path="" dir
    local -a dirs
    IFS=: read -r -a dirs <<< "$PATH"
    for dir in "${dirs[@]}"; do
        if [ -n "$dir" ] && [ ! -x "$dir/cargo" ] && [ ! -x "$dir/rustc" ]; then
            path="$path${path:+:}$dir"
        fi
    done
    printf '%s' "$path"
}
