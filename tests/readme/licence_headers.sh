#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Every source file of the tree carries the licence's SPDX line within its first two lines (after a
# shebang): C and headers, CMake, shell, Python and pkg-config templates. Data (JSON, XML, corpora)
# and prose (Markdown) carry none. With --add, writes the line into each file that lacks it.
# Usage: licence_headers.sh SOURCE_DIR [--add]
set -euo pipefail
root=$1
add=${2:-}
cd "$root"
missing=()
while IFS= read -r -d '' f; do
  head -n 2 "$f" | grep -q 'SPDX-License-Identifier: MIT' && continue
  if [[ $add != --add ]]; then
    missing+=("$f")
    continue
  fi
  case $f in
    *.c | *.h) line='/* SPDX-License-Identifier: MIT */' ;;
    *) line='# SPDX-License-Identifier: MIT' ;;
  esac
  if head -n 1 "$f" | grep -q '^#!'; then
    { head -n 1 "$f"; echo "$line"; tail -n +2 "$f"; } >"$f.spdx"
  else
    { echo "$line"; cat "$f"; } >"$f.spdx"
  fi
  chmod --reference="$f" "$f.spdx"
  mv "$f.spdx" "$f"
done < <(find core plugins tuner tests examples include python cmake .ci CMakeLists.txt quickstart.sh \
  \( -name 'build*' -prune \) -o -type f \
  \( -name '*.[ch]' -o -name '*.cmake' -o -name 'CMakeLists.txt' -o -name '*.sh' -o -name '*.py' \
  -o -name '*.pyi' -o -name '*.in' -o -name run -o -name install-deps -o -name cross-arm64 \) \
  -print0 2>/dev/null | sort -z)
if ((${#missing[@]} > 0)); then
  printf 'licence_headers: no "SPDX-License-Identifier: MIT" in the first lines of:\n' >&2
  printf '  %s\n' "${missing[@]}" >&2
  printf 'licence_headers: add it (tests/readme/licence_headers.sh SOURCE_DIR --add)\n' >&2
  exit 1
fi
echo "licence_headers: every source file carries the SPDX line"
