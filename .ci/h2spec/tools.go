//go:build tools

// The one program this module exists to build (see go.mod).
package tools

import _ "github.com/summerwind/h2spec/cmd/h2spec"
