//go:build tools

// Package tools pins the upstream main packages this module builds; it holds no code of ours.
package tools

import (
	_ "sigs.k8s.io/kwok/cmd/kwok"
)
