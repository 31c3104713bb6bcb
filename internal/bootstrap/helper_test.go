package bootstrap

// helperEnv switches the test binary into a rank helper (see launch_test.go).
const helperEnv = "PTL_BOOTSTRAP_TEST_HELPER"

func runHelper(mode string) int { return 2 }
