//go:build tools

// Package tools pins the upstream main packages this module builds; it holds no code of ours.
package tools

import (
	_ "helm.sh/helm/v3/cmd/helm"
)
