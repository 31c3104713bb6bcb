package tests

import "testing"

func TestNativeMatchingOrder(t *testing.T) { launch(t, "matching-order", 2) }

func TestNativeFlowControlRecovery(t *testing.T) { launch(t, "flow-control", 2) }

func TestNativeTriggeredChain(t *testing.T) { launch(t, "triggered-chain", 2) }
