//go:build tools

// The program ../build.sh builds from this module.
package tools

import _ "helm.sh/helm/v3/cmd/helm"
