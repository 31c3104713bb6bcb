package main

// ptlbench measures real HCAs too: the libibverbs provider is linked in.
import _ "github.com/goportals/goportals/portals/ibverbs"
