# abi_lib.sh - sourced by verbs/tests/test_abi.sh and
# rdmacm/tests/test_abi.sh: the pieces of an ABI check against the
# Debian (rdma-core 44) library a build replaces.
#   abi_system NAME       $sys: Debian's NAME; exits 77 (skip) without it
#                         or objdump
#   abi_defs LIB          "VERSION NAME" of each global symbol LIB defines
#                         at its default version, sorted
#   abi_imports TAG F...  "VERSION NAME" of each symbol the files import at
#                         a version matching TAG, sorted (missing files
#                         skipped)
#   abi_subset A B WHAT   fails, listing them, if lines of file A are not
#                         in file B; WHAT says what A holds and B lacks
abi_system() {
    sys=/usr/lib/x86_64-linux-gnu/$1
    [ -e "$sys" ] || sys=/lib/x86_64-linux-gnu/$1
    if [ ! -e "$sys" ] || ! command -v objdump >/dev/null 2>&1; then
        echo "SKIP: no system $1 or objdump"
        exit 77
    fi
}
abi_defs() {
    objdump -T "$1" | awk '$2 == "g" && ($3 == "DF" || $3 == "DO") &&
        $(NF-1) !~ /^\(/ && $NF != $(NF-1) {print $(NF-1), $NF}' | sort -u
}
abi_imports() {
    tag=$1
    shift
    for f in "$@"; do
        [ -e "$f" ] || continue
        objdump -T "$f" | awk -v t="$tag" '/\*UND\*/ && $(NF-1) ~ t {
            v = $(NF-1); gsub(/[()]/, "", v); print v, $NF}'
    done | sort -u
}
abi_subset() {
    missing=$(comm -23 "$1" "$2")
    if [ -n "$missing" ]; then
        echo "FAIL: $3:"
        echo "$missing"
        exit 1
    fi
}
