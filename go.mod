module github.com/goportals/goportals

go 1.26.0

require (
	github.com/Mellanox/rdmamap v1.2.0
	github.com/cilium/ebpf v0.22.0
	github.com/google/btree v1.1.3
	github.com/hashicorp/golang-lru/v2 v2.0.7
	go.uber.org/goleak v1.3.0
	golang.org/x/sys v0.50.0
)

require (
	github.com/vishvananda/netlink v1.3.1 // indirect
	github.com/vishvananda/netns v0.0.5 // indirect
)
