module triad

go 1.26.8

require (
	github.com/cockroachdb/datadriven v1.0.3
	github.com/google/btree v1.1.3
	github.com/klauspost/reedsolomon v1.14.2
	github.com/schollz/progressbar/v3 v3.18.0
	go.etcd.io/bbolt v1.4.3
	golang.org/x/crypto v0.58.0
	golang.org/x/sys v0.49.0
	golang.org/x/term v0.47.0
	google.golang.org/protobuf v1.36.12
)

require (
	github.com/klauspost/cpuid/v2 v2.3.0 // indirect
	github.com/mitchellh/colorstring v0.0.0-20190213212951-d06e56a500db // indirect
	github.com/pmezard/go-difflib v1.0.0 // indirect
	github.com/rivo/uniseg v0.4.7 // indirect
)
