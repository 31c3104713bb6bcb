package tests

import (
	"errors"
	"fmt"
	"time"
)

// Status is the outcome of one test.
type Status int

// The outcomes.
const (
	Pass Status = iota
	Fail
	Skip
)

// String returns PASS, FAIL or SKIP.
func (s Status) String() string {
	switch s {
	case Pass:
		return "PASS"
	case Fail:
		return "FAIL"
	case Skip:
		return "SKIP"
	}
	return fmt.Sprintf("Status(%d)", int(s))
}

// Result is the outcome of one test script.
type Result struct {
	Name     string        // the script's path as given (or found under a folder)
	Status   Status        // PASS, FAIL or SKIP
	Reason   string        // why it failed or was skipped (file:line: ...)
	Ranks    int           // the number of processes it ran on
	Duration time.Duration // wall time, including process start
	Warnings []Warning     // the script's unknown symbols (see Script.UnknownSymbols)
}

// skipError says the script uses a construct with no Go counterpart.
type skipError struct {
	line   int
	reason string
}

func (e *skipError) Error() string {
	if e.line > 0 {
		return fmt.Sprintf("line %d: %s", e.line, e.reason)
	}
	return e.reason
}

func errSkipf(format string, args ...any) error {
	return &skipError{reason: fmt.Sprintf(format, args...)}
}

// failError is a check or return code that did not match, at a line of the script.
type failError struct {
	line int
	msg  string
	// peer marks a failure caused by another rank leaving the job (a barrier or
	// exchange that can no longer complete): the other rank's failure is the cause.
	peer bool
}

func (e *failError) Error() string { return fmt.Sprintf("line %d: %s", e.line, e.msg) }

// atLine attaches a line to an error that has none (skips keep their reason and get
// the line appended).
func atLine(n *Node, err error) error {
	if err == nil {
		return nil
	}
	var fe *failError
	if errors.As(err, &fe) {
		return err
	}
	var se *skipError
	if errors.As(err, &se) {
		if se.line == 0 && n != nil {
			return &skipError{line: n.Line, reason: se.reason}
		}
		return se
	}
	line := 0
	if n != nil {
		line = n.Line
	}
	return &failError{line: line, msg: err.Error()}
}

func failf(n *Node, format string, args ...any) error {
	return &failError{line: n.Line, msg: fmt.Sprintf("<%s>: ", n.Name) + fmt.Sprintf(format, args...)}
}
