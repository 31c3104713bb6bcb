module example.com/outside

go 1.26.0

require github.com/goportals/goportals v0.0.0

require (
	github.com/cilium/ebpf v0.22.0 // indirect
	github.com/google/btree v1.1.3 // indirect
	github.com/hashicorp/golang-lru/v2 v2.0.7 // indirect
	golang.org/x/sys v0.50.0 // indirect
)

replace github.com/goportals/goportals => ../..
