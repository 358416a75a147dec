#!/usr/bin/env bash
# Builds the programs the cluster tests run into a cache outside the work tree, once per
# (go.mod, go.sum, this script); later runs find them and return at once. Usage:
#   test/cluster/build.sh              kube-apiserver, kube-controller-manager, etcd (this module)
#   test/cluster/build.sh helm         helm (the ./helm module), to render the chart
#   test/cluster/build.sh all          both, control plane first
# Prints the directory holding the binaries on its last line (one line per target for `all`).
# Concurrent callers wait on a lock, so .ci/run can start it in the background and the cluster
# tests call it again to wait for it.
#   REVERSER_CLUSTER_CACHE  cache root (default ~/.cache/reverser-apiserver/cluster)
#   GO                      go binary (default: go on PATH, else /usr/local/go/bin/go)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)

go=${GO:-}
if [ -z "$go" ]; then
  if command -v go >/dev/null 2>&1; then go=$(command -v go)
  elif [ -x /usr/local/go/bin/go ]; then go=/usr/local/go/bin/go
  else echo "cluster build: Go is not installed (need Go >= 1.26 on PATH or at /usr/local/go/bin/go)" >&2; exit 2
  fi
fi
root=${REVERSER_CLUSTER_CACHE:-$HOME/.cache/reverser-apiserver/cluster}
mkdir -p "$root"
# -buildvcs=false: the module sits inside this repository's checkout; stamping its VCS state would
# make the build depend on git's view of that checkout (ownership checks in CI clones).
flags=(-mod=readonly -buildvcs=false -trimpath -ldflags='-s -w')

# build_into NAME MODULE_DIR VERSION_OF COMMAND...: runs COMMAND (with $out.tmp as the target
# directory) unless $root/NAME-VERSION-KEY/.complete exists.
build() {
  local name=$1 dir=$2 module=$3; shift 3
  cd "$dir"
  local version key out
  version=$(awk -v m="$module" '/^[[:space:]]*\/\// { next } { for (i = 1; i < NF; i++) if ($i == m) { print $(i + 1); exit } }' go.mod)
  key=$(cat go.mod go.sum "$here/build.sh" | sha256sum | cut -c1-12)
  out="$root/$name-$version-$key"
  if [ ! -f "$out/.complete" ]; then
    exec 9>"$out.lock"
    if ! flock -n 9; then
      echo "cluster build: another build of $name $version is running; waiting for it" >&2
      flock 9
    fi
    if [ ! -f "$out/.complete" ]; then
      rm -rf "$out.tmp"; mkdir -p "$out.tmp"
      local start end
      start=$(date +%s)
      echo "cluster build: building $name $version with $("$go" version | awk '{print $3}') into $out (a first build downloads modules and compiles for many minutes)" >&2
      "$@"
      end=$(date +%s)
      echo "$((end - start))" > "$out.tmp/.build-seconds"
      touch "$out.tmp/.complete"
      rm -rf "$out"; mv "$out.tmp" "$out"
      echo "cluster build: $name done in $((end - start)) s" >&2
    fi
    exec 9>&-
  fi
  echo "$out"
}

control_plane() {
  # The version the binaries report (/version, kubectl version); `go build` of the module alone
  # leaves v0.0.0-master+$Format:%H$, which kubectl cannot parse.
  local major=${version#v}; major=${major%%.*}
  local minor=${version#v$major.}; minor=${minor%%.*}
  local v=k8s.io/component-base/version
  "$go" build -mod=readonly -buildvcs=false -trimpath \
    -ldflags="-s -w -X $v.gitVersion=$version -X $v.gitMajor=$major -X $v.gitMinor=$minor -X $v.gitTreeState=clean -X $v.buildDate=1970-01-01T00:00:00Z" \
    -o "$out.tmp/" k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager
  "$go" build "${flags[@]}" -o "$out.tmp/etcd" go.etcd.io/etcd/server/v3
}
helm() {
  "$go" build "${flags[@]}" -o "$out.tmp/helm" helm.sh/helm/v3/cmd/helm
}

case "${1:-control-plane}" in
  control-plane) build control-plane "$here" k8s.io/kubernetes control_plane ;;
  helm) build helm "$here/helm" helm.sh/helm/v3 helm ;;
  all) build control-plane "$here" k8s.io/kubernetes control_plane; build helm "$here/helm" helm.sh/helm/v3 helm ;;
  *) echo "usage: $0 [control-plane|helm|all]" >&2; exit 2 ;;
esac
