package bootstrap

import "testing"

// TestLeavePMI: with LeavePMI(true) Open does not see the launcher's PMI
// connection (the program speaks PMI on it) and the environment is untouched.
func TestLeavePMI(t *testing.T) {
	t.Setenv("PMI_FD", "7")
	t.Setenv("PMI_SIZE", "2")
	t.Setenv("PMI_RANK", "1")
	if _, _, ok := foreignLauncher(lookupEnv); !ok {
		t.Fatal("PMI_FD with PMI_SIZE=2 is not seen as a launcher")
	}
	LeavePMI(true)
	defer LeavePMI(false)
	if name, _, ok := foreignLauncher(lookupEnv); ok {
		t.Fatalf("with LeavePMI(true) Open still sees %s", name)
	}
	if v, ok := lookupEnv("PMI_RANK"); !ok || v != "1" {
		t.Fatalf("PMI_RANK reads %q, %v: only the connection variables are left to the program", v, ok)
	}
	LeavePMI(false)
	if _, _, ok := foreignLauncher(lookupEnv); !ok {
		t.Fatal("LeavePMI(false) does not give the launcher back")
	}
}
