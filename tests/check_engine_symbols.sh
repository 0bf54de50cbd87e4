#!/bin/sh
# The engine and codec must make no OS calls (sans-IO, ENG-1): list the
# symbols their static libraries need from outside themselves and fail on
# anything beyond the compiler's memory builtins and sanitizer hooks.
set -eu
allowed='^(_GLOBAL_OFFSET_TABLE_|memcpy|memmove|memset|memcmp|__stack_chk_fail|__asan_.*|__ubsan_.*|__sanitizer_.*|__cpu_model|__cpu_indicator_init|__tsan_.*|__msan_.*|__llvm_.*|__sancov_.*)$'
bad=0
for lib in "$@"; do
  # Symbols defined anywhere in the given libraries count as internal.
  nm -g --defined-only "$@" 2>/dev/null | awk 'NF>=3{print $3}' | sort -u > /tmp/mroce_defined.$$
  for sym in $(nm -u "$lib" | awk 'NF==2 && $1=="U"{print $2}' | sort -u); do
    if grep -qx "$sym" /tmp/mroce_defined.$$; then continue; fi
    if echo "$sym" | grep -Eq "$allowed"; then continue; fi
    echo "engine_symbols: $lib needs $sym (an OS or libc call in the engine?)"
    bad=1
  done
  rm -f /tmp/mroce_defined.$$
done
if [ $bad -ne 0 ]; then
  echo "engine_symbols: 0 passed, 1 failed"
  exit 1
fi
echo "engine_symbols: 1 passed, 0 failed"
