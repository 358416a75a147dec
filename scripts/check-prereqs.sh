#!/usr/bin/env bash
# Checks the tools the test suite needs (README "Prerequisites"); exits 1 naming what is missing and
# where it comes from. .ci/run calls it after installing what it can.
set -euo pipefail
need() { command -v "$1" >/dev/null 2>&1; }

for tool in node npm git kubectl python3; do
  need "$tool" || { echo "prerequisites: required tool '$tool' is not installed" >&2; exit 1; }
done
# The kubectl end-to-end tests also run kubectl 1.27 and 1.33, found beside the real path of the
# kubectl on PATH. The Google Cloud CLI's Debian package `kubectl` ships kubectl.1.27 ... kubectl.1.33
# there (/usr/lib/google-cloud-sdk/bin); any kubectl binaries of those versions named so work too.
KUBECTL_DIR="$(dirname "$(readlink -f "$(command -v kubectl)")")"
for v in 1.27 1.33; do
  [ -x "$KUBECTL_DIR/kubectl.$v" ] || {
    echo "prerequisites: $KUBECTL_DIR/kubectl.$v not found: the kubectl end-to-end tests need kubectl $v beside kubectl." >&2
    echo "prerequisites: install the Google Cloud CLI's Debian package 'kubectl' (apt-get install kubectl from packages.cloud.google.com/apt)," >&2
    echo "prerequisites: which ships kubectl.1.27 ... kubectl.1.33, or put a kubectl $v binary there named kubectl.$v." >&2
    exit 1
  }
done
[ -x /usr/lib/git-core/git-http-backend ] || { echo "prerequisites: git-http-backend not found (package git)" >&2; exit 1; }
node -e 'const [maj,min]=process.versions.node.split(".").map(Number); if (maj<20||(maj===20&&min<10)) { console.error("ci: Node >= 20.10 required, have "+process.version); process.exit(1) }'

# Go >= 1.26 builds the control plane (kube-apiserver, kube-controller-manager, etcd, helm) that the
# control-plane tests run (test/cluster/build.sh). /usr/local/go/bin is where the official tarball
# installs it; test/cluster/build.sh looks there too.
GO="$(command -v go || { [ -x /usr/local/go/bin/go ] && echo /usr/local/go/bin/go; } || true)"
[ -n "$GO" ] || { echo "prerequisites: Go >= 1.26 is not installed (https://go.dev/dl/; the control-plane tests build kube-apiserver from source)" >&2; exit 1; }
GOVERSION="$("$GO" env GOVERSION 2>/dev/null || true)"
if ! [[ "$GOVERSION" =~ ^go([0-9]+)\.([0-9]+) ]] || (( BASH_REMATCH[1] < 1 || (BASH_REMATCH[1] == 1 && BASH_REMATCH[2] < 26) )); then
  echo "prerequisites: Go >= 1.26 is required for the control-plane tests, have ${GOVERSION:-an unknown version} ($GO)" >&2
  exit 1
fi
python3 -c 'import yaml' 2>/dev/null || { echo "prerequisites: PyYAML is missing for python3 (Debian package python3-yaml, or pip install pyyaml)" >&2; exit 1; }
need redis-server || { echo "prerequisites: redis-server is not installed (Debian package redis-server)" >&2; exit 1; }
echo "prerequisites: ok (kubectl 1.27 and 1.33 in $KUBECTL_DIR, $GOVERSION)"
