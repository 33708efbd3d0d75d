#!/usr/bin/env bash
# install-clis.sh installs the pinned coding-agent CLIs that orcr's provider tests run
# against (claude, codex, pi, opencode) from the npm registry into a cache directory. It is idempotent:
# a CLI already present at the pinned version is skipped. Quiet on success; prints the
# binaries' paths with -v.
#
#   ORCR_CLI_CACHE   cache dir (default $HOME/.cache/orcr/clis)
#
# Tests find the CLIs at $ORCR_CLI_CACHE/<name>/node_modules/.bin/<bin> or through
# ORCR_CLAUDE_BIN / ORCR_CODEX_BIN / ORCR_PI_BIN / ORCR_OPENCODE_BIN.
set -euo pipefail

CACHE="${ORCR_CLI_CACHE:-$HOME/.cache/orcr/clis}"
VERBOSE=0
[ "${1:-}" = "-v" ] && VERBOSE=1

# name package version bin
PINS=(
	"claude @anthropic-ai/claude-code 2.1.328 claude"
	"codex @openai/codex 0.171.0 codex"
	"pi @mariozechner/pi-coding-agent 0.73.1 pi"
	"opencode opencode-ai 1.18.33 opencode"
)

installed_version() { # dir package
	local pj="$1/node_modules/$2/package.json"
	[ -f "$pj" ] || return 0
	node -e 'try{process.stdout.write(require(process.argv[1]).version||"")}catch(e){}' "$pj"
}

for pin in "${PINS[@]}"; do
	read -r name pkg version bin <<<"$pin"
	dir="$CACHE/$name"
	if [ "$(installed_version "$dir" "$pkg")" != "$version" ] || [ ! -x "$dir/node_modules/.bin/$bin" ]; then
		mkdir -p "$dir"
		[ -f "$dir/package.json" ] || printf '{"name":"orcr-cli-%s","private":true}\n' "$name" >"$dir/package.json"
		if ! out=$(cd "$dir" && npm install --no-audit --no-fund --no-progress --loglevel=error \
			--save-exact "$pkg@$version" 2>&1); then
			printf 'install-clis: npm install %s@%s failed:\n%s\n' "$pkg" "$version" "$out" >&2
			exit 1
		fi
	fi
	if ! "$dir/node_modules/.bin/$bin" --version >/dev/null 2>&1; then
		printf 'install-clis: %s installed but "%s --version" fails\n' "$pkg@$version" "$dir/node_modules/.bin/$bin" >&2
		exit 1
	fi
	[ "$VERBOSE" = 1 ] && echo "$name $version $dir/node_modules/.bin/$bin"
	[ "$name" = opencode ] && OPENCODE_VERSION=$version
done

# OpenCode npm-installs @opencode-ai/plugin (its own version) into every config dir
# that lacks it before it loads plugins: 10-20 s of registry download per test with a
# fresh XDG_CONFIG_HOME. Install it once here; testutil/clis.OpencodeConfigHome links
# it into each test's config dir.
seed="$CACHE/opencode-config"
if [ "$(installed_version "$seed" @opencode-ai/plugin)" != "$OPENCODE_VERSION" ]; then
	mkdir -p "$seed"
	printf '{\n  "dependencies": {\n    "@opencode-ai/plugin": "%s"\n  }\n}\n' "$OPENCODE_VERSION" >"$seed/package.json"
	if ! out=$(cd "$seed" && npm install --no-audit --no-fund --no-progress --loglevel=error 2>&1); then
		printf 'install-clis: npm install @opencode-ai/plugin@%s failed:\n%s\n' "$OPENCODE_VERSION" "$out" >&2
		exit 1
	fi
fi
[ "$VERBOSE" = 1 ] && echo "opencode-config $OPENCODE_VERSION $seed/node_modules"
exit 0
