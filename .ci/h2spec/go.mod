// h2spec (github.com/summerwind/h2spec, the HTTP/2 conformance suite tests/test_h2spec.py runs),
// pinned with everything it imports: .ci/install.sh test builds it from the Go module proxy with
// `go install` in this directory. h2spec v2.2.1 has no go.mod of its own (the proxy serves it as
// +incompatible; its later tags are not served), so without this file `go install ...@v2.2.1`
// would take the newest of each dependency - versions that need a newer Go than Debian 12's 1.19.
// The versions below are h2spec's own Gopkg.lock's where tagged, golang.org/x at the last
// release that builds with Go 1.19.
module loadbench/ci/h2spec

go 1.19

require github.com/summerwind/h2spec v2.2.1+incompatible

require (
	github.com/fatih/color v1.7.0 // indirect
	github.com/inconshreveable/mousetrap v1.0.0 // indirect
	github.com/mattn/go-colorable v0.1.0 // indirect
	github.com/mattn/go-isatty v0.0.4 // indirect
	github.com/spf13/cobra v0.0.3 // indirect
	github.com/spf13/pflag v1.0.3 // indirect
	golang.org/x/net v0.10.0 // indirect
	golang.org/x/sys v0.8.0 // indirect
	golang.org/x/text v0.9.0 // indirect
)
