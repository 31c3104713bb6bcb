package main

import (
	"encoding/xml"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/goportals/goportals/tests"
)

type junitSuites struct {
	XMLName xml.Name     `xml:"testsuites"`
	Suites  []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Skipped  int         `xml:"skipped,attr"`
	Time     string      `xml:"time,attr"`
	Cases    []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *junitMessage `xml:"failure,omitempty"`
	Skipped   *junitMessage `xml:"skipped,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitMessage struct {
	Message string `xml:"message,attr"`
}

func seconds(d time.Duration) string { return fmt.Sprintf("%.3f", d.Seconds()) }

// writeJUnit writes the results as one JUnit test suite.
func writeJUnit(path string, results []tests.Result, total time.Duration) error {
	s := junitSuite{Name: "ptltest", Tests: len(results), Time: seconds(total)}
	for _, r := range results {
		c := junitCase{Name: r.Name, Classname: filepath.Dir(r.Name), Time: seconds(r.Duration)}
		for _, w := range r.Warnings {
			c.SystemOut += "WARN " + w.String() + "\n"
		}
		switch r.Status {
		case tests.Fail:
			s.Failures++
			c.Failure = &junitMessage{Message: r.Reason}
		case tests.Skip:
			s.Skipped++
			c.Skipped = &junitMessage{Message: r.Reason}
		}
		s.Cases = append(s.Cases, c)
	}
	data, err := xml.MarshalIndent(junitSuites{Suites: []junitSuite{s}}, "", "  ")
	if err != nil {
		return err
	}
	data = append([]byte(xml.Header), append(data, '\n')...)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		return fmt.Errorf("writing the JUnit report: %w", err)
	}
	return nil
}
