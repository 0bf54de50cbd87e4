# Sourced by the test scripts: when LIBDIR's libibverbs.so.1 is built with
# AddressSanitizer (MROCE_SANITIZE), unmodified programs need its runtime
# loaded first (LD_PRELOAD), and their own leaks are not ours to report.
asan_env() { # LIBDIR -> sets MV_PRELOAD
    MV_PRELOAD=$(ldd "$1/libibverbs.so.1" 2>/dev/null |
        awk '/lib(asan|ubsan)\.so/ {printf "%s%s", sep, $3; sep = ":"}')
    if [ -n "$MV_PRELOAD" ]; then
        export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
    fi
}
