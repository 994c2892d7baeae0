module triad

go 1.26.8

require (
	github.com/google/btree v1.1.3 // indirect
	go.etcd.io/bbolt v1.4.3 // indirect
	golang.org/x/sys v0.49.0 // indirect
	google.golang.org/protobuf v1.36.12 // indirect
)
