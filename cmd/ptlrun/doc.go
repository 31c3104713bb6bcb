// Command ptlrun starts N local ranks of a program, like mpirun, and gives them the
// goportals bootstrap (rank, size, key-value exchange, barrier):
//
//	ptlrun -np N [-timeout D] [-grace D] [-prefix] [-unix] prog [args...]
//
// Every rank inherits ptlrun's environment plus PTL_RANK, PTL_SIZE,
// PTL_BOOTSTRAP_ADDR and PTL_JOB_KEY (see internal/bootstrap). PTL_JOB_KEY, drawn at
// random per job and passed through the agents with -hosts too, is also what the
// ranks present and check when they connect to each other between nodes: a process
// of another job is refused.
//
//	ptlrun -agent ADDR -agent-key-file F
//
// runs this node's agent for ptlrun -hosts (no ssh): launcher and agent prove the
// key of F to each other without sending it, and SIGINT or SIGTERM stops the agent
// and the ranks it started. With -prefix each
// output line is written as "[rank] line"; output is passed on whole lines at a time
// so lines of different ranks never mix. Ranks get no standard input.
//
// When a rank fails (non-zero exit or a signal), calls Abort, or the -timeout passes,
// ptlrun tears the job down: SIGTERM to every rank's process group, then SIGKILL after
// the -grace period. SIGINT and SIGTERM sent to ptlrun are forwarded to the ranks.
//
// The exit status is 0 when every rank exited 0; otherwise the first failing rank's
// exit code (128+signal when a signal killed it), the code given to Abort, 124 on
// timeout, 127 when the program is not found, 126 when it cannot be run, and 2 for a
// usage error. A one-line summary of the failure goes to stderr.
package main
