#!/bin/sh
# The layers of the tree and the one direction their includes and calls
# run (CONTRIBUTING.md):
#
#   wire (src/wire, mroce/wire.h)                    level 0
#   engine (src/engine, mroce/engine.h, types.h)     level 1
#   udp + lib (src/udp, src/lib, src/dpdk, mroce.h)  level 2
#   everything else (tools, prov, sim, tests, ...)   level 3
#
# A file may include headers of its own level or below, never above:
# every quoted or <mroce/...> include of src/ and include/ is resolved to a
# level and compared.  Then the calls: each static library's undefined
# symbols must not be defined by a library of a higher level (nm), so no
# function runs back up the layers even without an include.
#   check_layers.sh SRC_DIR [WIRE_LIB ENGINE_LIB LIB_LIB]
set -eu
src=$(cd "$1" && pwd)
bad=0

level_of_path() { # a path relative to the source root
    case $1 in
    src/wire/* | include/mroce/wire.h) echo 0 ;;
    src/engine/* | include/mroce/engine.h | include/mroce/types.h) echo 1 ;;
    src/udp/* | src/lib/* | src/dpdk/* | include/mroce/mroce.h) echo 2 ;;
    *) echo 3 ;;
    esac
}

for f in $(cd "$src" && ls src/*/*.[ch] include/mroce/*.h); do
    mine=$(level_of_path "$f")
    dir=$(dirname "$f")
    incs=$(sed -n \
        -e 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/q \1/p' \
        -e 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*<\(mroce\/[^>]*\)>.*/a \1/p' \
        "$src/$f")
    # "name" resolves against the file's directory, <mroce/x.h> to include/.
    # A here-document, not a pipe, so the loop runs in this shell and can
    # set bad.
    while read -r kind inc; do
        [ -n "$kind" ] || continue
        if [ "$kind" = q ]; then
            # The file's own directory first, then the build's -I paths.
            target=
            for d in "$dir" src/engine src/udp src/lib src/dpdk include; do
                if [ -e "$src/$d/$inc" ]; then
                    target=$(realpath -m --relative-to="$src" "$src/$d/$inc")
                    break
                fi
            done
            [ -n "$target" ] || target=include/$inc
        else
            target=include/$inc
        fi
        theirs=$(level_of_path "$target")
        if [ "$theirs" -gt "$mine" ]; then
            echo "layers: $f (level $mine) includes $target (level $theirs)"
            bad=1
        fi
    done <<EOF
$incs
EOF
done

# Calls: libraries in level order; what one needs must not come from a
# higher one.
if [ $# -ge 4 ]; then
    shift
    i=0
    for lib in "$@"; do
        j=0
        for upper in "$@"; do
            if [ $j -gt $i ]; then
                nm -g --defined-only "$upper" 2>/dev/null |
                    awk 'NF>=3{print $3}' | sort -u > "/tmp/layers_up.$$"
                for sym in $(nm -u "$lib" | awk '$1=="U"{print $2}' | sort -u); do
                    if grep -qx "$sym" "/tmp/layers_up.$$"; then
                        echo "layers: $(basename "$lib") calls $sym of $(basename "$upper")"
                        bad=1
                    fi
                done
                rm -f "/tmp/layers_up.$$"
            fi
            j=$((j + 1))
        done
        i=$((i + 1))
    done
fi

if [ $bad -ne 0 ]; then
    echo "layers: 0 passed, 1 failed"
    exit 1
fi
echo "layers: 1 passed, 0 failed"
