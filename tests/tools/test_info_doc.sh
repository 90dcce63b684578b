#!/bin/sh
# Every line `memspace info` prints is explained in docs/stats.md's "`memspace info`" section (as every statistics
# line is in its own section): each row's name, with the hugetlb sizes as SIZE and the MEMSPACE_* settings as one
# row (each of those named in docs/options.md). Run with and without a setting in the environment.
set -u
tool=$1 src=$2
fail=0
doc=$(sed -n '/^## `memspace info`/,/^## /p' "$src/docs/stats.md")
[ -n "$doc" ] || { echo "FAIL: docs/stats.md has no \"## \`memspace info\`\" section"; exit 1; }
for env in "" "MEMSPACE_CACHE=size MEMSPACE_VERBOSE=junk"; do
  # shellcheck disable=SC2086 # (assignments, split)
  out=$(env $env "$tool" info) || { echo "FAIL: memspace info: status $?"; fail=1; }
  names=$(echo "$out" | grep '^  [^ ]' | cut -c3-32 | sed 's/ *$//' | sort -u)
  [ "$(echo "$names" | wc -l)" -ge 20 ] || { echo "FAIL: only $(echo "$names" | wc -l) lines found"; fail=1; }
  while IFS= read -r name; do
    case $name in
      hugetlb\ *\ pages) key='`hugetlb SIZE pages`' ;;
      MEMSPACE_*) key='`MEMSPACE_*`'
        grep -q "\`$name\`" "$src/docs/options.md" || { echo "FAIL: $name is not in docs/options.md"; fail=1; } ;;
      "(none set)") key='`(none set)`' ;;
      *) key="\`$name\`" ;;
    esac
    echo "$doc" | grep -qF -- "$key" || { echo "FAIL: '$name' printed, not in docs/stats.md's memspace info table"; fail=1; }
  done <<EOF2
$names
EOF2
done
[ $fail = 0 ] && echo "every memspace info line is documented"
exit $fail
