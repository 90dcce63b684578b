#!/usr/bin/env bash
# scripts/deps.sh against fake apt-get/dpkg-query/id (nothing is installed): a package `make test` needs that
# cannot be installed fails it, naming the package; without apt, make test fails under CI=true only.
# usage: test_deps.sh SOURCE_DIR
set -u
deps=$1/scripts/deps.sh
fake=$(mktemp -d)
trap 'rm -rf "$fake"' EXIT
fail=0; pass=0
check() { if eval "$2"; then pass=$((pass+1)); echo "ok   $1"; else echo "FAIL: $1 (exit $st, stderr: $err)"; fail=$((fail+1)); fi; }
mkdir -p "$fake/bin" "$fake/noapt"
for d in bin noapt; do
  ln -s "$(command -v grep)" "$fake/$d/grep"
  printf '#!/bin/sh\necho 0\n' > "$fake/$d/id"                 # root
  printf '#!/bin/sh\n[ -f "%s/installed.$3" ] && echo "install ok installed"; exit 0\n' "$fake" > "$fake/$d/dpkg-query"
  chmod +x "$fake/$d/id" "$fake/$d/dpkg-query"
done
# apt-get: every install fails except of the packages named in $fake/can (which become installed)
cat > "$fake/bin/apt-get" <<SH
#!/bin/sh
[ "\$1" = update ] && exit 0
ok=0
for p in "\$@"; do case \$p in -*|install) ;; *) if grep -qx "\$p" "$fake/can"; then : > "$fake/installed.\$p"; else ok=1; fi ;; esac; done
exit \$ok
SH
chmod +x "$fake/bin/apt-get"
run() { # PATH-DIR CI ARGS: sets st and err
  err=$(PATH="$fake/$1" CI=$2 "$BASH" "$deps" "$3" 2>&1 >/dev/null); st=$?
}
printf 'cmake\nmake\ngcc\ng++\nlibcmocka-dev\npython3\n' > "$fake/can"
run bin "" test
check "test: uninstallable packages fail it" '[ $st = 1 ]'
check "...and are named" '[[ "$err" == *"could not install"*valgrind* ]]'
check "...but not the ones installed" '[[ "$err" != *"could not install"*libcmocka-dev* ]]'
run bin "" bench
check "bench: a peer that cannot be installed is said, not fatal" '[ $st = 0 ] && [[ "$err" == *libjemalloc2* ]]'
rm -f "$fake"/installed.*; : > "$fake/can"
run bin "" bench
check "bench: a build package that cannot be installed is fatal" '[ $st = 1 ] && [[ "$err" == *libcmocka-dev* ]]'
run bin "" build
check "build: the same" '[ $st = 1 ]'
run noapt true test
check "no apt-get, CI=true: make test fails, saying why" '[ $st = 1 ] && [[ "$err" == *"not a Debian system"* ]]'
run noapt "" test
check "no apt-get outside CI: said, not fatal" '[ $st = 0 ] && [[ "$err" == *"not a Debian system"* ]]'
for p in $(sed -n 's/^  test)  pkgs="\$pkgs \(.*\)" ;;$/\1/p' "$deps") cmake make gcc g++ libcmocka-dev python3; do
  : > "$fake/installed.$p"
done
run bin true test
check "everything installed: exit 0, nothing said" '[ $st = 0 ] && [ -z "$err" ]'
echo "$pass passed, $fail failed"
[ $fail = 0 ]
